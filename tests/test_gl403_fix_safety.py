"""GL403's fix is safe only when the analysis has seen the model's class (PRECISION26 A2).

lioryariv/idr's evaluation builds its model from a class named in the config
(`get_class(conf.get_string("train.model_class"))(conf=...)`); that class's forward takes surface
normals with `torch.autograd.grad`. GL403 reports the evaluation loop (it cannot see the class),
and its fix wrapped the loop in `torch.no_grad()` as a *safe* fix: the fixed script raises
"element 0 of tensors does not require grad". `no_grad` around a model whose forward the rule has
not read is a guess, so the fix is unsafe there; it stays safe for a class of the file (whose
methods `_model_takes_gradients` reads), a known library's model, and a parameter every resolved
call of its function fills with such a model.
"""

from __future__ import annotations

import textwrap

from gpulint.engine import Options, run_text
from gpulint.registry import Registry

LOOP = """
model.eval()
for _ in range(3):
    x = torch.randn(4, 8)
    preds.append(model(x))
"""


def _fixes(src: str) -> list[str | None]:
    rule = Registry.load().by_code("GL403")()
    diags = run_text("evaluate.py", textwrap.dedent(src), [rule], Options()).diagnostics
    return [d.fix.applicability if d.fix is not None else None for d in diags]


def _script(build: str, head: str = "") -> str:
    return "import torch\nimport torch.nn as nn\n" + head + "\npreds = []\n" + build + "\n" + LOOP


NET = """
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 2)

    def forward(self, x):
        return self.fc(x)
"""


def test_a_model_of_a_class_named_by_a_string_gets_an_unsafe_fix():
    src = _script('model = get_class(conf["model_class"])(conf=conf)',
                  "import json\nfrom utils import get_class\nconf = json.loads('{}')\n")
    assert _fixes(src) == ["unsafe"]


def test_a_model_of_another_file_gets_an_unsafe_fix():
    assert _fixes(_script("model = Renderer(8).to('cpu')", "from models.renderer import Renderer\n")) == ["unsafe"]


def test_a_model_of_a_class_of_the_file_gets_a_safe_fix():
    assert _fixes(_script("model = Net().to('cpu')", NET)) == ["safe"]


def test_a_library_model_moved_under_a_branch_gets_a_safe_fix():
    src = _script("model = nn.Sequential(nn.Linear(8, 2))\nif torch.cuda.is_available():\n    model = model.cuda()")
    assert _fixes(src) == ["safe"]


def test_a_parameter_filled_with_a_file_class_gets_a_safe_fix():
    src = NET + textwrap.dedent("""
    def evaluate(model, n):
        model.eval()
        out = []
        for _ in range(n):
            out.append(model(torch.randn(4, 8)))
        return out


    evaluate(Net(), 3)
    """)
    assert _fixes("import torch\nimport torch.nn as nn\n" + src) == ["safe"]


def test_a_parameter_filled_with_an_imported_model_gets_an_unsafe_fix():
    src = textwrap.dedent("""
    import torch
    from models import Net


    def evaluate(model, n):
        model.eval()
        out = []
        for _ in range(n):
            out.append(model(torch.randn(4, 8)))
        return out


    evaluate(Net(), 3)
    """)
    assert _fixes(src) == ["unsafe"]
