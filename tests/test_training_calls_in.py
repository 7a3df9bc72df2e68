"""TrainingFacts.calls_in(node, into_defs=False) finds by bisection in the definitions' ranges
what ScriptModel.calls_in(node, skip=definitions) finds by walking up from every call."""

from pathlib import Path

import libcst as cst
import pytest

from gpulint.analysis.training import _DEFS, TrainingFacts
from gpulint.model import ScriptModel

FIXTURES = sorted((Path(__file__).parent / "fixtures").rglob("*.py"))

NESTED = '''
def outer(a=f(1)):
    g(2)
    @deco(h(3))
    def inner(b=k(4)):
        m(5)
        return lambda x=n(6): o(7)
    class C(Base(p(8))):
        q(9)
        def meth(self):
            r(10)
    s(11)
    [t(12) for _ in u(13)]
    return (lambda: v(14))(w(15))
for i in x(16):
    y(17)
    def z():
        aa(18)
    bb(19)
'''


@pytest.mark.parametrize("path", [None] + FIXTURES[::7], ids=lambda p: "nested" if p is None else p.parent.name + "/" + p.name)
def test_calls_outside_definitions_same_as_walking_up(path):
    text = NESTED if path is None else path.read_text(encoding="utf-8")
    m = ScriptModel(cst.parse_module(text), text)
    facts = TrainingFacts(m)
    checked = 0
    for node in m.nodes:
        if isinstance(node, (cst.Module, cst.FunctionDef, cst.ClassDef, cst.Lambda, cst.For, cst.While, cst.If,
                             cst.IndentedBlock, cst.With, cst.Call, cst.SimpleStatementLine, cst.ListComp)):
            assert list(facts.calls_in(node, into_defs=False)) == m.calls_in(node, _DEFS)
            assert list(facts.calls_in(node)) == m.calls_in(node)
            checked += 1
    assert checked
