"""Packages whose names are imported when first asked for: every name of theirs resolves to the module
that defines it, and a run of ``msj-gym simulate`` on a queueing scenario imports none of the modules it
does not use (the exact solver, the trace readers, the moldable simulator)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import msj_gym

ROOT = Path(msj_gym.__file__).resolve().parent.parent
LAZY_PACKAGES = ("msj_gym.analysis", "msj_gym.moldable", "msj_gym.workloads", "msj_gym.baselines")


def _run(code: str) -> None:
    # a fresh interpreter: what this one imported already says nothing
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT, env={"PYTHONPATH": str(ROOT)})


@pytest.mark.parametrize("package", LAZY_PACKAGES)
def test_every_name_resolves_to_its_module(package: str) -> None:
    _run(
        f"import importlib; p = importlib.import_module({package!r}); home = p._LAZY.home; "
        "missing = [n for n in home if n not in p.__all__]; assert not missing, missing; "
        "assert all(n in dir(p) for n in p.__all__); "
        "wrong = [n for n in home if getattr(getattr(p, n), '__module__', None) not in "
        "(None, f'{p.__name__}.{home[n]}')]; assert not wrong, wrong; "
        "assert all(n in vars(p) for n in home)"  # each kept once looked up
    )


def test_unknown_name_is_an_attribute_error() -> None:
    import msj_gym.analysis as analysis

    with pytest.raises(AttributeError, match="has no attribute 'no_such_name'"):
        analysis.no_such_name  # noqa: B018
    assert not hasattr(analysis, "no_such_name")


def test_simulate_path_imports_what_it_uses() -> None:
    _run(
        "import sys; from msj_gym.cli import _parser; _parser(); "
        "from msj_gym.experiments.tracks import scenario_model; assert scenario_model('sf-fig2') == 'msj'; "
        "from msj_gym.workloads import load_scenario; load_scenario('sf-fig2').build(load=0.7); "
        "unused = ('msj_gym.analysis.optimal', 'msj_gym.workloads.swf', 'msj_gym.workloads.gpu_traces', "
        "'msj_gym.moldable.loss', 'msj_gym.analysis.stability'); "
        "got = [m for m in unused if m in sys.modules]; assert not got, got; "
        # a trace spec still reaches its reader, and a reader's object passes through
        "import pytest; "
        "from msj_gym.workloads.scenarios import load_scenario as ls; "
        "e = pytest.raises(ValueError, ls, 'swf:/no/such/file.swf'); "
        "assert 'msj_gym.workloads.swf' in sys.modules, e"
    )
