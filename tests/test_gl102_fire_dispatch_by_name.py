"""GL102: `device="cuda"` as the default of a module-level function's parameter when the file hands
`main(task, **kwargs)` to `fire.Fire` and `main` calls `globals()[task](**kwargs)` (PRECISION33 R2;
nlpxucan/WizardLM WizardLM/src/weight_diff_wizard.py:26, the weight-diff script of
tatsu-lab/stanford_alpaca): `python weight_diff.py make_diff ... --device cpu` sets it, so the literal
is a flag's default. Without the dispatch, or with a dispatcher that does not pass its `**kwargs`, the
default stays reported."""

from __future__ import annotations

from fixture_support import check

SRC = '''import fire
import torch
import torch.nn as nn


@torch.inference_mode()
def make_diff(path_raw, path_diff, device="cuda"):
    model = nn.Linear(4, 4).to(torch.device(device))
    torch.save(model.state_dict(), path_diff)


def main(task, **kwargs):
    DISPATCH


if __name__ == "__main__":
    CALL
'''


def _lines(text):
    return [f.line for f in check(text, {"GL102"})]


def test_function_reached_through_globals_dispatch_is_a_flag():
    text = SRC.replace("DISPATCH", "globals()[task](**kwargs)").replace("CALL", "fire.Fire(main)")
    assert _lines(text) == []


def test_dispatcher_without_kwargs_stays_reported():
    text = SRC.replace("DISPATCH", "globals()[task]()").replace("CALL", "fire.Fire(main)")
    assert _lines(text) == [7]


def test_dispatcher_not_handed_to_fire_stays_reported():
    text = SRC.replace("DISPATCH", "globals()[task](**kwargs)").replace("CALL", 'main("make_diff", path_raw="a", path_diff="b")')
    assert _lines(text) == [7]
