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
