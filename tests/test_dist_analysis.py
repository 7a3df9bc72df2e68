"""Unit tests of gpulint/analysis/distributed.py (DistFacts) and of the GL301 codemod's refusals."""

from __future__ import annotations

import textwrap

import libcst as cst
import pytest

from fixture_support import check, fix
from gpulint.analysis.distributed import DistFacts
from gpulint.model import ScriptModel


def facts_of(src: str) -> tuple[ScriptModel, DistFacts]:
    model = ScriptModel(cst.parse_module(textwrap.dedent(src)))
    return model, model.facts(DistFacts)


def code(model: ScriptModel, node) -> str:
    return model.module.code_for_node(node)


def names(model: ScriptModel, name: str) -> list[cst.Name]:
    return [n for n in model.parents if isinstance(n, cst.Name) and n.value == name]


# wrappers --------------------------------------------------------------------------------------


def test_wrappers_resolve_through_aliases():
    m, f = facts_of(
        """
        import torch
        import torch.nn.parallel as par
        from torch.nn import DataParallel as DP
        from torch import nn
        net = nn.Linear(2, 2)
        a = DP(net)
        b = par.DistributedDataParallel(net).to("cpu")
        c = torch.nn.parallel.DistributedDataParallelCPU(module=net)
        opt = torch.optim.SGD(net.parameters(), lr=0.1)
        d = DP(opt)
        e = nn.DataParallel(unknown_thing)
        """
    )
    kinds = [(w.kind, w.target.value if w.target else None) for w in f.wraps]
    assert kinds == [("dp", "a"), ("ddp", "b"), ("ddp-cpu", "c"), ("dp", "d"), ("dp", "e")]
    b = f.wraps[1]
    assert code(m, b.value) == 'par.DistributedDataParallel(net).to("cpu")'
    assert code(m, f.wraps[2].inner) == "net"
    # wrappers of modules: known ones, and values the file does not show (what DataParallel/DDP
    # wraps is a module by the API's contract); not a value known to be something else (the optimizer)
    assert [w.target.value for w in f.wraps_of_module()] == ["a", "b", "c", "e"]
    assert [w.target.value for w in f.wraps_of_module("dp")] == ["a", "e"]


def test_wrapper_reaching_follows_order_and_conditions():
    m, f = facts_of(
        """
        import torch
        from torch import nn

        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.head = nn.Linear(2, 2)

        model = Net().to("cpu")
        before = model.head
        if torch.cuda.device_count() > 1:
            model = nn.DataParallel(model)
        after = model.head
        wrapped = nn.DataParallel(Net())
        plain = wrapped.head

        def report():
            return model.head
        """
    )
    uses = [n for n in names(m, "model") if isinstance(m.parent(n), cst.Attribute)]
    before, after, in_function = uses
    assert f.wrapper_reaching(before) is None
    w, definitely = f.wrapper_reaching(after)
    assert w.kind == "dp" and definitely is False
    w2, definitely2 = f.wrapper_reaching(in_function)
    assert w2 is w and definitely2 is False
    wrapped_use = [n for n in names(m, "wrapped") if isinstance(m.parent(n), cst.Attribute)][0]
    w3, definitely3 = f.wrapper_reaching(wrapped_use)
    assert definitely3 is True
    assert f.wrapped_class(w) == "Net" and f.wrapped_class(w3) == "Net"


# process group ---------------------------------------------------------------------------------


def test_process_group_calls():
    m, f = facts_of(
        """
        import torch
        import torch.distributed as dist
        from torch.distributed import init_process_group as init
        init(backend="nccl")
        torch.cuda.set_device(0)
        with torch.cuda.device(1):
            pass
        dist.destroy_process_group()
        """
    )
    assert len(f.init_calls) == 1 and len(f.set_device_calls) == 2 and len(f.destroy_calls) == 1


# samplers, loaders, loops -------------------------------------------------------------------------


def test_samplers_and_which_loader_uses_them():
    m, f = facts_of(
        """
        import torch.utils.data as tud
        from torch.utils.data import DataLoader, RandomSampler
        from torch.utils.data.distributed import DistributedSampler
        ds = tud.TensorDataset()
        s1 = DistributedSampler(ds)
        s2 = DistributedSampler(ds, shuffle=False)
        s3 = DistributedSampler(ds, shuffle=flag)
        r = RandomSampler(ds)
        train = DataLoader(ds, batch_size=4, sampler=s1)
        val = DataLoader(ds, sampler=s2)
        inline = DataLoader(ds, sampler=tud.distributed.DistributedSampler(ds))
        custom = DataLoader(ds, sampler=r)
        plain = DataLoader(ds, shuffle=True)
        """
    )
    assert [(s.distributed, s.shuffle) for s in f.samplers] == [
        (True, True), (True, False), (True, None), (False, None), (True, True)
    ]
    by_name = {lo.target.value: lo for lo in f.loaders}
    assert by_name["train"].sampler_info is f.samplers[0]
    assert by_name["val"].sampler_info is f.samplers[1]
    assert by_name["inline"].sampler_info is f.samplers[4]
    assert by_name["custom"].sampler_info is f.samplers[3]
    assert by_name["plain"].sampler_info is None and code(m, by_name["plain"].shuffle.value) == "True"
    assert f.loaders_of_sampler(f.samplers[0]) == [by_name["train"]]


def test_loader_loops_and_epoch_loops_direct_and_through_a_function():
    m, f = facts_of(
        """
        from torch.utils.data import DataLoader

        def train_one_epoch(model, data, opt):
            for step, (x, y) in enumerate(data):
                model(x).sum().backward()

        def main():
            loader = DataLoader(ds)
            val_loader = DataLoader(ds)
            for epoch in range(3):
                train_one_epoch(model, loader, opt)
                for x, y in val_loader:
                    pass
            for x in val_loader:
                pass
        """
    )
    train, val = f.loaders
    (ll,) = f.loader_loops(train)
    assert ll.via is not None and code(m, ll.via.func) == "train_one_epoch"
    (epoch_loop,) = f.epoch_loops(train)
    assert code(m, epoch_loop.target) == "epoch"
    assert f.is_training_loader(train) and not f.is_training_loader(val)
    assert len(f.loader_loops(val)) == 2
    assert f.epoch_loops(val) == [epoch_loop]  # the single pass after the loop has no epoch loop


# local rank -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "expr",
    [
        'int(os.environ["LOCAL_RANK"])',
        "int(os.environ.get('LOCAL_RANK', 0))",
        'int(os.getenv("LOCAL_RANK", "0"))',
        "args.local_rank",
    ],
)
def test_local_rank_expressions(expr):
    m, f = facts_of(
        f"""
        import os
        lr = {expr}
        rank = int(os.environ["RANK"])
        other = lr
        """
    )
    value = m.module.body[1].body[0].value
    assert f.is_local_rank_expr(value)
    assert "lr" in f.local_rank_names()
    assert "rank" not in f.local_rank_names()
    assert "other" not in f.local_rank_names()  # a copy: not followed


def test_local_rank_of_spawn_target_and_where_it_is_usable():
    m, f = facts_of(
        """
        import os
        import torch.multiprocessing as mp

        def worker(gpu, world_size):
            setup()
            use(gpu)

        def helper(gpu):
            use(gpu)

        def main():
            local_rank = int(os.environ["LOCAL_RANK"])
            use(local_rank)

        mp.spawn(worker, args=(2,), nprocs=2)
        """
    )
    assert [fn.name.value for fn in f.spawn_targets] == ["worker"]
    uses = [c for c in m.calls if code(m, c.func) == "use"]
    assert f.local_rank_at(uses[0]) == "gpu"
    assert f.local_rank_at(uses[1]) is None  # `helper` is not a spawn target
    assert f.local_rank_at(uses[2]) == "local_rank"


# GL301: what the codemod refuses, and says ---------------------------------------------------------

SCRIPT = """
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
loader = DataLoader(TensorDataset(torch.randn(8, 2), torch.randn(8, 1)), batch_size=4, shuffle=True)
model = nn.Linear(2, 1).to(device)
model = nn.DataParallel(model)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(2):
    for x, y in loader:
        opt.zero_grad()
        nn.functional.mse_loss(model(x.to(device)), y.to(device)).backward()
        opt.step()
    print(epoch)
"""


def gl301(src: str):
    diags = [d for d in check(src, {"GL301"}) if d.code == "GL301"]
    assert diags, "GL301 did not fire"
    assert len(diags) == 1 or all("more than one model" in d.message for d in diags), diags
    return diags[0]


def test_gl301_converts_the_base_script_once():
    d = gl301(SCRIPT)
    assert d.fix is not None and d.fix.applicability == "unsafe"
    out = fix(SCRIPT, {"GL301"}, unsafe=True).text
    assert "DDP(model, device_ids=[local_rank] if torch.cuda.is_available() else None)" in out
    assert "train_sampler.set_epoch(epoch)" in out and "if rank == 0:\n        print(epoch)" in out
    assert out.rstrip().endswith("dist.destroy_process_group()")
    assert fix(out, {"GL301"}, unsafe=True).text == out
    assert not [x for x in check(out, {"GL301"}) if x.code == "GL301"]
    # without --unsafe-fixes nothing changes
    assert fix(SCRIPT, {"GL301"}, unsafe=False).text == SCRIPT


@pytest.mark.parametrize(
    "change,reason",
    [
        (("model = nn.DataParallel(model)", "model = nn.DataParallel(model)\nema = nn.DataParallel(nn.Linear(2, 1))"),
         "more than one model"),
        (("shuffle=True)", "sampler=torch.utils.data.RandomSampler(range(8)))"), "its own sampler"),
        (("opt.step()", "opt.step()\n        model.module(x)"), "`model.module` directly"),
        (('device = torch.device("cuda" if torch.cuda.is_available() else "cpu")', "device = torch.device(args.device)"),
         "per-rank"),
        (("    print(epoch)", "    print(model(x).sum())"), "must keep running on every rank"),
        (("model = nn.DataParallel(model)", "model = nn.DataParallel(model)\nmodel.to(device)"), "moved or cast after"),
        (("for epoch in range(2):", "rank = 0\nfor epoch in range(2):"), "already uses the name `rank`"),
        (("model = nn.DataParallel(model)", "model = nn.DataParallel(model, dim=1)"), "`dim=`"),
    ],
)
def test_gl301_refuses_and_says_why(change, reason):
    src = SCRIPT.replace(*change)
    assert src != SCRIPT
    d = gl301(src)
    assert d.fix is None
    assert "no automatic fix" in d.message and reason in d.message, d.message


def test_gl301_refuses_early_return_in_main():
    src = "def main():\n" + textwrap.indent(SCRIPT.split("\n", 4)[4], "    ") + "    if epoch:\n        return\n"
    src = "\n".join(SCRIPT.split("\n")[:5]) + "\n\n" + src + "\n\nmain()\n"
    d = gl301(src)
    assert d.fix is None and "returns early" in d.message, d.message


def test_gl301_silent_in_ddp_scripts_frameworks_and_library_code():
    ddp = "import torch.distributed as dist\ndist.init_process_group('gloo')\n" + SCRIPT
    assert not [d for d in check(ddp, {"GL301"}) if d.code == "GL301"]
    lightning = "import lightning as L\n" + SCRIPT
    assert not [d for d in check(lightning, {"GL301"}) if d.code == "GL301"]
    library = "from torch import nn\n\ndef build():\n    return nn.DataParallel(nn.Linear(2, 2))\n"
    assert not [d for d in check(library, {"GL301"}) if d.code == "GL301"]
    called = library + "\nmodel = build()\nmodel(x).sum().backward()\n"
    assert [d for d in check(called, {"GL301"}) if d.code == "GL301"]
    # called, but the script never trains (an evaluation or demo script): no gradients to synchronise
    evaluation = library + "\nmodel = build()\nprint(model(x))\n"
    assert not [d for d in check(evaluation, {"GL301"}) if d.code == "GL301"]


# messages true where they fire (issue 16) ------------------------------------------------------


def test_gl301_tutorial_order_message_names_the_late_move():
    from pathlib import Path

    path = Path(__file__).parent / "fixtures" / "GL301" / "wrap_then_move_no_fix.py"
    (d,) = [d for d in check(path.read_text(), {"GL301"}) if d.code == "GL301"]
    assert d.fix is None
    assert "moved to `device` after it is wrapped (line 15)" in d.message
    assert "not moved with a device variable" not in d.message


def test_gl113_silent_outside_modules_under_dataparallel_only():
    src = textwrap.dedent(
        """\
        import torch, torch.nn as nn
        model = nn.DataParallel(nn.Linear(2, 2)).to("cuda:0")
        x = torch.zeros(4, 2, device="cuda:0")
        """
    )
    assert [d for d in check(src, {"GL113"})] == []
    ddp = src.replace("nn.DataParallel", "nn.parallel.DistributedDataParallel")
    assert [d.line for d in check(ddp, {"GL113"})] == [2, 3]


def test_wrapper_survives_module_to():
    import libcst as cst

    from gpulint.analysis.distributed import DistFacts
    from gpulint.model import ScriptModel

    src = (
        "import torch\nimport torch.nn as nn\n"
        "model = nn.Linear(2, 2)\n"
        "if torch.cuda.device_count() > 1:\n"
        "    model = nn.DataParallel(model)\n"
        "model = model.to('cuda')\n"
        "model.state_dict()\n"
    )
    m = ScriptModel(cst.parse_module(src), src)
    use = [c for c in m.calls if m.module.code_for_node(c.func) == "model.state_dict"][0].func.value
    found = m.facts(DistFacts).wrapper_reaching(use)
    assert found is not None and found[1] is False  # a wrapper on one branch: not definitely


def test_loader_and_sampler_held_in_self_attributes():
    m, f = facts_of(
        """
        import torch
        from torch.utils.data import DataLoader
        from torch.utils.data.distributed import DistributedSampler

        class Data:
            def __init__(self, ds):
                self.sampler = DistributedSampler(ds)
                self.loader = DataLoader(ds, sampler=self.sampler)

        class MoreData(Data):
            def epochs(self):
                for epoch in range(3):
                    for x in self.loader:
                        pass

        class Other:
            def __init__(self, ds):
                self.loader = [ds]

        class Trainer:
            def __init__(self, data, other):
                self.data = data
                self.other = other

            def run(self):
                for epoch in range(3):
                    for x in self.data.loader:
                        pass
                for epoch in range(3):
                    for x in self.other.loader:
                        pass

        Trainer(Data(ds), Other(ds)).run()
        MoreData(ds).epochs()
        """
    )
    (lo,) = f.loaders
    assert code(m, lo.attr_target) == "self.loader"
    assert lo.sampler_info is not None and code(m, lo.sampler_info.attr_target) == "self.sampler"
    loops = sorted(code(m, loop.iter) for loop in f.epoch_loops(lo))
    # the subclass's own loop and the trainer's loop over `self.data.loader`; not `self.other.loader`
    assert loops == ["range(3)", "range(3)"]
    inner = sorted(code(m, ll.loop.iter) for ll in f.loader_loops(lo))
    assert inner == ["self.data.loader", "self.loader"]
