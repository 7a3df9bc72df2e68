import os
import sys

import pytest

# The suite runs one pytest-xdist worker per core (`-n auto`), and most of its time is fixture
# scripts run in subprocesses. Each of those, and torch in the workers, gets one intra-op thread:
# with torch's default (a thread per core) N workers start N x N spinning OpenMP threads, and on a
# loaded 2-core machine the same 21 GL103 runtime legs took 149 s instead of 39 s. Only the speed
# of the scripts changes; a caller's own setting is kept.
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")


def pytest_configure(config):
    # Where PYTHONDONTWRITEBYTECODE is set (as on the team's machines), no interpreter writes the
    # bytecode of the editable gpulint sources, so every `python -m gpulint` the suite starts (CLI,
    # hooks, `gpulint run`, the fork servers) compiles them again: about 0.8 s each (the rules too). Compiling them
    # once here writes the __pycache__ files Python reads back in every process (an installed
    # package gets them from pip); nothing the tests check depends on it.
    if os.environ.get("PYTHONDONTWRITEBYTECODE"):
        import compileall

        top = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        for name in ("gpulint", "rules"):  # (the built-in rules are loaded from `rules/` by path)
            if os.path.isdir(os.path.join(top, name)):
                compileall.compile_dir(os.path.join(top, name), quiet=2)


def pytest_addoption(parser):
    parser.addoption(
        "--regen-fixed",
        action="store_true",
        default=False,
        help="rewrite tests/fixtures/**/*.fixed.py from the fixer's output (review the diff!)",
    )


@pytest.fixture(scope="session")
def regen_fixed(request) -> bool:
    return bool(request.config.getoption("--regen-fixed") or os.environ.get("GPULINT_REGEN_FIXED") == "1")


def pytest_sessionfinish(session, exitstatus):
    # stop this worker's fixture fork server (tests/forkrun.py), if one was started
    forkrun = sys.modules.get("forkrun")
    if forkrun is not None:
        forkrun.shutdown()
