"""Agents stored as data only: weights in safetensors, everything else as JSON; loading runs no code.

A stable-baselines3 checkpoint (``model.save``) keeps, beside its weights, a ``data`` entry whose
spaces, policy class and schedules are pickles: loading one (``MaskablePPO.load``) unpickles them, and a
pickle can run any command. msj_gym writes and reads agents in a form that holds data only, in the same
``.zip`` name:

* ``agent.json``: the algorithm (``maskable-ppo``, ``ppo``, ``a2c`` or ``dqn``), the policy class by a
  name of :data:`POLICIES` (a fixed table of SB3's classes and the class-set networks of
  :mod:`msj_gym.agents.set_policy`, never a path read from the file), its keywords, the observation and
  action spaces described as data, the algorithm's settings (numbers and strings), and the SHA-256 of
  the weights;
* ``weights.safetensors``: the policy's state dict and the spaces' bounds (the safetensors format is a
  JSON header and raw tensor bytes: it cannot hold code).

:func:`load_model` rebuilds the model as stable-baselines3's own ``load`` does (the algorithm's
constructor without an env, its settings, ``_setup_model``) and puts the weights back with every key
matched; the optimizer's state is not kept (msj_gym trains its agents anew, never from a saved
optimizer). A checkpoint in stable-baselines3's format is refused in one line that says why, unless the
caller trusts it by name (``allow_pickle=True``, ``--trust-pickle``: :mod:`msj_gym.trust`); one it
trusts can be converted once (``python -m msj_gym.agents.checkpoint --trust-pickle OLD.zip --out
NEW.zip``), keeping every decision (tested on the shipped agents).
"""

from __future__ import annotations

import hashlib
import importlib
import json
import math
import sys
import zipfile
from pathlib import Path
from typing import Any

__all__ = [
    "ALGOS",
    "CONFIG",
    "POLICIES",
    "WEIGHTS",
    "PickleRefused",
    "checkpoint_kind",
    "convert_checkpoint",
    "load_model",
    "save_model",
    "write_checkpoint",
]

CONFIG = "agent.json"
WEIGHTS = "weights.safetensors"
FORMAT = "msj-gym-agent"
VERSION = 1

#: The algorithms a data-only checkpoint may name: ``algo`` -> (module, class).
ALGOS: dict[str, tuple[str, str]] = {
    "maskable-ppo": ("sb3_contrib", "MaskablePPO"),
    "ppo": ("stable_baselines3", "PPO"),
    "a2c": ("stable_baselines3", "A2C"),
    "dqn": ("stable_baselines3", "DQN"),
}
#: The policy classes a data-only checkpoint may name, by a name of this table only.
POLICIES: dict[str, str] = {
    "maskable-actor-critic": "sb3_contrib.common.maskable.policies:MaskableActorCriticPolicy",
    "actor-critic": "stable_baselines3.common.policies:ActorCriticPolicy",
    "dqn": "stable_baselines3.dqn.policies:DQNPolicy",
    "class-set-maskable": "msj_gym.agents.set_policy:ClassSetMaskablePolicy",
    "class-set": "msj_gym.agents.set_policy:ClassSetPolicy",
}
# activation functions a policy's keywords may name (torch.nn classes, by name)
_ACTIVATIONS = ("ReLU", "Tanh", "LeakyReLU", "ELU", "GELU", "SiLU", "Sigmoid")
# entries of an algorithm's state that are rebuilt from its settings (schedules, buffer classes) or
# belong to a training run in progress (its last observation, episode buffers): not stored
_REBUILT = frozenset(
    {
        "policy_class",
        "observation_space",
        "action_space",
        "lr_schedule",
        "rollout_buffer_class",
        "replay_buffer_class",
        "exploration_schedule",
        "_last_obs",
        "_last_episode_starts",
        "_last_original_obs",
        "ep_info_buffer",
        "ep_success_buffer",
        "policy_kwargs",
        "batch_norm_stats",  # a DQN's, gathered from its networks when it is set up
        "batch_norm_stats_target",
    }
)
# the algorithm's attributes that say where it runs or writes, never read from a file
_NOT_SETTINGS = frozenset(
    {"env", "device", "tensorboard_log", "_custom_logger", "_logger", "_vec_normalize_env"}
)
_SCHEDULES = ("learning_rate", "clip_range", "clip_range_vf")  # a number, or a schedule kept at its start
MAX_CONFIG_BYTES = 4 << 20
MAX_WEIGHTS_BYTES = 256 << 20  # the largest shipped agent holds 1.2 MB of weights
#: Per system a class-set agent meets, what its simulated selection may ask of a file's config:
#: ten times what the shipped generalists ask (20,000 arrivals on 4 seeds, rehearsals of 10,000).
SELECTION_LIMITS = {"arrivals": 200_000, "seeds": 16, "rehearse": 200_000, "cache": 1 << 20}
#: The algorithm's settings that size its buffers (allocated when a model is set up, before any
#: weight is read): a file may not ask for more entries than this in all.
MAX_BUFFER_ENTRIES = 1 << 28


class PickleRefused(ValueError):
    """A checkpoint that would be unpickled to load, refused (see the module docstring)."""


def checkpoint_kind(path: str | Path) -> str:
    """``"data"`` (this module's form), ``"pickle"`` (stable-baselines3's: a ``data`` entry) or
    ``"other"`` (no zip, or a zip of neither form: another algorithm's, e.g. ``weights.json``)."""
    try:
        with zipfile.ZipFile(path) as z:
            names = set(z.namelist())
    except (OSError, zipfile.BadZipFile, ValueError):
        return "other"
    if CONFIG in names and WEIGHTS in names:
        return "data"
    return "pickle" if "data" in names else "other"


#: The policies of :data:`POLICIES` whose forward pass runs msj_gym's simulated selection: their
#: decisions depend on the agents' and the heuristics' code.
SIMULATING_POLICIES = frozenset({"class-set-maskable", "class-set"})


def network_code(path: str | Path) -> tuple[str, ...]:
    """The source files a data-only network checkpoint's decisions run in msj_gym, as its config
    declares them: how this module reads it and its policy class's module; for a policy of
    :data:`SIMULATING_POLICIES`, or where the config cannot be read (a pickled checkpoint declares
    none), every module of the agents and the policies and the registry."""
    # the package's folder, where this module is msj_gym/agents/checkpoint.py: the agents' folder is a link
    # to the top-level agents/ in a checkout, and a file is named as the package imports it
    root = Path(__file__).parents[1].resolve()
    try:
        with zipfile.ZipFile(path) as z:
            policy = json.loads(z.read(CONFIG))["policy"]
        module = POLICIES[policy].partition(":")[0]
    except (OSError, KeyError, ValueError, TypeError, zipfile.BadZipFile):
        policy, module = None, ""
    if policy is None or policy in SIMULATING_POLICIES:
        files = {*root.glob("agents/*.py"), *root.glob("baselines/*.py"), root / "registry.py"}
    else:  # stable-baselines3 runs the network: msj_gym's part is how it is read and its class
        files = {root / "agents" / Path(__file__).name}
        if module.startswith("msj_gym."):
            files.add(root.parent.joinpath(*module.split(".")).with_suffix(".py"))
    return tuple(sorted(str(f) for f in files if f.is_file()))


def pickle_refusal(what: str) -> str:
    """The one line that refuses a stable-baselines3 checkpoint ``what`` (names the file)."""
    return (
        f"{what} is a stable-baselines3 checkpoint, whose 'data' entry is unpickled to load it, and "
        "unpickling can run any code: load it only if you trust where it came from, with --trust-pickle "
        "(allow_pickle=True), or convert it once to msj_gym's data-only form with python -m "
        "msj_gym.agents.checkpoint --trust-pickle FILE"
    )


def _plain(value: Any) -> bool:
    """JSON data that reads back as itself: None, bool, int, finite float, str, and lists and string-keyed
    dicts of them."""
    if value is None or isinstance(value, bool | int | str):
        return True
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, list | tuple):
        return all(_plain(v) for v in value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and _plain(v) for k, v in value.items())
    return False


def _policy_name(cls: type) -> str:
    for name, entry in POLICIES.items():
        module, _, attr = entry.partition(":")
        if cls.__module__ == module and cls.__name__ == attr:
            return name
    # a subclass of a table class defined elsewhere would load as another class: refused
    raise ValueError(
        f"policy class {cls.__module__}.{cls.__name__}: not one msj_gym stores as data "
        f"({', '.join(POLICIES)})"
    )


def _encode_kwargs(kwargs: dict[str, Any]) -> dict[str, Any]:
    """A policy's keywords as JSON: an activation function by name; anything else must be data."""
    out: dict[str, Any] = {}
    for key, value in kwargs.items():
        if key == "device":
            continue
        if key == "activation_fn" and isinstance(value, type):
            if value.__module__.startswith("torch.nn") and value.__name__ in _ACTIVATIONS:
                out[key] = {"activation": value.__name__}
                continue
        if not _plain(value):
            raise ValueError(f"policy_kwargs[{key!r}] = {value!r:.60}: not data msj_gym can store")
        out[key] = value
    return out


MAX_WIDTH = 1 << 16  # units of a layer: a file naming more would allocate gigabytes before any check


def _widths(value: Any) -> list[int]:
    if isinstance(value, bool):
        return []
    if isinstance(value, int):
        return [value]
    if isinstance(value, list):
        return [w for v in value for w in _widths(v)]
    if isinstance(value, dict):
        return [w for v in value.values() for w in _widths(v)]
    return []


def _decode_kwargs(kwargs: Any, where: str) -> dict[str, Any]:
    if not isinstance(kwargs, dict) or not _plain(kwargs):
        raise ValueError(f"{where}: policy_kwargs: expected a JSON object")
    for key in ("net_arch", "hidden", "heads", "attention_layers"):
        wide = [w for w in _widths(kwargs.get(key)) if not 0 <= w <= MAX_WIDTH]
        if wide:
            raise ValueError(f"{where}: policy_kwargs.{key}: {wide[0]} units, expected 0 to {MAX_WIDTH}")
    out = dict(kwargs)
    act = out.get("activation_fn")
    if act is not None:
        name = act.get("activation") if isinstance(act, dict) else None
        if name not in _ACTIVATIONS:
            raise ValueError(f"{where}: policy_kwargs.activation_fn: expected one of {list(_ACTIVATIONS)}")
        import torch

        out["activation_fn"] = getattr(torch.nn, name)
    return out


def _encode_space(space: Any, prefix: str, tensors: dict[str, Any]) -> dict[str, Any]:
    import numpy as np
    import torch
    from gymnasium import spaces

    if isinstance(space, spaces.Box):
        tensors[f"{prefix}.low"] = torch.from_numpy(np.ascontiguousarray(space.low))
        tensors[f"{prefix}.high"] = torch.from_numpy(np.ascontiguousarray(space.high))
        return {"type": "box", "shape": list(space.shape), "dtype": str(space.dtype)}
    if isinstance(space, spaces.Discrete):
        return {"type": "discrete", "n": int(space.n), "start": int(space.start)}
    if isinstance(space, spaces.MultiDiscrete):
        return {"type": "multi-discrete", "nvec": space.nvec.tolist(), "start": space.start.tolist()}
    if isinstance(space, spaces.MultiBinary):
        return {"type": "multi-binary", "n": np.asarray(space.n).tolist()}
    if isinstance(space, spaces.Dict):
        return {
            "type": "dict",
            "spaces": {k: _encode_space(s, f"{prefix}.{k}", tensors) for k, s in space.spaces.items()},
        }
    raise ValueError(f"{prefix}: a {type(space).__name__} space is not one msj_gym stores as data")


def _decode_space(doc: Any, prefix: str, tensors: dict[str, Any], where: str) -> Any:
    import numpy as np
    from gymnasium import spaces

    kind = doc.get("type") if isinstance(doc, dict) else None
    try:
        if kind == "box":
            dtype = np.dtype(str(doc["dtype"]))
            if dtype.kind not in "fiu":
                raise ValueError(f"dtype {dtype}")
            low, high = tensors[f"{prefix}.low"].numpy(), tensors[f"{prefix}.high"].numpy()
            if low.size > MAX_WIDTH * 256:
                raise ValueError(f"{low.size} entries")
            if list(low.shape) != list(doc["shape"]) or low.shape != high.shape:
                raise ValueError("bounds of another shape")
            return spaces.Box(low=low.astype(dtype), high=high.astype(dtype), dtype=dtype)
        if kind == "discrete":
            if not 0 < int(doc["n"]) <= MAX_WIDTH * 256:
                raise ValueError(f"{doc['n']} actions")
            return spaces.Discrete(int(doc["n"]), start=int(doc["start"]))
        if kind == "multi-discrete":
            return spaces.MultiDiscrete(np.array(doc["nvec"]), start=np.array(doc["start"]))
        if kind == "multi-binary":
            return spaces.MultiBinary(doc["n"])
        if kind == "dict" and isinstance(doc.get("spaces"), dict):
            return spaces.Dict(
                {k: _decode_space(s, f"{prefix}.{k}", tensors, where) for k, s in doc["spaces"].items()}
            )
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise ValueError(f"{where}: {prefix} is not a space msj_gym reads ({exc})") from None
    raise ValueError(f"{where}: {prefix}: unknown space type {kind!r}")


def _settings(model: Any) -> dict[str, Any]:
    """The algorithm's settings as SB3's ``save`` would keep them, as JSON data (schedules at their
    start, a DQN's training frequency as ``[n, unit]``)."""
    data = model.__dict__.copy()
    exclude = set(model._excluded_save_params())
    names, variables = model._get_torch_save_params()
    exclude.update(n.split(".")[0] for n in [*names, *variables])
    out: dict[str, Any] = {}
    for key, value in data.items():
        if key in exclude or key in _REBUILT or key in _NOT_SETTINGS:
            continue
        if key in _SCHEDULES and callable(value):
            value = float(value(1.0))
        elif key == "train_freq" and hasattr(value, "frequency"):
            value = [int(value.frequency), str(value.unit.value)]
        if _plain(value):
            out[key] = list(value) if isinstance(value, tuple) else value
    return out


def _digest(blob: bytes) -> str:
    return hashlib.sha256(blob).hexdigest()


def save_model(model: Any, path: str | Path, algo: str | None = None) -> None:
    """Write ``model`` (an SB3 algorithm of :data:`ALGOS`) to ``path`` in the data-only form (see the
    module docstring). ``algo``: its name in :data:`ALGOS` (default: found from its class)."""
    from safetensors.torch import save

    name = algo or next((a for a, (_m, cls) in ALGOS.items() if type(model).__name__ == cls), None)
    if name not in ALGOS:
        raise ValueError(f"model: a {type(model).__name__}, not one of {', '.join(ALGOS)}")
    tensors: dict[str, Any] = {}
    observation = _encode_space(model.observation_space, "observation_space", tensors)
    action = _encode_space(model.action_space, "action_space", tensors)
    for key, value in model.policy.state_dict().items():
        tensors[f"policy.{key}"] = value.detach().cpu().contiguous()
    blob = save(tensors)
    config = {
        "format": FORMAT,
        "version": VERSION,
        "algo": name,
        "policy": _policy_name(type(model.policy)),
        "policy_kwargs": _encode_kwargs(dict(model.policy_kwargs)),
        "observation_space": observation,
        "action_space": action,
        "settings": _settings(model),
        "weights_sha256": _digest(blob),
    }
    text = json.dumps(config, indent=1, sort_keys=True)
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as z:
        # fixed dates: the same model writes the same bytes
        z.writestr(zipfile.ZipInfo(CONFIG, date_time=(1980, 1, 1, 0, 0, 0)), text)
        z.writestr(zipfile.ZipInfo(WEIGHTS, date_time=(1980, 1, 1, 0, 0, 0)), blob)


def write_checkpoint(model: Any, path: Path, meta: dict[str, Any], algo: str | None = None) -> None:
    """Save ``model`` to ``path`` (:func:`save_model`) and ``meta`` as the ``.json`` beside it, each
    whole or not at all: a full disk leaves no truncated checkpoint under the name."""
    from msj_gym.atomic import atomic_path, atomic_write_text

    with atomic_path(path) as tmp:
        save_model(model, tmp, algo=algo)
    atomic_write_text(path.with_suffix(".json"), json.dumps(meta, indent=2) + "\n")


def _read(z: zipfile.ZipFile, name: str, limit: int, where: str) -> bytes:
    info = z.getinfo(name)
    if info.file_size > limit:
        raise ValueError(f"{where}: its {name} holds {info.file_size} bytes, more than {limit}")
    return z.read(info)


def _read_config(path: Path, where: str) -> tuple[dict[str, Any], bytes]:
    """The checkpoint's config, checked (an msj_gym agent of this format version, whose weights match
    its digest, of a known algorithm and policy), and its weights' bytes."""
    try:
        with zipfile.ZipFile(path) as z:
            text = _read(z, CONFIG, MAX_CONFIG_BYTES, where)
            blob = _read(z, WEIGHTS, MAX_WEIGHTS_BYTES, where)
    except (OSError, zipfile.BadZipFile, KeyError, RuntimeError) as exc:
        raise ValueError(f"{where}: cannot be read ({type(exc).__name__}: {exc})") from None
    try:
        config = json.loads(text)
    except (ValueError, RecursionError):
        raise ValueError(f"{where}: its {CONFIG} is not JSON") from None
    if not isinstance(config, dict) or config.get("format") != FORMAT:
        raise ValueError(f"{where}: its {CONFIG} is not an msj_gym agent's")
    if config.get("version") != VERSION:
        raise ValueError(
            f"{where}: written as version {config.get('version')!r} of the agent format; this msj_gym "
            f"reads version {VERSION}"
        )
    if config.get("weights_sha256") != _digest(blob):
        raise ValueError(f"{where}: its weights do not match the digest in its {CONFIG} (damaged or edited)")
    algo, policy = config.get("algo"), config.get("policy")
    if algo not in ALGOS:
        raise ValueError(f"{where}: algo {algo!r} is not one of {', '.join(ALGOS)}")
    if policy not in POLICIES:
        raise ValueError(f"{where}: policy {policy!r} is not one of {', '.join(POLICIES)}")
    return config, blob


def _check_selection(selection: dict[str, Any], where: str) -> None:
    """A simulated selector's settings: the policies it simulates, imported by name, only as
    :mod:`msj_gym.trust` allows; its sizes within :data:`SELECTION_LIMITS`."""
    from msj_gym.trust import check_imports

    for field in ("bases", "fallbacks"):
        check_imports(where, f"simulated_selection.{field}", selection.get(field))
    advisors = (selection.get("env_kwargs") or {}).get("advisor")
    check_imports(where, "simulated_selection.env_kwargs.advisor", advisors)
    # the selector simulates every new system it meets: a file may not make that unbounded
    for field, most in SELECTION_LIMITS.items():
        value = selection.get(field)
        size = len(value) if isinstance(value, list) else value
        if isinstance(size, int) and size > most:
            raise ValueError(
                f"{where}: simulated_selection.{field}: {size}, more than {most} (a plan per system "
                "of that size is not what msj_gym writes)"
            )


def _put_settings(model: Any, settings: Any, where: str, cls_name: str) -> None:
    """The algorithm's settings from the config onto ``model``: only what its constructor set as a
    plain value, so that a file cannot put anything else (a method, a buffer, a callable) on the
    model, nor where it writes or runs."""
    if not isinstance(settings, dict) or not _plain(settings):
        raise ValueError(f"{where}: settings: expected a JSON object of numbers and strings")
    for key, value in settings.items():
        if key in _NOT_SETTINGS:
            if value is None:
                continue
            raise ValueError(f"{where}: settings: {key!r} is not a setting a checkpoint may carry")
        if key not in model.__dict__ or not (model.__dict__[key] is None or _plain(model.__dict__[key])):
            if key in _SCHEDULES or key in ("train_freq", "n_envs"):  # set from an env when there is one
                pass
            else:
                raise ValueError(f"{where}: settings: {key!r} is not a setting of {cls_name}")
        model.__dict__[key] = tuple(value) if key == "train_freq" and isinstance(value, list) else value


def _load_data(
    path: Path, where: str, device: str, overrides: dict[str, Any] | None
) -> tuple[Any, dict[str, Any]]:
    from safetensors import SafetensorError
    from safetensors.torch import load

    config, blob = _read_config(path, where)
    try:
        tensors = load(blob)
    except (SafetensorError, ValueError, RuntimeError) as exc:
        raise ValueError(f"{where}: its weights do not read as safetensors ({exc})") from None
    over = dict(overrides or {})
    observation = over.pop("observation_space", None) or _decode_space(
        config.get("observation_space"), "observation_space", tensors, where
    )
    action = over.pop("action_space", None) or _decode_space(
        config.get("action_space"), "action_space", tensors, where
    )
    policy_kwargs = over.pop("policy_kwargs", None)
    if policy_kwargs is None:
        policy_kwargs = _decode_kwargs(config.get("policy_kwargs", {}), where)
    selection = policy_kwargs.get("simulated_selection")
    if isinstance(selection, dict):
        _check_selection(selection, where)
    if over:
        raise ValueError(
            f"overrides: only observation_space, action_space, policy_kwargs, got {sorted(over)}"
        )
    module, cls_name = ALGOS[config["algo"]]
    try:
        algo_cls = getattr(importlib.import_module(module), cls_name)
    except ImportError:
        from ..extras import install_hint

        raise ValueError(f"{where}: {module} is not installed ({install_hint('rl')})") from None
    pmodule, _, pname = POLICIES[config["policy"]].partition(":")
    policy_cls = getattr(importlib.import_module(pmodule), pname)
    model = algo_cls(policy=policy_cls, env=None, device=device, _init_setup_model=False)
    _put_settings(model, config.get("settings", {}), where, cls_name)
    model.observation_space = observation
    model.action_space = action
    model.policy_kwargs = policy_kwargs
    _check_buffers(model, where)
    try:
        model._setup_model()
        state = {k.removeprefix("policy."): v for k, v in tensors.items() if k.startswith("policy.")}
        model.policy.load_state_dict(state, strict=True)
    except (RuntimeError, ValueError, TypeError, KeyError, AssertionError, MemoryError) as exc:
        what = " ".join(str(exc).split())[:300]
        raise ValueError(
            f"{where}: its weights do not fit its policy ({type(exc).__name__}: {what})"
        ) from None
    return model, config


def _check_buffers(model: Any, where: str) -> None:
    """Refuse settings whose rollout or replay buffer (set up with the model) would hold more than
    :data:`MAX_BUFFER_ENTRIES` numbers."""
    import numpy as np
    from gymnasium import spaces

    space = model.observation_space
    parts = space.spaces.values() if isinstance(space, spaces.Dict) else [space]
    per_step = sum(int(np.prod(getattr(s, "shape", None) or (1,))) for s in parts) + 8
    for key in ("n_steps", "buffer_size", "batch_size", "n_envs"):
        value = model.__dict__.get(key)
        if value is not None and not (isinstance(value, int) and not isinstance(value, bool) and value >= 1):
            raise ValueError(f"{where}: settings: {key} {value!r}: expected a positive integer")
    steps = max(int(model.__dict__.get("n_steps") or 1), int(model.__dict__.get("buffer_size") or 1))
    entries = steps * int(model.__dict__.get("n_envs") or 1) * per_step
    if entries > MAX_BUFFER_ENTRIES:
        raise ValueError(
            f"{where}: settings: a buffer of {entries} numbers (n_steps, buffer_size, n_envs), more than "
            f"{MAX_BUFFER_ENTRIES}"
        )


def load_model(
    path: str | Path,
    *,
    algo: str | None = None,
    allow_pickle: bool = False,
    device: str = "cpu",
    overrides: dict[str, Any] | None = None,
    where: str | None = None,
) -> Any:
    """The SB3 model stored at ``path``. The data-only form loads without running code; a checkpoint in
    stable-baselines3's own format is a :class:`PickleRefused` error (one line) unless ``allow_pickle``
    or the process trusts pickles (:mod:`msj_gym.trust`), and then loads with SB3's ``load`` as
    ``algo`` (a name of :data:`ALGOS`; default: each in turn). ``overrides`` replaces the stored
    ``observation_space``, ``action_space`` or ``policy_kwargs`` (SB3's ``custom_objects``). Every
    other problem is a one-line ``ValueError`` naming ``where`` (default: the path)."""
    from msj_gym import trust

    path = Path(path)
    where = where or repr(str(path))
    kind = checkpoint_kind(path)
    if kind == "data":
        model, config = _load_data(path, where, device, overrides)
        if algo is not None and config["algo"] != algo:
            raise ValueError(f"{where}: holds a {config['algo']} agent, not {algo}")
        return model
    if kind != "pickle":
        raise ValueError(
            f"{where}: does not load: not an agent checkpoint (no {CONFIG} and {WEIGHTS}, nor SB3's data)"
        )
    if not (allow_pickle or trust.granted(trust.PICKLE)):
        raise PickleRefused(pickle_refusal(where))
    return _load_pickled(path, algo, device, overrides, where)


def _load_pickled(
    path: Path, algo: str | None, device: str, overrides: dict[str, Any] | None, where: str
) -> Any:
    names = [algo] if algo is not None else list(ALGOS)
    errors = []
    for name in names:
        if name not in ALGOS:
            raise ValueError(f"{where}: unknown algo {name!r}; known: {', '.join(ALGOS)}")
        module, cls_name = ALGOS[name]
        try:
            algo_cls = getattr(importlib.import_module(module), cls_name)
        except ImportError:
            from ..extras import install_hint

            errors.append(f"{name}: {module} is not installed ({install_hint('rl')})")
            continue
        try:
            return algo_cls.load(path, device=device, custom_objects=overrides)
        except Exception as exc:  # SB3 raises many kinds on a file that is not its checkpoint
            errors.append(f"{name}: {type(exc).__name__}: {' '.join(str(exc).split())[:200]}")
    raise ValueError(f"{where}: does not load as a stable-baselines3 checkpoint ({'; '.join(errors)})")


def convert_checkpoint(
    source: str | Path, out: str | Path, *, allow_pickle: bool = False, algo: str | None = None
) -> Path:
    """Rewrite the checkpoint ``source`` in the data-only form at ``out`` (which may be ``source``):
    its policy's weights, class, keywords and spaces unchanged, so that it decides as before. A
    stable-baselines3 checkpoint is unpickled to read it, so ``allow_pickle`` must say it is trusted."""
    from msj_gym.atomic import atomic_path

    model = load_model(source, algo=algo, allow_pickle=allow_pickle)
    out = Path(out)
    with atomic_path(out) as tmp:
        save_model(model, tmp, algo=algo)
    again = load_model(out)
    mine, theirs = model.policy.state_dict(), again.policy.state_dict()
    if mine.keys() != theirs.keys() or any(not (mine[k] == theirs[k]).all() for k in mine):
        raise RuntimeError(f"{out}: the converted weights differ from the source's")
    return out


def main(argv: list[str] | None = None) -> Path:
    from msj_gym.agents._cli import ArgumentParser

    ap = ArgumentParser(
        prog="python -m msj_gym.agents.checkpoint",
        description="Convert a stable-baselines3 checkpoint you trust to msj_gym's data-only form.",
    )
    ap.add_argument("checkpoint", type=Path)
    ap.add_argument("--out", type=Path, default=None, help="where to write it (default: in place)")
    ap.add_argument(
        "--trust-pickle",
        action="store_true",
        help="unpickle the checkpoint to read it: it can run any code, so only for a file you trust",
    )
    ap.add_argument("--algo", choices=sorted(ALGOS), default=None, help="its algorithm (default: tried)")
    args = ap.parse_args(argv)
    if not args.checkpoint.is_file():
        raise ValueError(f"checkpoint {str(args.checkpoint)!r}: no such file")
    out = args.out or args.checkpoint
    if out.suffix != ".zip":
        raise ValueError(f"--out {str(out)!r}: expected a .zip path")
    if checkpoint_kind(args.checkpoint) == "data":
        print(f"{args.checkpoint}: data-only already", file=sys.stderr)
        if out != args.checkpoint:
            convert_checkpoint(args.checkpoint, out)
        return out
    convert_checkpoint(args.checkpoint, out, allow_pickle=args.trust_pickle, algo=args.algo)
    print(f"{args.checkpoint} -> {out} (data only)")
    return out


if __name__ == "__main__":
    from msj_gym.agents._cli import run_script

    sys.exit(run_script("python -m msj_gym.agents.checkpoint", main))
