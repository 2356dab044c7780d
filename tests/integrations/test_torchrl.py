"""TorchRL: ``GymEnv("MSJ-v0")`` after ``import msj_gym``, and masks through ``ActionMask``
(``examples/torchrl_masked.py``, shown in docs/integrations.md).

Every test runs TorchRL in a fresh interpreter: importing torchrl sets multiprocessing's start method to
"spawn" for the whole process, which would change how every later test's worker processes start."""

from __future__ import annotations

import importlib.util
import json
import math

import pytest

from .conftest import run_python

if importlib.util.find_spec("torchrl") is None:  # locates, does not import
    pytest.skip("TorchRL is not installed: pip install -e '.[rl,torchrl]'", allow_module_level=True)


def _run(code: str) -> dict:
    proc = run_python(code)
    assert proc.returncode == 0, proc.stderr[-5000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_gym_env_with_the_plain_id_after_import_msj_gym() -> None:
    # a user's script: msj_gym first, then TorchRL, which probes find_spec("gymnasium") on import
    out = _run(
        "import json\n"
        "import msj_gym\n"
        "from torchrl.envs import GymEnv\n"
        "env = GymEnv('MSJ-v0', categorical_action_encoding=True, num_arrivals=50)\n"
        "td = env.rollout(5)\n"
        "print(json.dumps({'steps': td['action'].shape[0], 'actions': env.action_spec.space.n}))\n"
    )
    assert out == {"steps": 5, "actions": 3}  # sf-fig2: wait, or start the oldest job of one of 2 classes


def test_the_masked_example_never_takes_a_masked_action() -> None:
    out = _run(
        "import json, sys\n"
        "sys.path.insert(0, 'examples')\n"
        "import torchrl_masked\n"
        "print(json.dumps(torchrl_masked.main(num_arrivals=150, seed=3)))\n"
    )
    assert out["masked_actions_taken"] == 0
    assert out["steps"] > 0 and math.isfinite(out["return"]) and out["return"] < 0
    assert math.isfinite(out["mean_response_time"]) and out["mean_response_time"] > 0


def test_action_mask_rules_out_what_the_env_would_count_as_invalid() -> None:
    # independent of GymEnv and of the registration: TorchRL wrapping the env object itself
    out = _run(
        "import json\n"
        "from torchrl.envs import GymWrapper, TransformedEnv\n"
        "from torchrl.envs.libs.gym import default_info_dict_reader\n"
        "from torchrl.envs.transforms import ActionMask\n"
        "from msj_gym import MSJEnv\n"
        "def masked_actions_taken(masked):\n"
        "    env = GymWrapper(MSJEnv(num_arrivals=200), categorical_action_encoding=True)\n"
        "    env.set_info_dict_reader(default_info_dict_reader(['action_mask']))\n"
        "    env.set_seed(0)\n"
        "    rollout = (TransformedEnv(env, ActionMask()) if masked else env).rollout(max_steps=300)\n"
        "    allowed = rollout['action_mask'].gather(-1, rollout['action'].unsqueeze(-1))\n"
        "    return int((~allowed).sum())\n"
        "print(json.dumps({'unmasked': masked_actions_taken(False), 'masked': masked_actions_taken(True)}))\n"
    )
    assert out["unmasked"] > 0  # uniform random actions do pick masked ones
    assert out["masked"] == 0
