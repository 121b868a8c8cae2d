"""Basilisk, the peer some tests check hopsim against, runs in its own environment (its `bsk`
wheel pins a protobuf that conflicts with hopsim's): `make test` builds `.venv-bsk`, or
HOPSIM_BSK_PYTHON names another interpreter that has it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def bsk_python() -> str:
    """The interpreter with Basilisk; without one the test is skipped, or fails under CI=true."""
    named = os.environ.get("HOPSIM_BSK_PYTHON")
    if named:
        return named
    local = ROOT / ".venv-bsk" / "bin" / "python"
    if local.exists():
        return str(local)
    if os.environ.get("CI") == "true":
        pytest.fail("Basilisk's environment is missing: `make test` creates .venv-bsk")
    pytest.skip("no Basilisk environment (.venv-bsk, or HOPSIM_BSK_PYTHON)")
