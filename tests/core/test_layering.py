"""The simulator core imports nothing above it: not the policies, workloads, analysis, environments or
experiments, and not gymnasium. Checked on the source, imports inside functions included."""

from __future__ import annotations

from pathlib import Path

import msj_gym.core

from ..test_layering import _imported

CORE = Path(msj_gym.core.__file__).resolve().parent
ALLOWED = ("msj_gym.core", "msj_gym.metrics", "numpy", "numba", "llvmlite")


def _imports(path: Path) -> list[tuple[int, str]]:
    return _imported(path, ["msj_gym", "core"])  # every file checked here is (or stands for) a core module


def _allowed(module: str) -> bool:
    top = module.partition(".")[0]
    if top in ("__future__", "typing", "collections", "dataclasses", "importlib") or top in _STDLIB:
        return True
    return any(module == a or module.startswith(a + ".") for a in ALLOWED)


_STDLIB = frozenset(__import__("sys").stdlib_module_names)


def test_core_imports_nothing_above_it() -> None:
    bad = [
        f"{path.name}:{line} imports {module}"
        for path in sorted(CORE.glob("*.py"))
        for line, module in _imports(path)
        if not _allowed(module)
    ]
    assert not bad, "\n".join(bad)


def test_the_check_sees_relative_and_local_imports(tmp_path: Path) -> None:
    src = tmp_path / "x.py"
    src.write_text("from ..workloads import a\n\ndef f():\n    import gymnasium\n    from . import engine\n")
    modules = [m for _, m in _imports(src)]
    assert modules == ["msj_gym.workloads", "gymnasium", "msj_gym.core.engine"]
    assert [_allowed(m) for m in modules] == [False, False, True]
