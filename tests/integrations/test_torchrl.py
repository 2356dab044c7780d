"""TorchRL: ``GymEnv("MSJ-v0")`` after ``import msj_gym``, and masks through ``ActionMask``
(``examples/torchrl_masked.py``, shown in docs/integrations.md), checked by TorchRL's own
``check_env_specs``.

TorchRL runs in a fresh interpreter: importing torchrl sets multiprocessing's start method to "spawn"
for the whole process, which would change how every later test's worker processes start. One
interpreter runs every check (importing torch and torchrl is most of their cost), and each test reads
its part of what it printed."""

from __future__ import annotations

import importlib.util
import json
import math

import pytest

from .conftest import run_python

if importlib.util.find_spec("torchrl") is None:  # locates, does not import
    pytest.skip(
        "TorchRL is not installed: it comes with the dev extra (pip install -e '.[dev,rl]')",
        allow_module_level=True,
    )

# a user's script: msj_gym first, then TorchRL, which probes find_spec("gymnasium") on import
CHECKS = """
import json, sys
import msj_gym
from torchrl.envs import GymEnv, GymWrapper, TransformedEnv
from torchrl.envs.libs.gym import default_info_dict_reader
from torchrl.envs.transforms import ActionMask
from torchrl.envs.utils import check_env_specs
sys.path.insert(0, "examples")
import torchrl_masked

out = {}
env = GymEnv("MSJ-v0", categorical_action_encoding=True, num_arrivals=50)
td = env.rollout(5)
out["plain"] = {"steps": td["action"].shape[0], "actions": env.action_spec.space.n}

env = torchrl_masked.make_env(num_arrivals=50)
check_env_specs(env)  # raises if a spec disagrees with what a real rollout gives
spec = env.observation_spec["action_mask"]
out["specs"] = {"shape": list(spec.shape), "dtype": str(spec.dtype)}

out["example"] = torchrl_masked.main(num_arrivals=150, seed=3)

# independent of GymEnv and of the registration: TorchRL wrapping the env object itself, without the
# mask's spec (the reader then guesses one; a rollout still runs)
def masked_actions_taken(masked):
    env = GymWrapper(msj_gym.MSJEnv(num_arrivals=200), categorical_action_encoding=True)
    env.set_info_dict_reader(default_info_dict_reader(["action_mask"]))
    env.set_seed(0)
    rollout = (TransformedEnv(env, ActionMask()) if masked else env).rollout(max_steps=300)
    allowed = rollout["action_mask"].gather(-1, rollout["action"].unsqueeze(-1))
    return int((~allowed).sum())

out["wrapper"] = {"unmasked": masked_actions_taken(False), "masked": masked_actions_taken(True)}
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def checked() -> dict:
    proc = run_python(CHECKS)
    assert proc.returncode == 0, proc.stderr[-5000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_gym_env_with_the_plain_id_after_import_msj_gym(checked: dict) -> None:
    # sf-fig2: wait, or start the oldest job of one of 2 classes
    assert checked["plain"] == {"steps": 5, "actions": 3}


def test_torchrls_own_spec_check_passes_with_the_documented_mask_recipe(checked: dict) -> None:
    # check_env_specs passed in the child (it raises otherwise); the mask's spec is one boolean per action
    assert checked["specs"] == {"shape": [3], "dtype": "torch.bool"}


def test_the_masked_example_never_takes_a_masked_action(checked: dict) -> None:
    out = checked["example"]
    assert out["masked_actions_taken"] == 0
    assert out["steps"] > 0 and math.isfinite(out["return"]) and out["return"] < 0
    assert math.isfinite(out["mean_response_time"]) and out["mean_response_time"] > 0


def test_action_mask_rules_out_what_the_env_would_count_as_invalid(checked: dict) -> None:
    assert checked["wrapper"]["unmasked"] > 0  # uniform random actions do pick masked ones
    assert checked["wrapper"]["masked"] == 0
