"""GL305 (fixtures51): the class a wrapper wraps when the wrapped name was bound by tuple unpacking
and the wrap is made inside a loop (VLCStoryGan#12: `netG, netD_im, netD_st =
self.load_network_stageI()`, then `for batch in loader: if len(gpus) > 1: netG = DataParallel(netG)`),
and a DataLoader `collate_fn` closure reading a parameter of its enclosing function that the
function rebinds to a wrapper after defining the closure (awesome-align#10). Hard negatives: the
unpacked value is not an instance of a file class, the closure reads through `model.module` in an
`if` on the wraps' own tests (the fix merged for awesome-align#10), and a closure test that the
enclosing function rebinds keeps the finding."""

from __future__ import annotations

from fixture_support import check

GEN = '''import torch
import torch.nn as nn


class Gen(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def sample(self, x):
        return self.fc(x)


'''

UNPACKED_IN_LOOP = GEN + '''def train(loader, gpus):
    netG, netD = BUILD
    for x in loader:
        if len(gpus) > 1:
            netG = nn.DataParallel(netG)
        netG.sample(x).sum().backward()


train([torch.randn(2, 4)], [0])
'''

CLOSURE = GEN + '''class Args:
    n_gpu = torch.cuda.device_count()
    local_rank = -1


def train(args, data, model):
    def collate(examples):
        xs = torch.stack(examples)
        READ
        return xs, guide

    loader = torch.utils.data.DataLoader(data, batch_size=2, collate_fn=collate)
    if args.n_gpu > 1:
        model = torch.nn.DataParallel(model)
    if args.local_rank != -1:
        model = torch.nn.parallel.DistributedDataParallel(model)
    REBIND
    for xs, guide in loader:
        model(xs + guide).sum().backward()


train(Args(), [torch.randn(4) for _ in range(4)], Gen())
'''

UNWRAPPED_READ = '''if args.n_gpu > 1 or args.local_rank != -1:
            guide = model.module.sample(xs).detach()
        else:
            guide = model.sample(xs).detach()'''


def _lines(text):
    return [d.line for d in check(text, {"GL305"}) if d.code == "GL305"]


def test_unpacked_generator_wrapped_inside_the_loop():
    assert _lines(UNPACKED_IN_LOOP.replace("BUILD", "Gen(), nn.Linear(4, 1)")) == [19]


def test_unpacked_helper_result_wrapped_inside_the_loop():
    text = UNPACKED_IN_LOOP.replace("BUILD", "build()").replace(
        "def train(", "def build():\n    return Gen(), nn.Linear(4, 1)\n\n\ndef train(")
    assert _lines(text) == [23]


def test_unpacked_library_module_is_not_reported():
    # `nn.Linear` defines no `sample`: nothing of a file class is wrapped
    text = UNPACKED_IN_LOOP.replace("BUILD", "nn.Linear(4, 4), Gen()")
    assert _lines(text) == []


def test_closure_reads_the_parameter_rebound_to_a_wrapper():
    text = CLOSURE.replace("READ", "guide = model.sample(xs).detach()").replace("    REBIND\n", "")
    assert _lines(text) == [22]


def test_closure_reading_through_module_on_the_wrap_tests_is_silent():
    text = CLOSURE.replace("READ", UNWRAPPED_READ).replace("    REBIND\n", "")
    assert _lines(text) == []


def test_closure_test_flag_rebound_in_the_function_keeps_the_finding():
    text = CLOSURE.replace("READ", UNWRAPPED_READ).replace("    REBIND\n", "    args.n_gpu = 0\n")
    assert _lines(text) == [25]
