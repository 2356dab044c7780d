"""The public API type-checks: mypy, with the configuration in pyproject.toml (``[tool.mypy]``, which names
the modules checked), finds no error. Run with the rest of the tests so that CI enforces it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_mypy_public_api(tmp_path: Path) -> None:
    pytest.importorskip("mypy", reason="mypy is in the dev extra: pip install -e '.[dev]'")
    # a cold run (about half a minute): its cache goes to pytest's temporary folder, not the repository
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--config-file",
            str(ROOT / "pyproject.toml"),
            "--no-incremental",
            "--cache-dir",
            str(tmp_path / "mypy-cache"),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0, out.stdout + out.stderr
