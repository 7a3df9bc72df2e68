"""GL404: a call that leaves the model in eval mode before a training forward in the same block
(ServiceNow/LCFCN#20, fixtures27's F27-3): `model.predict(x)`, whose method starts with
`self.eval()`, or a function of the file handed the model that does so, after `model.train()` (or
with a backward below), then `model(x)` before any `model.train()`. Per model: a teacher's `eval()`
(through a helper or its own `predict`) does not count, nor a helper followed by `model.train()`.
"""

from __future__ import annotations

from gpulint.engine import Options, run_text
from fixture_support import fix
from gpulint.registry import Registry

SRC = 'import torch\nimport torch.nn as nn\n\n\nclass Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.bn = nn.BatchNorm1d(4)\n        self.fc = nn.Linear(4, 1)\n\n    def forward(self, x):\n        return self.fc(self.bn(x))\n\n    @torch.no_grad()\n    def predict(self, x):\n        self.eval()\n        return self(x).argmax()\n\n\ndef soft_targets(teacher, x):\n    teacher.eval()\n    with torch.no_grad():\n        return teacher(x)\n\n\nmodel = Net()\nteacher = Net()\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\nfor x in [torch.randn(8, 4) for _ in range(3)]:\n    model.train()\n    t = soft_targets(teacher, x)\n    hint = teacher.predict(x)\n    loss = (model(x) - t).pow(2).mean()\n    opt.zero_grad()\n    loss.backward()\n    opt.step()\nfor x in [torch.randn(8, 4) for _ in range(3)]:\n    model.train()\n    hint = model.predict(x)\n    loss = model(x).pow(2).mean()\n    opt.zero_grad()\n    loss.backward()\n    opt.step()\nfor x in [torch.randn(8, 4) for _ in range(3)]:\n    hint = model.predict(x)\n    model.train()\n    loss = model(x).pow(2).mean()\n    opt.zero_grad()\n    loss.backward()\n    opt.step()\n'


def gl404(src: str) -> list[int]:
    rule = Registry.load().by_code("GL404")()
    return [d.line for d in run_text("train.py", src, [rule], Options()).diagnostics]


def test_a_predict_method_that_leaves_the_model_in_eval_before_its_training_forward():
    assert gl404(SRC) == [39]


def test_the_fix_restores_training_mode_after_the_call():
    out = fix(SRC, {"GL404"}, unsafe=False).text
    fixed = "    model.train()\n    hint = model.predict(x)\n    model.train()\n    loss = model(x).pow(2).mean()\n"
    assert SRC.count(fixed) == 0 and out.count(fixed) == 1
    assert gl404(out) == []


def test_hard_negatives():
    # the teacher's modes (helper and method), and a helper followed by `model.train()`: only the
    # second loop of SRC reports; without it the file is silent
    second = SRC.index("for x in [torch.randn(8, 4) for _ in range(3)]:\n    model.train()\n    hint = model.predict(x)")
    third = SRC.index("for x in", second + 10)
    assert gl404(SRC[:second] + SRC[third:]) == []
    # a forward under no_grad after the helper is not training
    src = SRC.replace("    loss = model(x).pow(2).mean()\n    opt.zero_grad()\n    loss.backward()\n    opt.step()\nfor x in [torch.randn(8, 4) for _ in range(3)]:\n    hint = model.predict(x)",
                      "    with torch.no_grad():\n        loss = model(x).pow(2).mean()\nfor x in [torch.randn(8, 4) for _ in range(3)]:\n    hint = model.predict(x)")
    assert gl404(src) == []
