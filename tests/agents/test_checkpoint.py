"""Agents as data only (msj_gym.agents.checkpoint): the shipped agents decide as they did before their
conversion, a checkpoint msj_gym writes loads without unpickling anything, and one that would need
unpickling is refused unless trusted by name."""

from __future__ import annotations

import base64
import hashlib
import json
import zipfile
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("sb3_contrib")
pytest.importorskip("safetensors")

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "agent_decisions.npz"


def _golden() -> dict[str, dict[str, np.ndarray]]:
    out: dict[str, dict[str, np.ndarray]] = {}
    with np.load(GOLDEN) as z:
        for key in z.files:
            name, _, field = key.partition("/")
            out.setdefault(name, {})[field] = z[key]
    return out


def test_every_shipped_network_agent_is_data_only_and_in_the_golden_file() -> None:
    from msj_gym.agents.checkpoint import checkpoint_kind
    from msj_gym.registry import shipped_agents

    networks = {
        name
        for name, path in shipped_agents().items()
        if json.loads(path.with_suffix(".json").read_text()).get("algo") == "maskable-ppo"
    }
    assert networks == set(_golden())
    for name in networks:
        assert checkpoint_kind(shipped_agents()[name]) == "data", name
        with zipfile.ZipFile(shipped_agents()[name]) as z:
            assert sorted(z.namelist()) == ["agent.json", "weights.safetensors"]


@pytest.mark.parametrize("name", sorted(_golden()))
def test_a_converted_shipped_agent_decides_as_the_pickled_one_did(name: str) -> None:
    import torch

    from msj_gym.agents.checkpoint import load_model
    from msj_gym.registry import shipped_agents
    from tests.golden.make_agent_decisions import decisions, weights_digest

    golden = _golden()[name]
    model = load_model(shipped_agents()[name])  # no trust given: data only
    assert weights_digest(model.policy) == str(golden["weights"])
    kwargs = {k: v for k, v in model.policy_kwargs.items() if k != "device"}
    assert json.dumps(kwargs, sort_keys=True) == str(golden["policy_kwargs"])
    probs, actions = decisions(model, golden["obs"], golden["masks"])
    # the weights are the same bit for bit (above); the probabilities are float32 sums whose order
    # depends on the CPU's instruction set (torch picks its kernels by the CPU at run time), so they
    # agree to a few units in the last place across machines, and the decisions exactly
    np.testing.assert_allclose(probs, golden["probs"], rtol=1e-6, atol=0)
    np.testing.assert_array_equal(actions, golden["actions"])
    if getattr(model.policy.mlp_extractor, "simulated", None) is None and name.startswith("rollout"):
        # the agent itself (predict, masks given), not only its network
        got = [
            int(model.predict(o, deterministic=True, action_masks=m)[0])
            for o, m in zip(golden["obs"], golden["masks"], strict=True)
        ]
        assert got == golden["actions"].tolist()
    assert torch.get_num_threads() >= 1


def _tiny_model():
    import gymnasium as gym
    from sb3_contrib import MaskablePPO

    import msj_gym  # noqa: F401

    env = gym.make("MSJ-v0", scenario="sf-fig2", load=0.7, num_arrivals=200)
    return MaskablePPO("MlpPolicy", env, seed=0, n_steps=64, batch_size=32, policy_kwargs={"net_arch": [8]})


def _hostile(path: Path, marker: Path) -> Path:
    """An SB3 checkpoint whose ``lr_schedule`` entry is a pickle that writes ``marker`` when loaded."""
    import cloudpickle

    class Payload:
        def __reduce__(self):
            return (exec, (f"open({str(marker)!r}, 'w').write('ran')",))

    _tiny_model().save(path)
    with zipfile.ZipFile(path) as z:
        members = {n: z.read(n) for n in z.namelist()}
    data = json.loads(members["data"])
    data["lr_schedule"] = {
        ":type:": "<class 'function'>",
        ":serialized:": base64.b64encode(cloudpickle.dumps(Payload())).decode(),
    }
    members["data"] = json.dumps(data).encode()
    with zipfile.ZipFile(path, "w") as z:
        for n, blob in members.items():
            z.writestr(n, blob)
    path.with_suffix(".json").write_text(
        json.dumps({"algo": "maskable-ppo", "env_id": "MSJ-v0", "env_kwargs": {"scenario": "sf-fig2"}})
    )
    return path


def test_a_hostile_checkpoint_is_refused_and_runs_nothing_unless_trusted(tmp_path: Path) -> None:
    from msj_gym.agents.checkpoint import PickleRefused, load_model
    from msj_gym.experiments.agents import load_agent

    marker = tmp_path / "marker"
    path = _hostile(tmp_path / "evil.zip", marker)
    with pytest.raises(PickleRefused, match=r"stable-baselines3 checkpoint.*--trust-pickle"):
        load_model(path)
    with pytest.raises(ValueError, match=r"--agent .*evil.zip.*unpickled"):
        load_agent(str(path))
    assert not marker.exists()
    # trusted by name: it is unpickled, and its pickle runs (the risk the flag names)
    load_model(path, allow_pickle=True)
    assert marker.read_text() == "ran"


def test_a_model_saved_and_converted_loads_without_trust_and_acts_the_same(tmp_path: Path) -> None:
    from msj_gym.agents.checkpoint import checkpoint_kind, convert_checkpoint, load_model, save_model

    model = _tiny_model()
    model.learn(64)
    model.save(tmp_path / "sb3.zip")
    convert_checkpoint(tmp_path / "sb3.zip", tmp_path / "data.zip", allow_pickle=True)
    save_model(model, tmp_path / "direct.zip")
    assert checkpoint_kind(tmp_path / "data.zip") == checkpoint_kind(tmp_path / "direct.zip") == "data"
    # the same model writes the same bytes
    save_model(model, tmp_path / "again.zip")
    assert (tmp_path / "again.zip").read_bytes() == (tmp_path / "direct.zip").read_bytes()
    env = model.get_env()
    obs = env.reset()
    masks = np.stack(env.env_method("action_masks"))
    for loaded in (load_model(tmp_path / "data.zip"), load_model(tmp_path / "direct.zip")):
        for _ in range(20):
            a = model.predict(obs, deterministic=True, action_masks=masks)[0]
            b = loaded.predict(obs, deterministic=True, action_masks=masks)[0]
            assert (a == b).all()
            obs, *_ = env.step(a)
            masks = np.stack(env.env_method("action_masks"))
        assert loaded.gamma == model.gamma and loaded.n_steps == model.n_steps


def _rewrite(path: Path, out: Path, edit) -> Path:
    with zipfile.ZipFile(path) as z:
        members = {n: z.read(n) for n in z.namelist()}
    edit(members)
    with zipfile.ZipFile(out, "w") as z:
        for n, blob in members.items():
            z.writestr(n, blob)
    return out


def _config_edit(**changes):
    def edit(members: dict[str, bytes]) -> None:
        config = json.loads(members["agent.json"])
        for key, value in changes.items():
            if key == "weights":
                members["weights.safetensors"] = value(members["weights.safetensors"])
                config["weights_sha256"] = hashlib.sha256(members["weights.safetensors"]).hexdigest()
            else:
                config[key] = value
        members["agent.json"] = json.dumps(config).encode()

    return edit


def _flip_byte(blob: bytes) -> bytes:
    return blob[:-1] + bytes([blob[-1] ^ 1])


TAMPERED = [
    ("weights-edited", lambda m: m.update({"weights.safetensors": _flip_byte(m["weights.safetensors"])}),
     "do not match the digest"),
    ("policy-outside-the-table", _config_edit(policy="os:system"), "policy 'os:system' is not one of"),
    ("algo-unknown", _config_edit(algo="evil"), "algo 'evil' is not one of"),
    ("setting-that-is-a-method", _config_edit(settings={"predict": 1}), "'predict' is not a setting"),
    ("format-version", _config_edit(version=99), "version 99"),
    ("config-not-json", lambda m: m.update({"agent.json": b"{nope"}), "is not JSON"),
    ("weights-not-safetensors", _config_edit(weights=lambda b: b"x" * 64), "do not read as safetensors"),
    ("net-arch-huge", _config_edit(policy_kwargs={"net_arch": [2**40]}), "net_arch"),
    ("activation-by-path", _config_edit(policy_kwargs={"activation_fn": {"activation": "os.system"}}),
     "activation_fn"),
    ("rollout-buffer-huge", _config_edit(settings={"n_steps": 10**12}), "a buffer of"),
    ("n-envs-not-a-count", _config_edit(settings={"n_envs": "many"}), "n_envs 'many'"),
    ("log-folder-set", _config_edit(settings={"tensorboard_log": "/tmp/x"}), "not a setting a checkpoint"),
]  # fmt: skip


def _selection_edit(field: str, value):
    def edit(members: dict[str, bytes]) -> None:
        config = json.loads(members["agent.json"])
        config["policy_kwargs"]["simulated_selection"][field] = value
        members["agent.json"] = json.dumps(config).encode()

    return edit


SELECTION_TAMPERED = [
    ("selection-arrivals", _selection_edit("arrivals", 10**12), "simulated_selection.arrivals"),
    ("selection-seeds", _selection_edit("seeds", list(range(1000))), "simulated_selection.seeds"),
    ("selection-rehearse", _selection_edit("rehearse", 10**9), "simulated_selection.rehearse"),
    ("selection-base-elsewhere", _selection_edit("fallbacks", ["os:system"]), "--trust-imports"),
]


@pytest.mark.parametrize(
    ("edit", "needle"), [c[1:] for c in SELECTION_TAMPERED], ids=[c[0] for c in SELECTION_TAMPERED]
)
def test_a_generalist_config_asking_for_unbounded_planning_or_imports_is_one_line(edit, needle, tmp_path):
    from msj_gym.agents.checkpoint import load_model
    from msj_gym.registry import shipped_agents

    bad = _rewrite(shipped_agents()["generalist"], tmp_path / "bad.zip", edit)
    with pytest.raises(ValueError) as info:
        load_model(bad)
    line = str(info.value)
    assert "\n" not in line and needle in line and "bad.zip" in line, line


@pytest.mark.parametrize(("edit", "needle"), [c[1:] for c in TAMPERED], ids=[c[0] for c in TAMPERED])
def test_a_tampered_data_checkpoint_is_one_line(edit, needle: str, tmp_path: Path) -> None:
    from msj_gym.agents.checkpoint import load_model
    from msj_gym.registry import shipped_agents

    bad = _rewrite(shipped_agents()["rollout-sf-fig2-0.7"], tmp_path / "bad.zip", edit)
    with pytest.raises(ValueError) as info:
        load_model(bad)
    line = str(info.value)
    assert "\n" not in line and needle in line and "bad.zip" in line, line
