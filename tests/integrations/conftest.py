"""Helpers for the integration tests: each runs a library nobody here wrote, and a runnable example
of ``examples/`` (the one ``docs/integrations.md`` shows), at a tiny budget."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"


def example(name: str) -> ModuleType:
    """The module ``examples/<name>.py``, imported (its ``main`` is not run)."""
    spec = importlib.util.spec_from_file_location(f"examples_{name}", EXAMPLES / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def run_python(code: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    """``code`` in a fresh interpreter (import order and probes as a user's script has them)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=timeout, cwd=ROOT, env=env
    )


PLAIN_ID_IN_SUBPROCESS = (
    "the plain id 'MSJ-v0' is unknown in a new process that did not import msj_gym (RLlib's env "
    "runners): gymnasium 1.x has no entry-point discovery of other packages' envs; name it "
    "'msj_gym:MSJ-v0' there"
)
