"""Learned schedulers as leaderboard entrants: load an agent from a spec and run it through the env.

An agent spec is either

* the name of an agent shipped with the package (``agents/checkpoints/<name>.zip``, e.g.
  ``maskable-ppo-sf-fig2-0.7``; :func:`shipped_agents` lists them), usable from any directory;
* the path of a checkpoint (``.zip``): msj_gym's data-only form (:mod:`msj_gym.agents.checkpoint`,
  weights in safetensors and the rest as JSON, loaded without running any code), or a stable-baselines3
  checkpoint, which is unpickled to load and so refused unless pickles are trusted (``allow_pickle``,
  ``--trust-pickle``: :mod:`msj_gym.trust`). The algorithm, the env id and the env keywords
  it was trained with come from the ``.json`` beside it (written by ``agents/train.py`` and
  ``agents/improve.py``), and are checked: an env other than those of :data:`AGENT_ENV_IDS`
  (``MSJ-v0`` and ``MSJPreemptive-v0`` on the MSJ model, ``MSJMoldable-v0`` on the moldable loss
  system, ``CompatAssign-v0`` on compatibility graphs) or a keyword its env does not take is refused.
  A checkpoint without its ``.json`` is refused too, unless loaded with ``bare=True``
  (``--bare-agents`` on the command line): the algorithms MaskablePPO, PPO, A2C and DQN are then
  tried in turn and the env's defaults are used. A ``.json`` (or a data-only checkpoint's config) may
  name registered policy ids (advisors, bases) and msj_gym's own classes only, unless imports are
  trusted (``allow_imports``, ``--trust-imports``); or
* ``module:attr``: an importable object with an SB3-style ``predict`` (``action_masks=`` optional), or
  a callable that returns one when given the environment (e.g. ``msj_gym.env:RandomAgent``); it acts in
  the env of the scenario's model (:data:`MODEL_ENV_IDS`).

An agent runs on a scenario of the model of its env only (:func:`check_agent` refuses it otherwise,
naming its ``env_id``). A run replaces the training workload and run length by the point's (scenario,
load or system size, arrivals, warm-up, seed) and keeps every other env keyword (observation layout,
windows), so the agent sees the observation it was trained on, and the same job stream as every
policy for that seed.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..core.workload import WorkloadLike

__all__ = [
    "AGENT_ENV_IDS",
    "ENV_MODELS",
    "MODEL_ENV_IDS",
    "AgentError",
    "AgentSpec",
    "agent_files",
    "agent_label",
    "check_agent",
    "load_agent",
    "play_agent",
    "read_agent_metadata",
    "run_agent",
    "shipped_agents",
]

#: The model each agent env acts on.
ENV_MODELS: dict[str, str] = {
    "MSJ-v0": "msj",
    "MSJPreemptive-v0": "msj",
    "MSJMoldable-v0": "moldable",
    "CompatAssign-v0": "compatibility",
}
AGENT_ENV_IDS = tuple(ENV_MODELS)
#: The env an agent given as ``module:attr`` (no metadata) acts in, per model of the scenario.
MODEL_ENV_IDS: dict[str, str] = {
    "msj": "MSJ-v0",
    "moldable": "MSJMoldable-v0",
    "compatibility": "CompatAssign-v0",
}

# per model, the env keywords that a leaderboard point sets; the rest come from the agent's training
_POINT_KEYS: dict[str, tuple[str, ...]] = {
    "msj": ("scenario", "num_servers", "load", "arrival_rate", "num_arrivals", "horizon", "warmup"),
    "moldable": (
        "scenario",
        "system",
        "num_servers",
        "speed_up",
        "arrival_rate",
        "alpha",
        "beta",
        "service_time",
        "num_arrivals",
        "warmup",
    ),
    "compatibility": ("scenario", "load", "distribution", "num_arrivals", "warmup"),
}
# the envs whose episodes end at an arrival cap (``max_arrivals``): an agent's run there is held to the
# cap of a heuristic's run of the same length, unless its training set one
_ARRIVAL_CAPPED = ("MSJ-v0", "MSJPreemptive-v0")
_SB3_ALGOS = (
    ("maskable-ppo", "sb3_contrib", "MaskablePPO"),
    ("ppo", "stable_baselines3", "PPO"),
    ("a2c", "stable_baselines3", "A2C"),
    ("dqn", "stable_baselines3", "DQN"),
)


class AgentSpec:
    """A loaded agent: its ``predict`` object, the env id and the env keywords it expects. An agent
    given as ``module:attr`` has no env of its own (``any_env``): it acts in the scenario's model's."""

    def __init__(
        self,
        spec: str,
        model: Any,
        env_id: str,
        env_kwargs: dict[str, Any],
        factory: bool,
        any_env: bool = False,
        native: tuple[str, dict[str, Any]] | None = None,
        notes: tuple[str, ...] = (),
    ) -> None:
        self.spec = spec
        self.model = model
        self.env_id = env_id
        self.env_kwargs = env_kwargs
        self.factory = factory  # model is a callable env -> agent
        self.any_env = any_env
        # (policy spec, params) whose native runs are the agent's episodes through its env, run for run
        self.native = native
        self.notes = notes  # how it decides, for the leaderboard's kind column ("plans with the model")

    def env_id_for(self, model: str) -> str:
        """The env the agent acts in on a scenario of ``model`` (``msj``, ``moldable``, ``compatibility``)."""
        return MODEL_ENV_IDS[model] if self.any_env else self.env_id

    def make_env(
        self,
        scenario: str | WorkloadLike,
        build: dict[str, Any],
        num_arrivals: int,
        warmup: int,
        model: str = "msj",
    ) -> Any:
        """The agent's env on ``scenario`` (a name, a file or a workload) of ``model`` with ``build``'s
        keywords (a point's, as its track gives them) and this run length; every other keyword is the
        agent's own."""
        import gymnasium as gym

        from ..registration import register_envs

        register_envs()
        env_id = self.env_id_for(model)
        keys = _POINT_KEYS[ENV_MODELS[env_id]]
        kwargs = {k: v for k, v in self.env_kwargs.items() if k not in keys}
        kwargs.update(build, scenario=scenario, num_arrivals=num_arrivals, warmup=warmup)
        if env_id in _ARRIVAL_CAPPED and kwargs.get("max_arrivals") is None:
            from ..env.msj_env import heuristic_cap

            kwargs["max_arrivals"] = heuristic_cap(kwargs, num_arrivals)  # a heuristic's run's cap
        return gym.make(env_id, **kwargs)

    def agent_for(self, env: Any, seed: int = 0) -> Any:
        """The agent acting in ``env``; a factory that takes ``seed`` gets the point's seed, so that a
        randomised agent is reproducible."""
        if not self.factory:
            return self.model
        import inspect

        try:
            takes_seed = "seed" in inspect.signature(self.model).parameters
        except (TypeError, ValueError):
            takes_seed = False
        return self.model(env, seed=seed) if takes_seed else self.model(env)


def agent_label(spec: str) -> str:
    """The name an agent gets in tables: ``agent:<file stem>``, ``agent:<shipped name>`` or
    ``agent:<attr>`` (a shipped name keeps its dots: ``maskable-ppo-sf-fig2-0.7``)."""
    if ":" in spec and not Path(spec).suffix == ".zip":
        return f"agent:{spec.rsplit(':', 1)[1]}"
    if spec in shipped_agents() and not Path(spec).exists():
        return f"agent:{spec}"
    return f"agent:{Path(spec).stem}"


def agent_files(spec: str) -> tuple[str, ...]:
    """The files an agent's decisions depend on beyond msj_gym's code, for the runs' code key: a
    checkpoint (a path or a shipped name), its ``.json``, the code its config declares (a registered
    algorithm's loader and rule; for stable-baselines3's form, the loader and the policy class's
    modules, and for the class-set networks, whose selection simulates heuristics, the agents' and the
    policies' code) and the modules of the heuristics its env keywords name (advisors, warm start);
    the module that a ``module:attr`` names."""
    files = _checkpoint_files(spec)
    if files:
        stamp = _stamp(files)
        loader_files = _loader_files(files[0], stamp)
        if loader_files:  # a registered algorithm says what code its decisions run
            return files + loader_files
        return files + _network_files(files[0], stamp)
    if ":" in spec:
        import importlib.util

        try:
            found = importlib.util.find_spec(spec.rpartition(":")[0])
        except (ImportError, ValueError):
            return ()
        origin = getattr(found, "origin", None)
        return (origin,) if origin and origin.endswith(".py") else ()
    return ()


@cache
def _network_files(checkpoint: str, stamp: tuple[tuple[str, int, int], ...]) -> tuple[str, ...]:
    """The code a stable-baselines3 network's decisions run (cached per ``stamp``): see
    :func:`agent_files`."""
    from ..registry import network_code_reader

    files = {Path(f) for f in network_code_reader()(checkpoint)}
    meta_path = Path(checkpoint).with_suffix(".json")
    try:
        meta = json.loads(meta_path.read_text()) if meta_path.is_file() else {}
        files |= _heuristic_files(meta.get("env_kwargs", {}) if isinstance(meta, dict) else {})
    except (OSError, ValueError):
        pass  # a damaged one fails where it is run
    return tuple(sorted(str(f) for f in files if f.is_file()))


def _heuristic_files(env_kwargs: Any) -> set[Path]:
    """The source of the registered heuristics an agent's env keywords name (its advisors, its warm
    start): what it follows or starts from is part of its decisions."""
    from ..registry import policy_ids, policy_source_files

    named: list[Any] = []
    for key in ("advisor", "warm_start"):
        value = env_kwargs.get(key) if isinstance(env_kwargs, dict) else None
        named += value if isinstance(value, list) else [value]
    ids = set(policy_ids())
    return {
        Path(f) for name in named if isinstance(name, str) and name in ids for f in policy_source_files(name)
    }


def _checkpoint_files(spec: str) -> tuple[str, ...]:
    """A checkpoint's file (a path or a shipped name) and its ``.json`` where there is one, resolved;
    nothing for a spec that names no file."""
    path = Path(spec)
    if not path.is_file() and ":" not in spec:
        path = shipped_agents().get(spec, path)
    if not path.is_file():
        return ()
    return tuple(str(p.resolve()) for p in (path, path.with_suffix(".json")) if p.is_file())


def _stamp(files: tuple[str, ...]) -> tuple[tuple[str, int, int], ...]:
    """Each file with its size and modification time: what a per-process cache of what was read from
    them is keyed by, so that a file rewritten within a process is read again."""
    return tuple((f, (st := Path(f).stat()).st_size, st.st_mtime_ns) for f in files)


@cache
def _loader_files(checkpoint: str, stamp: tuple[tuple[str, int, int], ...]) -> tuple[str, ...]:
    """The code a checkpoint of a registered algorithm (not stable-baselines3's) runs beyond its weights:
    its loader's module and, for an agent with a native twin, the policy's own source files (cached
    per ``stamp`` of the checkpoint and its metadata)."""
    import inspect

    from ..registry import agent_loader, spec_source_files

    path = Path(checkpoint)
    try:
        meta = json.loads(path.with_suffix(".json").read_text())
        loader = agent_loader(meta.get("algo"))
        if loader is None:
            return ()
        files = {inspect.getsourcefile(loader) or ""}
        loaded = loader(path, meta)
        native = loaded.get("native")
        files.update(str(Path(f).resolve()) for f in loaded.get("code", ()))
    except (OSError, ValueError, AttributeError, TypeError):  # a damaged one fails where it is run
        return ()
    if native is not None:
        files.update(spec_source_files(native[0]))
    return tuple(sorted(f for f in files if f))


def shipped_agents() -> dict[str, Path]:
    """The checkpoints installed with the package, by name (the file stem); see
    :func:`msj_gym.registry.shipped_agents`."""
    from ..registry import shipped_agents as registered

    return registered()


def load_agent(
    spec: str, bare: bool = False, *, allow_pickle: bool = False, allow_imports: bool = False
) -> AgentSpec:
    """Load ``spec`` (cached per process while its checkpoint and metadata files stay the same: one
    rewritten within a process is loaded again). Raises ``ValueError`` naming the spec when it does not
    load, or when a checkpoint has no metadata (unless ``bare``) or metadata that does not describe an
    MSJ env (see the module docstring); a checkpoint that would be unpickled unless ``allow_pickle``,
    and one whose files name code outside msj_gym unless ``allow_imports`` (or the process trusts them:
    :mod:`msj_gym.trust`)."""
    from ..trust import IMPORTS, PICKLE, granted_now, trusting

    extra = [kind for kind, on in ((PICKLE, allow_pickle), (IMPORTS, allow_imports)) if on]
    with trusting(extra):
        return _load_agent(spec, bare, _stamp(_checkpoint_files(spec)), granted_now())


@cache
def _load_agent(spec: str, bare: bool, stamp: tuple[Any, ...], grants: tuple[str, ...]) -> AgentSpec:
    if spec.endswith(".zip") or Path(spec).exists():
        return _load_checkpoint(spec, bare)
    if ":" in spec:
        return _load_object(spec)
    shipped = shipped_agents()
    if spec in shipped:
        return _load_checkpoint(str(shipped[spec]), bare)
    names = ", ".join(shipped) or "none installed"
    raise ValueError(
        f"--agent {spec!r}: no such file, not a shipped agent ({names}), and not a 'module:attr' spec"
    )


def _env_keywords(env_id: str) -> frozenset[str]:
    """The keywords env ``env_id`` takes (the two MSJ envs take the same)."""
    import inspect

    if env_id == "MSJMoldable-v0":
        from ..env.moldable_env import MSJMoldableEnv as cls
    elif env_id == "CompatAssign-v0":
        from ..env.compat_env import CompatAssignEnv as cls  # type: ignore[assignment]
    else:
        from ..env.make import ENV_KEYWORDS  # every flat keyword of gym.make("MSJ-v0")

        return frozenset(ENV_KEYWORDS)
    params = inspect.signature(cls.__init__).parameters.values()
    return frozenset(p.name for p in params if p.kind is not p.VAR_KEYWORD and p.name != "self")


def read_agent_metadata(spec: str, path: Path, bare: bool = False) -> dict[str, Any]:
    """The checked metadata of checkpoint ``path`` (its ``.json``): a JSON object whose ``env_id`` is
    one of :data:`AGENT_ENV_IDS` and whose ``env_kwargs`` are keywords of that env. Missing, it is an
    error unless ``bare`` (then ``{}``: the env's defaults). Every problem is a one-line ``ValueError`` naming
    ``spec`` and the file."""
    meta_path = path.with_suffix(".json")
    if not meta_path.exists():
        if bare:
            return {}
        raise ValueError(
            f"--agent {spec!r}: no metadata {meta_path.name!r} beside it (the env and keywords it was "
            "trained with, written by msj_gym.agents.train and msj_gym.agents.improve); add it, or pass "
            "--bare-agents to run it on the env's defaults"
        )
    where = f"--agent {spec!r}: its metadata {str(meta_path)!r}"
    try:
        meta = json.loads(meta_path.read_text())
    except json.JSONDecodeError as exc:
        raise ValueError(f"{where} is not JSON ({exc})") from None
    except (OSError, UnicodeDecodeError, RecursionError) as exc:
        why = exc.strerror if isinstance(exc, OSError) else type(exc).__name__
        raise ValueError(f"{where} cannot be read ({why})") from None
    if not isinstance(meta, dict):
        raise ValueError(f"{where}: expected a JSON object, got {type(meta).__name__}")
    env_id = meta.get("env_id", "MSJ-v0")
    if env_id not in AGENT_ENV_IDS:
        raise ValueError(
            f"{where}: env_id {env_id!r} is not an env agents run in ({', '.join(AGENT_ENV_IDS)})"
        )
    kwargs = meta.get("env_kwargs", {})
    if not isinstance(kwargs, dict):
        raise ValueError(f"{where}: env_kwargs: expected a JSON object, got {kwargs!r:.60}")
    unknown = sorted(set(kwargs) - _env_keywords(env_id))
    if unknown:
        raise ValueError(
            f"{where}: env_kwargs {', '.join(map(repr, unknown))} are not keywords of {env_id}; "
            "was it trained with another version of msj_gym?"
        )
    from ..trust import check_imports

    for field in ("advisor", "warm_start"):  # the env imports what these name
        check_imports(where, f"env_kwargs.{field}", kwargs.get(field))
    return meta


def _load_checkpoint(spec: str, bare: bool = False) -> AgentSpec:
    path = Path(spec)
    if not path.is_file():
        raise ValueError(f"--agent {spec!r}: no such file")
    meta = read_agent_metadata(spec, path, bare)
    meta_path = path.with_suffix(".json")
    from ..registry import agent_loader

    loader = agent_loader(meta.get("algo"))
    if loader is not None:
        return _load_registered(spec, path, meta, loader)
    if "algo" in meta and meta["algo"] not in [a[0] for a in _SB3_ALGOS]:
        from ..registry import agent_algos

        known = ", ".join([a[0] for a in _SB3_ALGOS] + agent_algos())
        raise ValueError(
            f"--agent {spec!r}: unknown algo {meta['algo']!r} in {meta_path.name}; known: {known}"
        )
    from ..registry import agent_model_loader

    try:
        import torch
    except ImportError:
        from ..extras import install_hint

        raise ValueError(f"--agent {spec!r}: torch is not installed ({install_hint('rl')})") from None
    # an agent's decision is a small forward pass: more threads only contend with the other workers of
    # a leaderboard
    torch.set_num_threads(1)
    # data only; a stable-baselines3 checkpoint (pickles) only where trusted (msj_gym.trust)
    model = agent_model_loader()(path, algo=meta.get("algo"), where=f"--agent {spec!r}")
    return AgentSpec(spec, model, meta.get("env_id", "MSJ-v0"), dict(meta.get("env_kwargs", {})), False)


def _load_registered(spec: str, path: Path, meta: dict[str, Any], loader: Any) -> AgentSpec:
    """A checkpoint of an algorithm registered with its own loader (not SB3's): the loader gives the
    agent factory and, where the agent's episodes equal a policy's native runs, that policy."""
    try:
        loaded = loader(path, meta)
    except ValueError as exc:
        raise ValueError(f"--agent {spec!r}: {exc}") from None
    env_id = meta.get("env_id", "MSJ-v0")
    kwargs = dict(meta.get("env_kwargs", {}))
    notes = tuple(loaded.get("notes", ()))
    return AgentSpec(spec, loaded["factory"], env_id, kwargs, True, native=loaded.get("native"), notes=notes)


def _load_object(spec: str) -> AgentSpec:
    from ..registry import import_object

    obj = import_object(spec, "--agent")
    if hasattr(obj, "predict") and not isinstance(obj, type):
        return AgentSpec(spec, obj, "MSJ-v0", {}, False, any_env=True)
    if callable(obj):
        return AgentSpec(spec, obj, "MSJ-v0", {}, True, any_env=True)
    raise ValueError(f"--agent {spec!r}: expected an object with predict() or a callable env -> agent")


class AgentError(ValueError):
    """An agent that fails by itself (not a misfit with a scenario's env): refused everywhere."""


def check_agent(
    spec: str,
    scenario: str | WorkloadLike,
    build: dict[str, Any],
    bare: bool = False,
    *,
    num_arrivals: int = 100,
    where: str | None = None,
    model: str = "msj",
    probe: bool = False,
) -> None:
    """Fail early, in the parent process, if ``spec`` does not load (:func:`load_agent`, ``bare`` as
    there), its agent cannot be made (an :class:`AgentError`), or it does not fit ``scenario``'s env:
    its ``env_id`` acts on another model than ``model`` (the scenario's), or e.g. a checkpoint trained on
    a workload with another number of classes or servers. ``scenario`` may be a workload; ``where``
    names it in the messages (default: ``scenario 'NAME'``); ``build`` holds the env's keywords. With
    ``probe`` an agent without metadata (``module:attr``) is asked for its first decision wherever it
    acts, as it is on every env but ``MSJ-v0``: one written for another model's env fails there."""
    where = where or f"scenario {scenario!r}"
    loaded = load_agent(spec, bare)
    env_id = loaded.env_id_for(model)
    if ENV_MODELS[env_id] != model:
        raise ValueError(
            f"--agent {spec!r}: env_id {env_id!r} acts on the {ENV_MODELS[env_id]} model, not on the "
            f"{model} model of {where}"
        )
    try:
        env = loaded.make_env(scenario, build, num_arrivals=num_arrivals, warmup=0, model=model)
    except (TypeError, ValueError) as exc:
        what = " ".join(str(exc).split()) or type(exc).__name__
        raise ValueError(f"--agent {spec!r}: its env does not build on {where}: {what}") from None
    try:
        try:
            agent = loaded.agent_for(env)
        except Exception as exc:  # a factory's own failure: one line naming it, not a traceback
            what = " ".join(str(exc).split()) or type(exc).__name__
            raise AgentError(
                f"--agent {spec!r}: making the agent failed: {type(exc).__name__}: {what}"
            ) from None
        space = getattr(agent, "observation_space", None)
        if space is not None and space != env.observation_space:
            raise ValueError(
                f"--agent {spec!r}: trained on observations {space}, but {where} gives "
                f"{env.observation_space} (another number of classes or window sizes)"
            )
        action_space = getattr(agent, "action_space", None)
        if action_space is not None and action_space != env.action_space:
            raise ValueError(
                f"--agent {spec!r}: trained with actions {action_space}, but {where} has {env.action_space}"
            )
        # an agent without metadata is asked to act where its env is not MSJ-v0, which it would assume
        # (or where ``probe`` asks: it may have been written for another model's env)
        if loaded.any_env and (probe or env_id != MODEL_ENV_IDS["msj"]):
            check_first_decision(spec, env, agent, f"{env_id} on {where}")
    finally:
        env.close()


def check_first_decision(spec: str, env: Any, agent: Any, where: str) -> None:
    """Ask an agent without metadata (``module:attr``) for the first decision of an episode: one that
    was written for another env fails here, in one line, rather than in the middle of the runs."""
    import inspect

    try:
        obs, info = env.reset(seed=0)
        masked = "action_masks" in inspect.signature(agent.predict).parameters
        extra = {"action_masks": info["action_mask"]} if masked else {}
        action, _ = agent.predict(obs, deterministic=True, **extra)
        if not env.action_space.contains(env.action_space.dtype.type(int(action))):
            raise ValueError(f"action {action!r} is outside {env.action_space}")
    except Exception as exc:  # an agent of another env fails in many ways
        what = " ".join(str(exc).split()) or type(exc).__name__
        raise ValueError(f"--agent {spec!r}: does not act in {where}: {type(exc).__name__}: {what}") from None


def play_agent(
    spec: str,
    scenario: str | WorkloadLike,
    build: dict[str, Any],
    num_arrivals: int,
    warmup: int,
    seed: int,
    where: str,
    *,
    bare: bool = True,
    model: str = "msj",
) -> Any:
    """One episode of agent ``spec`` through its env on ``scenario`` (a name, a file or a workload) and
    ``seed``; the env's result. A failure of the agent's own (a bad action, an error in ``predict``)
    is one line naming the agent and ``where`` it ran."""
    from ..env.agents import rollout

    loaded = load_agent(spec, bare)
    env = loaded.make_env(scenario, build, num_arrivals, warmup, model=model)
    try:
        return rollout(env, loaded.agent_for(env, seed), seed=seed)
    except Exception as exc:  # an agent's own failure names it
        what = " ".join(str(exc).split()) or type(exc).__name__
        raise ValueError(f"--agent {spec!r} failed on {where}: {type(exc).__name__}: {what}") from exc
    finally:
        env.close()


def run_agent(
    point: Any, model: str = "msj", build: dict[str, Any] | None = None, where: str | None = None
) -> Any:
    """Run ``point.agent`` through the env of ``model`` on the point's workload and seed, with the env
    keywords ``build`` (default: the point's own) and, for a failure's message, ``where`` it ran (default:
    the point's scenario, load and seed); the env's result (a SimulationResult; on the moldable model a
    MoldableResult)."""
    warmup = point.warmup if point.warmup is not None else point.num_arrivals // 10
    if where is None:
        at = f" at load {point.build['load']}" if "load" in point.build else ""  # a trace sequence: none
        where = f"{point.scenario}{at} (seed {point.seed})"
    build = dict(point.build) if build is None else build
    # bare (the default): the parent's checks admitted it, a checkpoint without metadata too
    return play_agent(
        point.agent, point.scenario, build, point.num_arrivals, warmup, point.seed, where, model=model
    )
