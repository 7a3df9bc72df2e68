"""Sixth precision pass (benchmarks/PRECISION6.md): the true shapes next to each hard negative
still report. Each test checks a positive and the negative it must be told apart from."""

from __future__ import annotations

from fixture_support import check


def codes(text, code):
    return [(d.code, d.line) for d in check(text, {code}) if d.code == code]


GL106_PASSED_IN = '''import torch
import torch.nn as nn


class Head(nn.Module):
    def __init__(self, support: torch.Tensor):
        super().__init__()
        self.support = support
        self.fc = nn.Linear(4, 5)

    def forward(self, x):
        return self.fc(x) * self.support


device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
head = Head(SUPPORT).to(device)
out = head(torch.randn(2, 4, device=device))
'''


def test_gl106_tensor_passed_in_from_the_host_still_reports():
    assert codes(GL106_PASSED_IN.replace("SUPPORT", "torch.linspace(0, 1, 5)"), "GL106") == [("GL106", 8)]


def test_gl106_tensor_passed_in_on_the_device_or_from_elsewhere_is_silent():
    assert codes(GL106_PASSED_IN.replace("SUPPORT", "torch.linspace(0, 1, 5).to(device)"), "GL106") == []
    assert codes(GL106_PASSED_IN.replace("SUPPORT", "torch.linspace(0, 1, 5, device=device)"), "GL106") == []


GL110_CACHE = '''import os
import torch
from util import get_args

args = get_args()
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
if os.path.isfile(args.vector_cache):
    vectors = torch.load(args.vector_cache)
else:
    vectors = torch.randn(10, 3)
    torch.save(vectors, OTHER)
model = torch.nn.Linear(3, 2).to(device)
opt = torch.optim.Adam(model.parameters())
for x in vectors:
    loss = model(x.to(device)).sum()
    opt.zero_grad()
    loss.backward()
    opt.step()
torch.save(model, args.snapshot)
'''


def test_gl110_top_level_cache_written_in_the_other_branch_is_silent():
    # pytorch/examples legacy/snli/train.py: the script's own vector cache
    assert codes(GL110_CACHE.replace("OTHER", "args.vector_cache"), "GL110") == []


def test_gl110_top_level_load_saved_to_another_path_still_reports():
    assert codes(GL110_CACHE.replace("OTHER", "args.other_path"), "GL110") == [("GL110", 8)]


GL110_FRESH = '''import uuid
import torch
import torch.nn as nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
checkpt_file = PATH
model = nn.Linear(3, 2).to(device)


def test():
    model.load_state_dict(torch.load(checkpt_file))
    return model(torch.randn(2, 3, device=device))


best = 1e9
for epoch in range(3):
    loss = model(torch.randn(2, 3, device=device)).sum()
    if loss.item() < best:
        best = loss.item()
        torch.save(model.state_dict(), checkpt_file)
test()
'''


def test_gl110_path_drawn_with_uuid_and_saved_by_the_script_is_silent():
    # https://github.com/chennnM/GCNII train.py: 'pretrained/' + uuid.uuid4().hex + '.pt'
    assert codes(GL110_FRESH.replace("PATH", "'pretrained/' + uuid.uuid4().hex + '.pt'"), "GL110") == []


def test_gl110_fixed_path_or_uuid_path_never_saved_still_reports():
    assert codes(GL110_FRESH.replace("PATH", "'pretrained/best.pt'"), "GL110") == [("GL110", 11)]
    never_saved = GL110_FRESH.replace("PATH", "'pretrained/' + uuid.uuid4().hex + '.pt'").replace(
        "torch.save(model.state_dict(), checkpt_file)", "torch.save(model.state_dict(), 'other.pt')")
    assert codes(never_saved, "GL110") == [("GL110", 11)]


GL107_INERT = '''import torch
import torch.nn as nn


class moving_avg(nn.Module):
    def __init__(self, kernel_size, stride):
        super().__init__()
        self.kernel_size = kernel_size
        self.avg = LAYER

    def forward(self, x):
        return self.avg(x.permute(0, 2, 1)).permute(0, 2, 1)


class series_decomp_multi(nn.Module):
    def __init__(self, kernel_size):
        super().__init__()
        self.moving_avg = [moving_avg(k, stride=1) for k in kernel_size]
        self.layer = nn.Linear(1, len(kernel_size))

    def forward(self, x):
        means = torch.stack([f(x) for f in self.moving_avg], dim=-1)
        return (means * torch.softmax(self.layer(x.unsqueeze(-1)), dim=-1)).sum(-1)
'''


def test_gl107_list_of_parameter_free_file_modules_is_silent():
    # https://github.com/cure-lab/LTSF-Linear FEDformer/layers/Autoformer_EncDec.py
    assert codes(GL107_INERT.replace("LAYER", "nn.AvgPool1d(kernel_size=kernel_size, stride=stride)"), "GL107") == []


def test_gl107_list_of_file_modules_with_weights_or_dropout_still_reports():
    assert codes(GL107_INERT.replace("LAYER", "nn.Conv1d(4, 4, kernel_size)"), "GL107") == [("GL107", 18)]
    assert codes(GL107_INERT.replace("LAYER", "nn.Dropout(0.1)"), "GL107") == [("GL107", 18)]
