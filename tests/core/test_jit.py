"""The compilation layer: the engine loop is compiled once for every policy, and a cached kernel is
never reused after an edit of anything it depends on."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

from msj_gym.baselines import make_policy
from msj_gym.core.engine import run_batch
from msj_gym.core.jit import source_files
from msj_gym.core.simulator import Simulator
from msj_gym.workloads.scenarios import load_scenario


def test_one_engine_loop_serves_every_policy() -> None:
    workload = load_scenario("sf-fig2").build(load=0.5)
    Simulator(workload, make_policy("fcfs"), num_arrivals=200, seed=1).run()
    before = set(run_batch.overloads)
    for pid in ("msf", "first-fit", "server-filling-srpt", "easy-backfilling", "nmsr"):
        Simulator(workload, make_policy(pid), num_arrivals=200, seed=1).run()
    assert set(run_batch.overloads) == before


def test_dependencies_are_found_not_declared() -> None:
    from msj_gym.baselines.server_filling import ServerFilling

    files = {Path(f).name for f in source_files(ServerFilling.kernel)}
    assert {"server_filling.py", "_kit.py"} <= files
    # actions.py is reached only through an @intrinsic (bits_f64) the engine calls
    assert {"engine.py", "actions.py"} <= {Path(f).name for f in source_files(run_batch)}


_HELPER = "def helper():\n    return {value}\n"
_KERNEL = textwrap.dedent(
    """
    from msj_gym.core.jit import inline_jit, kernel_jit

    from dep_pkg.helper import helper as _py_helper
    from dep_pkg import consts

    helper = inline_jit(_py_helper)


    @kernel_jit
    def kernel(x):
        return x * helper() + consts.OFFSET
    """
)
_PROBE = (
    "from dep_pkg.kernel import kernel; r = kernel(10); "
    "print(r, sum(kernel.stats.cache_hits.values()), sum(kernel.stats.cache_misses.values()))"
)


def _probe(root: Path) -> tuple[int, int, int]:
    env = {**os.environ, "PYTHONPATH": f"{root}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    env.pop("NUMBA_DISABLE_JIT", None)
    out = subprocess.run(
        [sys.executable, "-c", _PROBE], env=env, capture_output=True, text=True, check=True, cwd=root
    )
    value, hits, misses = out.stdout.split()
    return int(value), int(hits), int(misses)


def test_an_edited_dependency_is_recompiled_not_loaded_stale(tmp_path: Path) -> None:
    pkg = tmp_path / "dep_pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "helper.py").write_text(_HELPER.format(value=2))
    (pkg / "consts.py").write_text("OFFSET = 1\n")
    (pkg / "kernel.py").write_text(_KERNEL)
    assert _probe(tmp_path) == (21, 0, 1)  # compiled
    assert _probe(tmp_path) == (21, 1, 0)  # loaded from the cache
    (pkg / "helper.py").write_text(_HELPER.format(value=3))  # the kernel's own file is untouched
    assert _probe(tmp_path)[0] == 31
    (pkg / "consts.py").write_text("OFFSET = 5\n")
    assert _probe(tmp_path)[0] == 35
    assert _probe(tmp_path) == (35, 1, 0)


_ASSEMBLED = textwrap.dedent(
    """
    import functools

    from msj_gym.core.jit import internal_jit


    @internal_jit
    def double(x):
        return 2 * x


    @internal_jit
    def triple(x):
        return 3 * x


    @functools.cache
    def make(which, offset):
        piece = double if which == 0 else triple

        @internal_jit(python=True)
        def assembled(x):
            return piece(x) + offset

        return assembled
    """
)
_ASSEMBLED_PROBE = (
    "from asm_pkg.steps import make\n"
    "for which, offset in ((0, 1), (1, 1), (0, 2)):\n"
    "    f = make(which, offset)\n"
    "    print(f(10), sum(f.stats.cache_hits.values()), sum(f.stats.cache_misses.values()))\n"
)


def test_a_function_assembled_from_others_is_cached_by_what_it_closes_over(tmp_path: Path) -> None:
    # a closure over compiled functions (the env step over its modes' pieces): numba's own key pickles
    # them with a per-process id and would never hit; each variant keeps an entry of its own
    pkg = tmp_path / "asm_pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "steps.py").write_text(_ASSEMBLED)
    root = Path(__file__).resolve().parents[2]
    env = {
        **os.environ,
        "PYTHONPATH": f"{tmp_path}{os.pathsep}{root}",
        "NUMBA_CACHE_DIR": str(tmp_path / "nc"),
    }
    env.pop("NUMBA_DISABLE_JIT", None)

    def probe() -> list[tuple[int, int, int]]:
        out = subprocess.run(
            [sys.executable, "-c", _ASSEMBLED_PROBE], env=env, capture_output=True, text=True, check=True
        ).stdout
        return [tuple(int(x) for x in line.split()) for line in out.splitlines()]

    assert probe() == [(21, 0, 1), (31, 0, 1), (22, 0, 1)]  # three variants, each compiled
    assert probe() == [(21, 1, 0), (31, 1, 0), (22, 1, 0)]  # each loaded from its own entry


def test_announce_says_done_or_failed(monkeypatch, capsys) -> None:
    import time

    import pytest

    from msj_gym.core import jit

    # a solve that gives up (e.g. a chain too large) must not be reported as done
    monkeypatch.setattr(jit, "ANNOUNCE_AFTER", 0.0)
    with jit.announce("solving a thing"):
        time.sleep(0.05)
    assert "msj-gym: solving a thing: done in" in capsys.readouterr().err
    with pytest.raises(ValueError), jit.announce("solving a bigger thing"):
        time.sleep(0.05)
        raise ValueError("too large")
    err = capsys.readouterr().err
    assert "solving a bigger thing: failed after" in err and "done" not in err
    monkeypatch.setattr(jit, "ANNOUNCE_AFTER", 10.0)
    with jit.announce("a quick thing"):  # nothing said for what takes less than ANNOUNCE_AFTER
        pass
    assert capsys.readouterr().err == ""


_ANNOUNCED = textwrap.dedent(
    """
    from numba import types

    from msj_gym.core import jit


    @jit.kernel_jit
    def add_one(x):
        return x + 1
    """
)
_ANNOUNCED_PROBE = (
    "from msj_gym.core import jit\n"
    "jit.ANNOUNCE_AFTER = 0.0\n"
    "from ann_pkg.kern import add_one, types\n"
    "print(jit.cache_holds(add_one, (types.int64,)))\n"
    "jit.compile_announced(add_one, (types.int64,), 'compiling add_one')\n"
    "print(jit.cache_holds(add_one, (types.int64,)), add_one(41))\n"
)


def test_the_compile_line_shows_only_when_something_compiles(tmp_path: Path) -> None:
    # a load from the disk cache says nothing, however long it takes; a compilation says so
    pkg = tmp_path / "ann_pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "kern.py").write_text(_ANNOUNCED)
    root = Path(__file__).resolve().parents[2]
    env = {
        **os.environ,
        "PYTHONPATH": f"{tmp_path}{os.pathsep}{root}",
        "NUMBA_CACHE_DIR": str(tmp_path / "nc"),
    }
    env.pop("NUMBA_DISABLE_JIT", None)

    def probe() -> tuple[str, str]:
        done = subprocess.run(
            [sys.executable, "-c", _ANNOUNCED_PROBE], env=env, capture_output=True, text=True, check=True
        )
        return done.stdout, done.stderr

    out, err = probe()
    assert out.split() == ["False", "True", "42"] and "msj-gym: compiling add_one: done in" in err
    out, err = probe()
    assert out.split() == ["True", "True", "42"] and "compiling" not in err
