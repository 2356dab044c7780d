"""The code is ruff-clean (lint and format), checked with the rest of the tests so CI enforces it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _ruff(*args: str) -> subprocess.CompletedProcess[str]:
    pytest.importorskip("ruff", reason="ruff is in the dev extra: pip install -e '.[dev]'")
    return subprocess.run([sys.executable, "-m", "ruff", *args], cwd=ROOT, capture_output=True, text=True)


def test_ruff_lint() -> None:
    out = _ruff("check", "--no-cache", ".")
    assert out.returncode == 0, out.stdout + out.stderr


def test_ruff_format() -> None:
    out = _ruff("format", "--check", "--no-cache", ".")
    assert out.returncode == 0, out.stdout + out.stderr
