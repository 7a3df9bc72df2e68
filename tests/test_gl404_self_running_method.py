"""GL404 counts a call of a method of the model's own class that runs the model
(`model.generate(x)` calling `self.forward(x)`) as a call of the model in an evaluation loop
(G52-1, trocr#9: https://github.com/rsommerfeld/trocr/issues/9). Hard negatives: the HF-style
`model.eval()` before generating, Monte-Carlo dropout with a deliberate `model.train()`, a method
that switches the mode itself, a method that does not run the model, a `generate` of a model the
file does not define, and a sampling loop of a GAN generator that `eval()`s its own copy."""

from __future__ import annotations

import textwrap

from fixture_support import check, fix

SRC = """
import torch
import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Sequential(nn.Linear(4, 8), nn.Dropout(0.5), nn.Linear(8, 3))

    def forward(self, x):
        return self.fc(x)

    def generate(self, x):
        GENERATE

    def n_params(self):
        return sum(p.numel() for p in self.parameters())


def predict(model, batches):
    out = []
    BEFORE
    with torch.no_grad():
        for x in batches:
            out.append(CALL)
    return out


model = Net()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(2):
    model.train()
    for x, y in [(torch.randn(8, 4), torch.randint(0, 3, (8,)))]:
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    predict(model, [torch.randn(8, 4)])
"""


def _src(generate="return self.forward(x).argmax(-1)", before="pass", call="model.generate(x)"):
    return textwrap.dedent(SRC.replace("GENERATE", generate).replace("BEFORE", before).replace("CALL", call))


def _lines(src: str) -> list[int]:
    return sorted(d.line for d in check(src, ["GL404"]) if d.code == "GL404")


def test_generate_through_self_forward_in_a_no_grad_loop():
    assert _lines(_src()) == [25]


def test_generate_through_self_call():
    assert _lines(_src(generate="return self(x).argmax(-1)")) == [25]


def test_the_fix_puts_eval_before_and_train_after_the_loop():
    out = fix(_src(), ["GL404"], unsafe=False).text
    assert "    model.eval()\n    with torch.no_grad():" not in out  # (the loop itself is the anchor)
    assert "        model.eval()\n        for x in batches:" in out
    assert "            out.append(model.generate(x))\n        model.train()" in out


def test_eval_before_generating_is_silent():
    assert _lines(_src(before="model.eval()")) == []


def test_deliberate_train_mode_for_mc_dropout_is_silent():
    assert _lines(_src(before="model.train()")) == []


def test_a_method_that_sets_the_mode_itself_is_silent():
    assert _lines(_src(generate="self.eval()\n        return self.forward(x).argmax(-1)")) == []


def test_a_method_that_does_not_run_the_model_is_silent():
    assert _lines(_src(call="model.n_params()")) == []


def test_generate_of_a_model_the_file_does_not_define_is_silent():
    src = """
    import torch
    from transformers import AutoModelForSeq2SeqLM

    model = AutoModelForSeq2SeqLM.from_pretrained("t5-small")
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)


    def predict(batches):
        with torch.no_grad():
            return [model.generate(x) for x in batches]


    for epoch in range(2):
        for x, y in [(torch.ones(2, 4, dtype=torch.long), torch.ones(2, 4, dtype=torch.long))]:
            loss = model(input_ids=x, labels=y).loss
            opt.zero_grad()
            loss.backward()
            opt.step()
        predict([torch.ones(2, 4, dtype=torch.long)])
    """
    assert _lines(textwrap.dedent(src)) == []
