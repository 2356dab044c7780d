"""``gym.make("MSJ-v0")`` works after ``import msj_gym`` whatever the import order and the probes in
between, and in processes that never imported msj_gym through the ``"msj_gym:MSJ-v0"`` form. Each case
runs in a fresh interpreter: the registration happens at most once per process."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _python(code: str, cwd: Path = ROOT, script: Path | None = None) -> str:
    """Run ``code`` (or the file ``script``) in a fresh interpreter that imports msj_gym from this
    checkout; its stdout."""
    import os

    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    args = [str(script)] if script is not None else ["-c", textwrap.dedent(code)]
    out = subprocess.run([sys.executable, *args], cwd=cwd, env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-3000:]
    return out.stdout


@pytest.mark.parametrize(
    "before_import",
    [
        "",
        # TorchRL probes for the package before importing it: the probe must not disarm the hook
        "importlib.util.find_spec('gymnasium'); importlib.util.find_spec('gymnasium')",
        # a submodule first: its parent package is what runs, and what registers
        "importlib.import_module('gymnasium.spaces')",
    ],
    ids=["plain", "find-spec-probe", "submodule-first"],
)
def test_registered_after_msj_gym_whatever_probes_run_before_gymnasium(before_import: str) -> None:
    out = _python(
        f"""
        import importlib, importlib.util, sys
        import msj_gym
        assert "gymnasium" not in sys.modules  # a run that only simulates does not pay for it
        {before_import}
        import gymnasium as gym
        print(gym.make("MSJ-v0").unwrapped.__class__.__name__)
        print(sum(getattr(f, "_msj_gym_hook", False) for f in sys.meta_path))
        """
    )
    assert out.split() == ["MSJEnv", "0"]  # made, and the hook has left the import system


def test_registered_when_gymnasium_came_first() -> None:
    out = _python(
        """
        import gymnasium as gym
        import msj_gym
        print(*(gym.spec(i).id for i in ("MSJ-v0", "MSJPreemptive-v0", "MSJMoldable-v0", "CompatAssign-v0")))
        """
    )
    assert out.split() == ["MSJ-v0", "MSJPreemptive-v0", "MSJMoldable-v0", "CompatAssign-v0"]


def test_a_fresh_process_that_never_imported_msj_gym_makes_it_by_module_and_id() -> None:
    # what a Ray / RLlib env runner or a worker started from a notebook is: gymnasium alone
    out = _python(
        """
        import sys
        import gymnasium as gym
        env = gym.make("msj_gym:MSJ-v0", num_arrivals=50)
        print("msj_gym" in sys.modules, env.spec.id, gym.make("MSJ-v0").spec.id)
        """
    )
    assert out.split() == ["True", "MSJ-v0", "MSJ-v0"]


def test_plain_id_in_spawned_vector_env_workers(tmp_path: Path) -> None:
    # a script's spawned workers import it again as __mp_main__, hence msj_gym, hence the ids;
    # make_vec's async mode hands its workers the spec itself
    script = tmp_path / "train.py"
    script.write_text(
        textwrap.dedent(
            """
            import gymnasium as gym

            import msj_gym  # noqa: F401

            if __name__ == "__main__":
                fns = [lambda: gym.make("MSJ-v0", num_arrivals=50)] * 2
                venv = gym.vector.AsyncVectorEnv(fns, context="spawn")
                obs, _ = venv.reset(seed=0)
                venv.close()
                spawn = {"context": "spawn"}
                vec = gym.make_vec("MSJ-v0", 2, vectorization_mode="async", vector_kwargs=spawn)
                obs2, _ = vec.reset(seed=0)
                vec.close()
                print(obs.shape[0], obs2.shape[0], bool((obs == obs2).all()))
            """
        )
    )
    out = _python("", cwd=tmp_path, script=script)
    assert out.split() == ["2", "2", "True"]
