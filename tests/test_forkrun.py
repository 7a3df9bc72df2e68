"""The fork server (tests/forkrun.py) stands for a fresh interpreter: the same script run both ways
gives the same exit status and the same output.

Every comparison asserts that the fork path really served the run (a ForkedProcess), so a server
that silently fell back to a subprocess cannot pass."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import forkrun
from fixture_support import FIXTURES, Case, run_script, train_result

pytestmark = pytest.mark.skipif(
    not forkrun.supported([sys.executable, "x.py"]), reason="the fork server needs Linux (pidfd, prctl)"
)

EMULATE = [sys.executable, "-m", "gpulint.emulate", "--force"]


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env.setdefault("PYTHONHASHSEED", "0")
    return env


def both(script: Path, cwd: Path, prefix=None, env_extra=None, timeout=300):
    """(fresh subprocess, fork) results of the same command, each in its own copy of ``cwd``."""
    cmd_for = lambda target: (prefix or [sys.executable]) + [str(target)]  # noqa: E731
    results = []
    for way in ("subprocess", "fork"):
        where = cwd / way
        where.mkdir()
        target = where / script.name
        shutil.copy(script, target)
        cmd = cmd_for(target)
        if way == "fork":
            proc = forkrun.run(cmd, where, _env(), env_extra, timeout=timeout)
            assert isinstance(proc, forkrun.ForkedProcess), "the fork server did not serve the run"
        else:
            env = _env()
            env.update(env_extra or {})
            proc = subprocess.run(cmd, cwd=where, env=env, capture_output=True, text=True, timeout=timeout)
        results.append(proc)
    return results


def same_but_dir(fresh: str, forked: str) -> tuple[str, str]:
    """The two runs work in sibling folders `subprocess` and `fork`: compare with those names unified."""
    return re.sub(r"/subprocess\b", "/WHERE", fresh), re.sub(r"/fork\b", "/WHERE", forked)


def _error_line(stderr: str) -> str | None:
    lines = [l for l in stderr.splitlines() if l.strip() and not l.startswith("gpulint run:")]
    return lines[-1] if lines else None


# -- fixtures, both ways --------------------------------------------------------------------------

REPRESENTATIVE = [
    # (fixture, emulated?) a fixed script; a hard negative; a negative with DataLoader workers
    # (fork start method); a crash-kind buggy input under emulated CUDA; a fixed one emulated
    ("GL101/dict_batch.fixed.py", False),
    ("GL101/ok_rebind_tuple_batch.py", False),
    ("GL114/ok_dict_samples_collate_on_cpu_workers.py", False),
    ("GL502/trailing_comma_and_workers.fixed.py", True),
    ("GL101/dict_batch.py", True),
    ("GL101/dict_batch.fixed.py", True),
]


@pytest.mark.parametrize("name,emulated", REPRESENTATIVE, ids=[f"{n}-{'emu' if e else 'cpu'}" for n, e in REPRESENTATIVE])
def test_fixture_same_both_ways(name, emulated, tmp_path):
    script = FIXTURES / name
    if emulated:
        fresh, forked = both(script, tmp_path, prefix=EMULATE)
    else:
        fresh, forked = both(script, tmp_path, env_extra={"CUDA_VISIBLE_DEVICES": ""})
    assert forked.returncode == fresh.returncode, (fresh.stderr[-2000:], forked.stderr[-2000:])
    assert train_result(forked.stdout) == train_result(fresh.stdout)  # seeds are fixed: equal losses
    assert same_but_dir(fresh.stdout, forked.stdout)[0] == same_but_dir(fresh.stdout, forked.stdout)[1]
    assert _error_line(forked.stderr) == _error_line(fresh.stderr)
    case = Case(script.parent.name, script)
    if name.endswith(".fixed.py") or case.is_negative:
        assert fresh.returncode == 0 and train_result(fresh.stdout) is not None
    else:
        assert fresh.returncode != 0 and case.fails_on_cuda in forked.stderr


def test_run_script_uses_the_fork_path(tmp_path, monkeypatch):
    script = tmp_path / "s.py"
    script.write_text("print('hi')\n")
    monkeypatch.delenv("GPULINT_TEST_SUBPROCESS", raising=False)
    proc = run_script(script, tmp_path, {"CUDA_VISIBLE_DEVICES": ""})
    import fixture_support

    if fixture_support._cuda_available():
        assert not isinstance(proc, forkrun.ForkedProcess)
    else:
        assert isinstance(proc, forkrun.ForkedProcess) and proc.stdout == "hi\n"
    monkeypatch.setenv("GPULINT_TEST_SUBPROCESS", "1")
    proc = run_script(script, tmp_path, {"CUDA_VISIBLE_DEVICES": ""})
    assert not isinstance(proc, forkrun.ForkedProcess) and proc.stdout == "hi\n"


# -- interpreter semantics, both ways -------------------------------------------------------------

PROBES = {
    "globals_argv_path": """
        import os, sys
        print(sorted(k for k in globals()), __name__, __file__, __package__, __spec__, type(__loader__).__name__)
        print(sys.argv, sys.path[0], os.getcwd(), os.environ.get("CUDA_VISIBLE_DEVICES"), os.environ.get("PYTHONHASHSEED"))
        print(sys.orig_argv[1:], sys.stdin.read(), hash("abc"))
    """,
    "exit_string": "import sys\nprint('out')\nsys.exit('bye now')\n",
    "exit_code": "import sys\nsys.exit(7)\n",
    "exit_none": "raise SystemExit\n",
    "uncaught_with_atexit_and_c_output": """
        import atexit, os, sys
        atexit.register(lambda: print('atexit ran', '__file__' in globals()))
        os.write(1, b'c-level stdout\\n')
        os.write(2, b'c-level stderr\\n')
        print('buffered', end='')
        def f():
            raise ValueError('boom')
        f()
    """,
    "syntax_error": "x = (\n",
    "thread_joined_at_exit": """
        import threading, time
        def late():
            time.sleep(0.2)
            print('thread done')
        threading.Thread(target=late).start()
        print('main done')
    """,
    "keyboard_interrupt": "raise KeyboardInterrupt\n",
    "segfault": "import ctypes\nprint('before', flush=True)\nctypes.string_at(0)\n",
    "main_class_pickles": """
        import pickle, torch
        class Net(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.lin = torch.nn.Linear(2, 1)
        torch.manual_seed(0)
        net = Net()
        torch.save(net, 'net.pt')
        back = torch.load('net.pt', weights_only=False)
        print(type(back).__module__, type(back).__qualname__, pickle.loads(pickle.dumps(Net())).__class__ is Net)
        print(torch.equal(back.lin.weight, net.lin.weight))
    """,
    "spawn_child_runs_main_function": """
        import multiprocessing as mp
        def square(x):
            return x * x
        if __name__ == '__main__':
            with mp.get_context('spawn').Pool(1) as pool:
                print(pool.map(square, [1, 2, 3]))
    """,
    # torch is imported before the script runs: a script that does not import torch still sees the
    # filters torch's import adds (documented in forkrun's docstring); the fixtures all import it
    "warnings_once": """
        import warnings, torch
        for _ in range(2):
            warnings.warn('careful')
        print(len(warnings.filters))
    """,
}


@pytest.mark.parametrize("name", sorted(PROBES))
def test_interpreter_semantics_same_both_ways(name, tmp_path):
    script = tmp_path / f"{name}.py"
    script.write_text(textwrap.dedent(PROBES[name]).lstrip())
    runs = tmp_path / "runs"
    runs.mkdir()
    fresh, forked = both(script, runs, env_extra={"CUDA_VISIBLE_DEVICES": ""})
    assert forked.returncode == fresh.returncode
    assert same_but_dir(fresh.stdout, forked.stdout)[0] == same_but_dir(fresh.stdout, forked.stdout)[1]
    assert same_but_dir(fresh.stderr, forked.stderr)[0] == same_but_dir(fresh.stderr, forked.stderr)[1]


def test_unseeded_torch_differs_per_run_as_in_fresh_processes(tmp_path):
    script = tmp_path / "s.py"
    script.write_text("import torch\nprint(torch.rand(3).tolist(), torch.initial_seed())\n")
    outs = {forkrun.run([sys.executable, str(script)], tmp_path, _env()).stdout for _ in range(3)}
    assert len(outs) == 3, outs


def test_timeout_kills_the_child_and_the_server_survives(tmp_path):
    script = tmp_path / "hang.py"
    script.write_text("import time\nprint('started', flush=True)\ntime.sleep(600)\n")
    with pytest.raises(subprocess.TimeoutExpired) as info:
        forkrun.run([sys.executable, str(script)], tmp_path, _env(), timeout=2)
    assert info.value.output == "started\n"
    ok = tmp_path / "ok.py"
    ok.write_text("print('still here')\n")
    proc = forkrun.run([sys.executable, str(ok)], tmp_path, _env())
    assert isinstance(proc, forkrun.ForkedProcess) and proc.stdout == "still here\n"


def test_a_dead_server_is_replaced_or_falls_back(tmp_path):
    ok = tmp_path / "ok.py"
    ok.write_text("print('x')\n")
    assert isinstance(forkrun.run([sys.executable, str(ok)], tmp_path, _env()), forkrun.ForkedProcess)
    forkrun._server.proc.kill()  # dies between requests: the next request starts a new server
    forkrun._server.proc.wait()
    assert isinstance(forkrun.run([sys.executable, str(ok)], tmp_path, _env()), forkrun.ForkedProcess)
    killer = tmp_path / "killer.py"  # dies during a request: the caller is told to run a subprocess
    killer.write_text("import os, signal\nos.kill(os.getppid(), signal.SIGKILL)\n")
    with pytest.warns(RuntimeWarning, match="fork server stopped"):
        assert forkrun.run([sys.executable, str(killer)], tmp_path, _env(), timeout=60) is None
    assert isinstance(forkrun.run([sys.executable, str(ok)], tmp_path, _env()), forkrun.ForkedProcess)
    forkrun._failures = 0


def test_declines_what_it_cannot_stand_for():
    assert not forkrun.supported([sys.executable, "-X", "dev", "s.py"])
    assert not forkrun.supported(["torchrun", "--nproc_per_node=2", "s.py"])
    assert not forkrun.supported([sys.executable, "s.py"], {"OMP_NUM_THREADS": "4"})
    assert forkrun.supported([sys.executable, "s.py"], {"CUDA_VISIBLE_DEVICES": ""})
    assert forkrun.supported(EMULATE + ["s.py"])
