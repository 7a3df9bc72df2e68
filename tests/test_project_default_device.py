"""A CUDA default tensor type set by another file of the same run (PRECISION26 A1, P33-A1).

ALAE's entry points call `launcher.run(fn)`, which runs
`torch.set_default_tensor_type('torch.cuda.FloatTensor')` before `fn`; the factories of net.py then
build CUDA tensors exactly when the model runs on CUDA. Within one file the engine already honours
such a call; `gpulint check net.py train.py` now reads the launcher's call too (a byte search before
any file is analysed: nothing parsed or run).
"""

from __future__ import annotations

import textwrap

from cli_support import gl, problems, write
from gpulint.project import cuda_default_setter

NET = textwrap.dedent(
    """
    import torch
    import torch.nn as nn


    class Encoder(nn.Module):
        def __init__(self, latent_size=4):
            super().__init__()
            self.latent_size = latent_size
            self.fc = nn.Linear(8, latent_size)

        def forward(self, x):
            styles = torch.zeros(x.shape[0], 1, self.latent_size)
            styles[:, 0] += self.fc(x)
            return styles
    """
).lstrip()

LAUNCHER = textwrap.dedent(
    """
    import torch
    from net import Encoder


    def run(fn, no_cuda=False):
        if not no_cuda:
            {call}
        fn()


    def train():
        model = Encoder()
        x = torch.randn(2, 8)
        if torch.cuda.is_available():
            model, x = model.cuda(), x.cuda()
        print(model(x).sum())


    if __name__ == "__main__":
        run(train, no_cuda=not torch.cuda.is_available())
    """
).lstrip()


def _check(tmp_path, call: str | None, *names: str):
    files = {"net.py": NET}
    if call is not None:
        files["train.py"] = LAUNCHER.replace("{call}", call)
    write(tmp_path, files)
    result = gl(["check", "--no-cache", *names], tmp_path)
    return [(p, line, code) for p, line, _, code in problems(result.output)]


def test_a_launcher_in_the_run_that_sets_a_cuda_default_type_silences_host_factories(tmp_path):
    call = 'torch.set_default_tensor_type("torch.cuda.FloatTensor")'
    assert _check(tmp_path, call, "net.py") == [("net.py", 12, "GL105")]
    assert _check(tmp_path, call, "net.py", "train.py") == []
    assert _check(tmp_path, call, ".") == []


def test_a_cpu_default_or_a_commented_call_keeps_the_finding(tmp_path):
    for call in ('torch.set_default_tensor_type("torch.FloatTensor")', "torch.set_default_tensor_type(torch.DoubleTensor)",
                 'torch.set_default_device("cpu")', 'pass  # torch.set_default_tensor_type("torch.cuda.FloatTensor")'):
        assert _check(tmp_path, call, ".") == [("net.py", 12, "GL105")], call


def test_the_cache_keeps_runs_with_and_without_the_launcher_apart(tmp_path):
    write(tmp_path, {"net.py": NET, "train.py": LAUNCHER.replace("{call}", 'torch.set_default_device("cuda")')})
    assert problems(gl(["check", "net.py", "train.py"], tmp_path).output) == []
    assert [p[3] for p in problems(gl(["check", "net.py"], tmp_path).output)] == ["GL105"]
    assert problems(gl(["check", "net.py", "train.py"], tmp_path).output) == []


def test_the_byte_search(tmp_path):
    cases = {
        "a.py": "torch.set_default_tensor_type('torch.cuda.FloatTensor')\n",
        "b.py": "torch.set_default_device(device)\n",
        "c.py": "x = 1  # torch.set_default_device('cuda')\n",
        "d.py": "torch.set_default_tensor_type(torch.FloatTensor)\n",
        "e.ipynb": '{"cells": [{"source": ["torch.set_default_device(\\"cuda\\")"]}]}',
        "f.py": "torch.set_default_dtype(torch.float64)\n",
    }
    write(tmp_path, cases)
    for name, expected in {"a.py": True, "b.py": True, "c.py": False, "d.py": False, "e.ipynb": True, "f.py": False}.items():
        assert (cuda_default_setter([tmp_path / name]) is not None) is expected, name
    assert cuda_default_setter([tmp_path / "missing.py", tmp_path / "a.py"]) == str(tmp_path / "a.py")


def test_the_fact_holds_within_one_project_only(tmp_path):
    # a folder of two unrelated repositories checked in one run: only ALAE's launcher's project
    call = 'torch.set_default_tensor_type("torch.cuda.FloatTensor")'
    write(tmp_path, {
        "alae/README.md": "ALAE\n", "alae/net.py": NET, "alae/train.py": LAUNCHER.replace("{call}", call),
        "other/README.md": "other\n", "other/net.py": NET,
    })
    found = [(p.replace("\\\\", "/"), line, code) for p, line, _, code in problems(gl(["check", "--no-cache", "."], tmp_path).output)]
    assert found == [("other/net.py", 12, "GL105")]


def test_folders_without_markers_are_their_own_projects(tmp_path):
    # no README, no setup.py: each repository folder stands alone, whichever is walked first
    call = 'torch.set_default_tensor_type("torch.cuda.FloatTensor")'
    write(tmp_path, {"a_other/net.py": NET, "b_alae/net.py": NET, "b_alae/train.py": LAUNCHER.replace("{call}", call),
                     "c_other/net.py": NET})
    found = sorted((p.replace("\\\\", "/"), code) for p, line, _, code in problems(gl(["check", "--no-cache", "."], tmp_path).output))
    assert found == [("a_other/net.py", "GL105"), ("c_other/net.py", "GL105")]


def test_the_byte_search_never_waits_on_a_fifo(tmp_path):
    import os

    fifo = tmp_path / "pipe.py"
    os.mkfifo(fifo)
    write(tmp_path, {"a.py": "torch.set_default_device(device)\n"})
    # nothing writes to the FIFO: opening it for reading would block; it is skipped
    assert cuda_default_setter([fifo, tmp_path / "a.py"]) == str(tmp_path / "a.py")
