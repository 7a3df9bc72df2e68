"""GL403: an evaluation step reached through a template method (tests/fixtures_pending/README.md
G45-1, amjltc295/pytorch-golden-template#66): a base class's method loops over the batches and
calls `self._step(x)`; the `Tester` subclass overrides `_step` with a model call and its
`_setup_model()` hook (called before the loop) puts the model in eval mode, while the `Trainer`
subclass's `_step` backpropagates. On the base the loop's `self._step` resolved to the base's
stub only, so the Tester's forward was never seen. Resolved per subclass: the Trainer's hook and
anything under `no_grad`/`inference_mode` stay silent."""

from __future__ import annotations

import textwrap

from fixture_support import check, fix

SRC = """
import torch
import torch.nn as nn


class Worker:
    def __init__(self, model, batches, optimizer=None):
        self.model = model
        self.batches = batches
        self.optimizer = optimizer

    def _setup_model(self):
        raise NotImplementedError

    def _step(self, x):
        raise NotImplementedError

    def run(self):
{run}


class Trainer(Worker):
    def _setup_model(self):
        self.model.train()

    def _step(self, x):
        self.optimizer.zero_grad()
        loss = self.model(x).pow(2).mean()
        loss.backward()
        self.optimizer.step()
        return loss.item()


class Tester(Worker):
{tester}


model = nn.Linear(4, 2)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
batches = [torch.randn(8, 4) for _ in range(3)]
{main}
"""

RUN = """\
self._setup_model()
out = []
for x in self.batches:
    out.append(self._step(x))
return out"""

TESTER = """\
def _setup_model(self):
    self.model.eval()

def _step(self, x):
    return self.model(x).sum()"""

MAIN = "Trainer(model, batches, opt).run()\nprint(Tester(model, batches).run())"


def _text(run: str = RUN, tester: str = TESTER, main: str = MAIN) -> str:
    return textwrap.dedent(SRC).format(run=textwrap.indent(run, " " * 8), tester=textwrap.indent(tester, " " * 4),
                                       main=main)


def _lines(**kw):
    text = _text(**kw)
    return sorted(d.line for d in check(text, ["GL403"]) if d.code == "GL403"), text


def _line_of(text: str, needle: str) -> int:
    return next(i for i, ln in enumerate(text.splitlines(), 1) if needle in ln)


def test_tester_hook_of_a_template_loop_is_reported():
    lines, text = _lines()
    assert lines == [_line_of(text, "return self.model(x).sum()")]


def test_fix_decorates_the_tester_hook():
    out = fix(_text(), ["GL403"], unsafe=False)
    assert "    @torch.no_grad()\n    def _step(self, x):\n        return self.model(x).sum()" in out.text
    assert out.text.count("@torch.no_grad()") == 1  # not the Trainer's hook
    assert [d for d in check(out.text, ["GL403"]) if d.code == "GL403"] == []


def test_eval_set_in_the_base_template_is_reported():
    run = RUN.replace("self._setup_model()", "self.model.eval()")
    tester = "def _step(self, x):\n    return self.model(x).sum()"
    lines, text = _lines(run=run, tester=tester, main="print(Tester(model, batches).run())")
    assert lines == [_line_of(text, "return self.model(x).sum()")]


def test_hook_handing_back_a_number_is_silent():
    # as for a helper of the loop's own class (`_helper_forwards`): a hook that returns
    # `.item()` keeps no graph for the template's loop (an RL agent's `select_action`)
    tester = TESTER.replace("return self.model(x).sum()", "return self.model(x).sum().item()")
    assert _lines(tester=tester)[0] == []


def test_hook_under_no_grad_in_the_subclass_is_silent():
    tester = TESTER.replace("    return self.model(x)", "    with torch.no_grad():\n        return self.model(x)")
    assert _lines(tester=tester)[0] == []


def test_hook_decorated_no_grad_is_silent():
    tester = TESTER.replace("def _step", "@torch.no_grad()\ndef _step")
    assert _lines(tester=tester)[0] == []


def test_hook_called_under_inference_mode_in_the_base_is_silent():
    run = RUN.replace("    out.append(self._step(x))", "    with torch.inference_mode():\n        out.append(self._step(x))")
    assert _lines(run=run)[0] == []


def test_template_called_under_no_grad_is_silent():
    main = "Trainer(model, batches, opt).run()\nwith torch.no_grad():\n    print(Tester(model, batches).run())"
    assert _lines(main=main)[0] == []


def test_subclass_without_eval_setup_is_silent():
    tester = TESTER.replace("self.model.eval()", "pass")
    assert _lines(tester=tester)[0] == []


def test_template_with_gradient_work_is_silent():
    # the base loop steps an optimizer itself: a training template, whatever the hook does
    run = RUN.replace("    out.append(self._step(x))", "    out.append(self._step(x))\n    self.optimizer.step()")
    assert _lines(run=run)[0] == []


def test_hook_also_called_by_a_training_method_is_silent():
    tester = TESTER + "\n\ndef tune(self, x):\n    loss = torch.tensor(self._step(x), requires_grad=True)\n    loss.backward()"
    assert _lines(tester=tester)[0] == []


def test_subclass_with_its_own_template_is_left_to_the_loop_check():
    # Tester overrides `run` too: its own loop is judged as any loop (reported once, there)
    tester = TESTER + "\n\ndef run(self):\n    self._setup_model()\n    out = 0.0\n    for x in self.batches:\n        out += self._step(x)\n    return out"
    lines, text = _lines(tester=tester)
    assert lines == [_line_of(text, "out += self._step(x)")]


def test_model_of_another_file_gets_an_unsafe_fix():
    text = _text().replace("model = nn.Linear(4, 2)", "from project.models import build_model\nmodel = build_model()")
    assert "@torch.no_grad()" not in fix(text, ["GL403"], unsafe=False).text
    assert "    @torch.no_grad()\n    def _step(self, x):" in fix(text, ["GL403"], unsafe=True).text
