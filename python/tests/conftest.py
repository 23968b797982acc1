"""Shared fixtures: the repository's data files and a printed, overridable seed."""

from __future__ import annotations

import os
import random
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

REPO = Path(__file__).resolve().parents[2]
DATA = REPO / "data"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--seed",
        type=int,
        default=None,
        help="seed of the randomized tests (default: SHAMAP_SEED or random)",
    )


@pytest.fixture
def seed(request: pytest.FixtureRequest) -> int:
    """The randomized tests' seed: --seed, else $SHAMAP_SEED, else a fresh one.

    It is printed (shown by pytest for a failing test) so a failure can be
    replayed with `pytest --seed N`.
    """
    s = request.config.getoption("--seed")
    if s is None:
        s = int(os.environ.get("SHAMAP_SEED", random.SystemRandom().randrange(2**32)))
    print(f"seed = {s} (replay with: pytest --seed {s})")
    return s
