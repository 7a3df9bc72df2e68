"""GL404 follows an `eval()` through the calls the flow engine resolves to the module object the
training loop trains: a callback object's hook (E47-1, torchtuples#9:
https://github.com/havakv/torchtuples/pull/9) and a module read back from a dict (E47-2,
pytorch-pfn-extras#688: https://github.com/pfnet/pytorch-pfn-extras/issues/688). Hard negatives:
the same hooks restoring train mode, an EMA copy or a second model built by the same factory, a
GAN sampler that switches its generator back, Lightning-style hooks putting the model in train mode
each epoch, a BatchNorm freeze over `self.modules()`, a frozen teacher, an RL target network, a
helper that freezes the model right before the loop that trains it, and a model handed to code the
file does not define."""

from __future__ import annotations

import textwrap

from fixture_support import check


def _lines(src: str) -> list[int]:
    return sorted(d.line for d in check(textwrap.dedent(src), ["GL404"]) if d.code == "GL404")


CALLBACK = """
import torch
import torch.nn as nn


class Monitor:
    def give_model(self, model):
        self.model = model

    def on_epoch_end(self):
        self.model.predict(torch.randn(8, 4))


class Model:
    def __init__(self, net):
        self.net = net
        self.optimizer = torch.optim.SGD(net.parameters(), lr=0.1)

    def fit(self, batches, epochs, callbacks):
        for c in callbacks:
            c.give_model(self)
        for _ in range(epochs):
            for x in batches:
                self.optimizer.zero_grad()
                self.net(x).pow(2).mean().backward()
                self.optimizer.step()
            for c in callbacks:
                c.on_epoch_end()

    def predict(self, x):
        self.net.eval()
        with torch.no_grad():
            out = self.net(x)
        RESTORE
        return out


m = Model(nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.2)))
m.fit([torch.randn(8, 4)], 3, [Monitor()])
"""


def test_callback_hook_leaves_the_trained_net_in_eval():
    src = CALLBACK.replace("RESTORE", "self.net.eval()  # the slip: meant train()")
    assert _lines(src) == [34]


def test_callback_hook_fix_puts_train_before_the_batches():
    from fixture_support import fix

    src = textwrap.dedent(CALLBACK.replace("RESTORE", "self.net.eval()"))
    out = fix(src, ["GL404"], unsafe=False).text
    assert "            self.net.train()\n            for x in batches:" in out


def test_callback_hook_that_restores_train_mode_is_silent():
    assert _lines(CALLBACK.replace("RESTORE", "self.net.train()")) == []


DICT = """
import torch
import torch.nn as nn


class Logic:
    def train_step(self, models, optimizer, x):
        optimizer.zero_grad()
        models["main"](x).pow(2).mean().backward()
        optimizer.step()

    def validation_begin(self, models):
        models["main"].eval()

    def validation_end(self, models):
        END


model = nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.2))
models = {"main": model}
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
logic = Logic()
for epoch in range(3):
    model.train()
    for it in range(8):
        logic.train_step(models, optimizer, torch.randn(8, 4))
        if it == 5:
            logic.validation_begin(models)
            logic.validation_end(models)
"""


def test_module_read_from_a_dict_left_in_eval():
    assert _lines(DICT.replace("END", "pass")) == [13]


def test_module_read_from_a_dict_restored_is_silent():
    assert _lines(DICT.replace("END", 'models["main"].train()')) == []


def test_ema_built_by_the_same_factory_is_not_the_trained_model():
    src = """
    import torch
    import torch.nn as nn


    def build():
        return nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.2))


    class EmaCallback:
        def __init__(self, ema):
            self.ema = ema

        def on_epoch_end(self):
            self.ema.eval()
            with torch.no_grad():
                self.ema(torch.randn(8, 4))


    model = build()
    ema = build()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    cb = EmaCallback(ema)
    for epoch in range(3):
        for x in [torch.randn(8, 4)]:
            opt.zero_grad()
            model(x).pow(2).mean().backward()
            opt.step()
        cb.on_epoch_end()
    """
    assert _lines(src) == []


def test_gan_sampler_that_switches_the_generator_back_is_silent():
    src = """
    import torch
    import torch.nn as nn


    class Sampler:
        def __init__(self, g):
            self.g = g

        def sample(self):
            self.g.eval()
            with torch.no_grad():
                out = self.g(torch.randn(4, 8))
            self.g.train()
            return out


    class Critic:
        def __init__(self, d):
            self.d = d

        def freeze(self):
            self.d.eval()


    G = nn.Sequential(nn.Linear(8, 8), nn.BatchNorm1d(8), nn.Linear(8, 4))
    D = nn.Sequential(nn.Linear(4, 8), nn.Dropout(0.3), nn.Linear(8, 1))
    opt_g = torch.optim.Adam(G.parameters())
    opt_d = torch.optim.Adam(D.parameters())
    sampler = Sampler(G)
    for epoch in range(2):
        for real in [torch.randn(4, 4)]:
            opt_d.zero_grad()
            (D(G(torch.randn(4, 8)).detach()).mean() - D(real).mean()).backward()
            opt_d.step()
            opt_g.zero_grad()
            (-D(G(torch.randn(4, 8))).mean()).backward()
            opt_g.step()
        sampler.sample()
    """
    assert _lines(src) == []


def test_lightning_style_hooks_with_train_each_epoch_are_silent():
    src = """
    import torch
    import torch.nn as nn


    class Module:
        def __init__(self):
            self.net = nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.1), nn.Linear(4, 1))

        def training_step(self, x):
            return self.net(x).pow(2).mean()

        def on_validation_start(self):
            self.net.eval()

        def on_train_epoch_start(self):
            self.net.train()


    class Loop:
        def __init__(self, module):
            self.module = module
            self.opt = torch.optim.SGD(module.net.parameters(), lr=0.1)

        def fit(self, batches, epochs):
            for epoch in range(epochs):
                self.module.on_train_epoch_start()
                for x in batches:
                    self.opt.zero_grad()
                    self.module.training_step(x).backward()
                    self.opt.step()
                self.module.on_validation_start()


    Loop(Module()).fit([torch.randn(8, 4)], 2)
    """
    assert _lines(src) == []


def test_batchnorm_freeze_over_submodules_is_silent():
    src = """
    import torch
    import torch.nn as nn


    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.body = nn.Sequential(nn.Linear(4, 4), nn.BatchNorm1d(4), nn.Linear(4, 1))

        def forward(self, x):
            return self.body(x)

        def freeze_bn(self):
            for mod in self.modules():
                if isinstance(mod, nn.BatchNorm1d):
                    mod.eval()


    class Runner:
        def __init__(self, net):
            self.net = net

        def prepare(self):
            self.net.freeze_bn()


    net = Net()
    runner = Runner(net)
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    for epoch in range(2):
        net.train()
        runner.prepare()
        for x in [torch.randn(8, 4)]:
            opt.zero_grad()
            net(x).mean().backward()
            opt.step()
    """
    assert _lines(src) == []


def test_frozen_teacher_and_rl_target_network_are_silent():
    src = """
    import torch
    import torch.nn as nn


    class Agent:
        def __init__(self, policy, target, teacher):
            self.policy = policy
            self.target = target
            self.teacher = teacher

        def sync(self):
            self.target.load_state_dict(self.policy.state_dict())
            self.target.eval()
            self.teacher.eval()


    policy = nn.Sequential(nn.Linear(4, 8), nn.Dropout(0.1), nn.Linear(8, 2))
    target = nn.Sequential(nn.Linear(4, 8), nn.Dropout(0.1), nn.Linear(8, 2))
    teacher = nn.Sequential(nn.Linear(4, 8), nn.Dropout(0.1), nn.Linear(8, 2))
    agent = Agent(policy, target, teacher)
    opt = torch.optim.Adam(policy.parameters())
    for episode in range(3):
        for s in [torch.randn(8, 4)]:
            q = policy(s)
            with torch.no_grad():
                q_next = target(s).max(1).values
            loss = (q.max(1).values - q_next).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        agent.sync()
    """
    assert _lines(src) == []


def test_helper_that_freezes_right_before_the_training_loop_is_silent():
    src = """
    import torch
    import torch.nn as nn


    class Freezer:
        def __init__(self, model):
            self.model = model

        def freeze(self):
            self.model.eval()


    model = nn.Sequential(nn.Linear(4, 4), nn.BatchNorm1d(4), nn.Linear(4, 1))
    freezer = Freezer(model)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(2):
        freezer.freeze()
        for x in [torch.randn(8, 4)]:
            opt.zero_grad()
            model(x).mean().backward()
            opt.step()
    """
    assert _lines(src) == []


def test_model_handed_to_unknown_code_is_silent():
    src = DICT.replace("END", "pass").replace(
        "            logic.validation_end(models)", "            logic.validation_end(models)\n            hooks.run(models)"
    ).replace("import torch.nn as nn", "import torch.nn as nn\nimport hooks")
    assert _lines(src) == []
