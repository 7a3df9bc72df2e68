"""GL302's fix must be right on every path: a sampler bound on one branch only gets the branch's
test as a guard when that test still holds at the epoch loop, the loader's sampler an isinstance
guard when the loader exists on every path, else no fix (cszn/KAIR#106: an unguarded
`train_sampler.set_epoch(epoch)` raised UnboundLocalError without torchrun)."""

from __future__ import annotations

from fixture_support import FIXTURES, check, fix, run_script, train_result, trained

HEAD = '''import torch
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


def main(args, ds):
'''

LOOP = '''    for epoch in range(3):
        for x, y in loader:
            pass
'''


def _fixed(body: str) -> str:
    text = HEAD + body + LOOP
    assert [d.code for d in check(text, {"GL302"})] == ["GL302"]
    out = fix(text, {"GL302"}, unsafe=False)
    assert not [d for d in out.diagnostics if d.code == "GL000"]
    return out.text


def _inserted(body: str) -> str:
    text = HEAD + body + LOOP
    out = _fixed(body)
    assert out.startswith(text.split("    for epoch")[0])
    return out[len(text.split("    for epoch")[0]):][len("    for epoch in range(3):\n"):].split("        for x, y")[0]


def test_branch_only_sampler_is_guarded_by_the_branch_test():
    body = '''    if args["dist"]:
        sampler = DistributedSampler(ds)
        loader = DataLoader(ds, sampler=sampler)
    else:
        loader = DataLoader(ds, shuffle=True)
'''
    assert _inserted(body) == '        if args["dist"]:\n            sampler.set_epoch(epoch)\n'


def test_else_branch_sampler_is_guarded_by_the_negated_test():
    body = '''    if args.single:
        loader = DataLoader(ds, shuffle=True)
    else:
        sampler = DistributedSampler(ds)
        loader = DataLoader(ds, sampler=sampler)
'''
    assert _inserted(body) == '        if not (args.single):\n            sampler.set_epoch(epoch)\n'


def test_test_rebound_after_the_branch_falls_back_to_the_loaders_sampler():
    body = '''    if args.dist:
        sampler = DistributedSampler(ds)
        loader = DataLoader(ds, sampler=sampler)
    else:
        loader = DataLoader(ds, shuffle=True)
    args = None
'''
    assert _inserted(body) == (
        '        if isinstance(loader.sampler, DistributedSampler):\n'
        '            loader.sampler.set_epoch(epoch)\n')


def test_test_with_a_call_falls_back_to_the_loaders_sampler():
    body = '''    if torch.distributed.is_initialized():
        sampler = DistributedSampler(ds)
        loader = DataLoader(ds, sampler=sampler)
    else:
        loader = DataLoader(ds, shuffle=True)
'''
    assert "isinstance(loader.sampler, DistributedSampler)" in _inserted(body)


def test_mutated_test_and_loader_missing_on_a_path_gives_no_fix():
    body = '''    if args["dist"]:
        sampler = DistributedSampler(ds)
        loader = DataLoader(ds, sampler=sampler)
    args["dist"] = False
'''
    text = HEAD + body + LOOP
    assert [d.code for d in check(text, {"GL302"})] == ["GL302"]
    assert fix(text, {"GL302"}, unsafe=False).text == text


def test_elif_branch_gives_no_fix_without_a_loader_on_every_path():
    body = '''    if args.a:
        loader = DataLoader(ds, shuffle=True)
    elif args.b:
        sampler = DistributedSampler(ds)
        loader = DataLoader(ds, sampler=sampler)
'''
    text = HEAD + body + LOOP
    assert fix(text, {"GL302"}, unsafe=False).text == text


def test_sampler_bound_on_every_path_is_not_guarded():
    body = '''    if args.a:
        sampler = DistributedSampler(ds, seed=1)
    else:
        sampler = DistributedSampler(ds, seed=2)
    loader = DataLoader(ds, sampler=sampler)
'''
    assert _inserted(body) == '        sampler.set_epoch(epoch)\n'


def test_kair_fixed_script_trains_in_one_process(tmp_path):
    """The torchrun fixture's fixed script, run without torchrun (opt["dist"] False)."""
    fixed = FIXTURES / "GL302" / "sr_train_opt_dist_sampler_model_wrapper.fixed.py"
    proc = run_script(fixed, tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    result = train_result(proc.stdout)
    assert result is not None and trained(result)
