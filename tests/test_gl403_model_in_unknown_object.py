"""GL403 is silent on an evaluation loop that runs a method of an object that code the file does
not define was given the model: an adversarial attack (DSE-MSU/DeepRobust
deeprobust/image/preprocessing/prepare_advdata.py: `adversary = PGD(model)` before the loop,
`x_adv = adversary.generate(x, y)` in it; evaluation_attack.py: `run_attack(attack_method, ...)`
with `attack_method = PGD(model, args.device)`, the loop calling `attackmethod.generate(data,
target)`), or a helper method of the file that builds one (defense/pgdtraining.py, fast.py,
fgsmtraining.py, AWP.py: `test()` after `model.eval()` calls `self.adv_data(data, target)`, which
runs `PGD(self.model).generate(...)`). Such an object may take gradients through the model
(attacks, Grad-CAM, attributions): `no_grad` around the loop would make its `backward()` fail.
An object built without the model, or a class of the file (whose methods the rule reads), does not
silence the rule."""

from __future__ import annotations

from fixture_support import check

HEAD = '''import torch
import torch.nn as nn
from attacks import PGD, Normalizer

model = nn.Linear(4, 2)
loader = [(torch.randn(3, 4), torch.tensor([0, 1, 0]))]
'''


def _lines(text):
    return [f.line for f in check(text, {"GL403"})]


def test_attack_built_with_the_model_before_the_loop():
    text = HEAD + '''adversary = PGD(model)
model.eval()
for x, y in loader:
    clean = model(x)
    x_adv = adversary.generate(x, y)
    out = model(x_adv)
'''
    assert _lines(text) == []


def test_attack_passed_as_a_parameter_built_with_the_model_at_the_call_site():
    text = HEAD + '''
def run_attack(attackmethod, loader):
    for x, y in loader:
        adv = attackmethod.generate(x, y)
        out = model(adv)


model.eval()
attack_method = PGD(model, "cpu")
run_attack(attack_method, loader)
'''
    assert _lines(text) == []


def test_helper_method_that_builds_the_attack():
    text = HEAD + '''

class Defense:
    def __init__(self, model):
        self.model = model

    def adv_data(self, data, target):
        adversary = PGD(self.model)
        data_adv = adversary.generate(data, target)
        return data_adv, self.model(data_adv)

    def test(self, model, loader):
        model.eval()
        for data, target in loader:
            output = model(data)
            data_adv, output_adv = self.adv_data(data, target)


Defense(model).test(model, loader)
'''
    assert _lines(text) == []


def test_object_built_without_the_model_is_reported():
    text = HEAD + '''norm = Normalizer(0.5)
model.eval()
for x, y in loader:
    out = model(norm.apply(x))
'''
    assert _lines(text) == [10]


def test_class_of_the_file_given_the_model_is_reported():
    text = HEAD + '''

class Scorer:
    def __init__(self, model):
        self.model = model

    def score(self, x):
        return x.sum()


scorer = Scorer(model)
model.eval()
for x, y in loader:
    out = model(x)
    s = scorer.score(out)
'''
    assert _lines(text) == [20]
