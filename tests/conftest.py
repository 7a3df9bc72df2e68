import os

import pytest


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
