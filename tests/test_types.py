"""The public API type-checks: mypy, with the configuration in pyproject.toml (``[tool.mypy]``, which names
the modules checked), finds no error. Run with the rest of the tests so that CI enforces it.

A cold check takes about half a minute on one core. Where the suite runs in one process, this test
being collected makes :func:`start_mypy` start the check in the background at the start of the session
(``tests/conftest.py``), and the test only collects its verdict; under pytest-xdist (the default,
one worker per core) the test starts it in its worker, while the other workers go on."""

from __future__ import annotations

import glob
import importlib.util
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def start_mypy() -> tuple[subprocess.Popen, Path] | None:
    """Start mypy on the public API in the background; its output goes to a temporary file (None if mypy
    is not installed). Its cache goes to a temporary folder too: nothing is left in the repository."""
    if importlib.util.find_spec("mypy") is None:
        return None
    folder = Path(tempfile.mkdtemp(prefix="msj-gym-mypy-"))
    command = [sys.executable, "-m", "mypy", "--config-file", str(ROOT / "pyproject.toml")]
    command += ["--no-incremental", "--cache-dir", str(folder / "cache")]
    with open(folder / "out.txt", "w") as out:
        process = subprocess.Popen(command, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT)
    return process, folder


def test_mypy_public_api(request: pytest.FixtureRequest) -> None:
    pytest.importorskip("mypy", reason="mypy is in the dev extra: pip install -e '.[dev]'")
    started = getattr(request.config, "_msj_gym_mypy", None) or start_mypy()
    assert started is not None
    process, folder = started
    code = process.wait(timeout=600)
    assert code == 0, (folder / "out.txt").read_text()


def test_mypy_checks_every_file_of_the_package() -> None:
    import tomllib

    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mypy"]
    listed = [ROOT / f for f in config["files"]]
    left_out = [
        str(p.relative_to(ROOT))
        # through the links msj_gym/baselines and msj_gym/agents (to the top-level folders), which mypy
        # follows and Path.rglob does not enter
        for p in sorted(Path(f) for f in glob.glob(str(ROOT / "msj_gym" / "**" / "*.py"), recursive=True))
        if not any(p == f or f in p.parents for f in listed)
    ]
    assert not left_out, f"mypy leaves out: {', '.join(left_out)}"
    assert not config.get("exclude") and not any(o.get("ignore_errors") for o in config.get("overrides", []))
