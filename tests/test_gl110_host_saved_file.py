"""GL110 and a load of a file that the same file writes with host tensors only
(lightaime/deep_gcns_torch examples/ogb_eff/ogbn_arxiv_dgl/main.py, PRECISION40): the teacher's
predictions are saved with `torch.save(pred.cpu(), os.path.join(kd_dir, 'best_pred_run{}.pt'...))`
and the student run loads `'./{}/best_pred_run{}.pt'.format(...)`; `map_location` changes nothing."""

from __future__ import annotations

import textwrap

from gpulint.engine import Options, run_text
from gpulint.registry import Registry


def findings(src: str) -> list[tuple[str, int]]:
    reg = Registry.load()
    res = run_text("t.py", textwrap.dedent(src), [reg.by_code("GL110")()], Options())
    return sorted((d.code, d.line) for d in res.diagnostics)


_DISTILL = """
import argparse
import os

import torch
import torch.nn.functional as F

device = None


def save_pred(pred, run_num, kd_dir):
    os.makedirs(kd_dir, exist_ok=True)
    fname = os.path.join(kd_dir, {saved_name!r}.format(run_num))
    torch.save({saved}, fname)


def run(args, feats, labels, n_running):
    model = torch.nn.Linear(feats.shape[1], 3).to(device)
    opt = torch.optim.Adam(model.parameters(), lr=0.01)
    teacher_output = None
    if args.mode == "student":
        teacher_output = torch.load("./{{}}/best_pred_run{{}}.pt".format(args.kd_dir, n_running)).to(device)
    for epoch in range(3):
        pred = model(feats)
        loss = F.cross_entropy(pred, labels)
        if teacher_output is not None:
            loss = loss + F.kl_div(pred.log_softmax(-1), teacher_output.softmax(-1), reduction="batchmean")
        opt.zero_grad()
        loss.backward()
        opt.step()
    if args.mode == "teacher":
        save_pred(pred.detach(), n_running, args.kd_dir)
    torch.save(F.softmax(pred, dim=1), f"./output/{{n_running}}.pt")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--cpu", action="store_true")
    parser.add_argument("--mode", default="teacher")
    parser.add_argument("--kd_dir", default="kd")
    args = parser.parse_args()
    device = torch.device("cpu") if args.cpu else torch.device("cuda:0")
    run(args, torch.randn(8, 4).to(device), torch.randint(0, 3, (8,)).to(device), 0)
"""


def load_line(src: str) -> int:
    return next(i for i, t in enumerate(textwrap.dedent(src).splitlines(), 1) if "torch.load(" in t)


def run(saved: str, saved_name: str = "best_pred_run{}.pt") -> list[tuple[str, int]]:
    return findings(_DISTILL.format(saved=saved, saved_name=saved_name))


def test_file_written_from_host_is_silent():
    assert run("pred.cpu()") == []


def test_file_written_from_device_still_reported():
    src = _DISTILL.format(saved="pred", saved_name="best_pred_run{}.pt")
    assert findings(src) == [("GL110", load_line(src))]


def test_other_file_name_still_reported():
    src = _DISTILL.format(saved="pred.cpu()", saved_name="teacher_run{}.pt")
    assert findings(src) == [("GL110", load_line(src))]


def test_same_name_also_written_from_device_still_reported():
    src = _DISTILL.format(saved="pred.cpu()", saved_name="best_pred_run{}.pt").replace(
        'f"./output/{n_running}.pt"', 'f"./output/best_pred_run{n_running}.pt"')
    assert findings(src) == [("GL110", load_line(src))]
