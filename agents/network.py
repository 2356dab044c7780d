"""A scheduler that is a small network over the set of job classes, held as data: its weights, its
forward pass compiled, and the policy that starts jobs one at a time by it.

The network reads the class-set observation (``observation="classes"``, :mod:`msj_gym.env.observe`):
8 system features and one row of 14 per class, whatever the number of servers, classes or the time
unit. Its shape is DeepSets' (Zaheer et al., NeurIPS 2017) with Decima's per-node scores (Mao et al.,
SIGCOMM 2019): one encoder shared by every class (its row beside the system features), a context pooled
over the classes (mean and max, so symmetric), a score per class from its code and the context, and a
score for "wait" from the context alone. Permuting the classes permutes their scores; nothing else
changes. Actions are the env's job actions with ``queue_window=1``: ``0`` wait, ``1 + c`` start the
oldest waiting job of class ``c``.

There is one forward pass, compiled (:func:`scores`); the agent's ``predict`` in an env and the
policy's decision rule in the engine both call it, so the agent's episodes through the env equal the
policy's native runs (tested). Training (:mod:`msj_gym.agents.expert`) fits a torch twin of it and
copies the weights over. A network is stored as a ``.npz`` of its
weights, read without unpickling, and its ``.json`` config.

:class:`NetworkPolicy` is the network as a :class:`~msj_gym.core.policy.Policy` (non-preemptive,
size-oblivious): asked at a decision, it computes the observation the env would show, takes the
network's best valid action, and if that starts a job, updates the counts as the start does and asks
again, until it waits or nothing more fits: the env's one-start-per-step decisions, made at once. So
it runs natively in the leaderboard and as the base policy of the sampled futures in which a planner
(:mod:`msj_gym.agents.planner`) plays its actions out.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from ..core import state as S
from ..core.jit import internal_jit, kernel_jit
from ..core.policy import Param, Policy
from ..core.state import PolicyData
from ..env.layout import (
    EP_OBS,
    EP_QWIN,
    EP_SLOTS,
    N_EP,
    OBS_CLASSES,
    SET_CLASS_FEATURES,
    SET_SYSTEM_FEATURES,
    class_set_size,
    workload_floats,
)
from ..env.observe import class_set_constants, write_class_rows

__all__ = [
    "ENV_KWARGS",
    "NETWORK_FORMAT",
    "NetworkAgent",
    "NetworkPolicy",
    "NetworkWeights",
    "load_checkpoint",
    "load_network",
    "scores",
]

#: The env an agent of this network acts in (the leaderboard makes it with these keywords).
ENV_KWARGS: dict[str, Any] = {"observation": "classes", "actions": "jobs", "queue_window": 1}
#: What a weights file's ``format`` entry says (a file of another format is refused).
NETWORK_FORMAT = "msj-gym-class-set-network/1"
SLOTS = 32  # class slots of the observation (the env's DEFAULT_MAX_CLASSES)
IN_FEATURES = SET_SYSTEM_FEATURES + SET_CLASS_FEATURES  # a class's row beside the system features
# the weights, in the order they are packed, with their shapes in (hidden H, code D)
_LAYERS = (
    ("enc1_w", ("H", "I")),
    ("enc1_b", ("H",)),
    ("enc2_w", ("D", "H")),
    ("enc2_b", ("D",)),
    ("score1_w", ("H", "3D")),
    ("score1_b", ("H",)),
    ("score2_w", ("H",)),
    ("score2_b", (1,)),
    ("wait1_w", ("H", "2D")),
    ("wait1_b", ("H",)),
    ("wait2_w", ("H",)),
    ("wait2_b", (1,)),
)
_HEADER = 3  # params[0:3] = H, D, the offset of the weights


def _shape(spec: tuple[Any, ...], hidden: int, code: int) -> tuple[int, ...]:
    sizes = {"H": hidden, "D": code, "I": IN_FEATURES, "2D": 2 * code, "3D": 3 * code}
    return tuple(sizes.get(d, d) for d in spec)


@dataclass(frozen=True)
class NetworkWeights:
    """The weights of a class-set network (float64 arrays by layer name) and its two widths."""

    hidden: int
    code: int
    arrays: dict[str, np.ndarray]

    @classmethod
    def initial(cls, hidden: int = 64, code: int = 32, seed: int = 0) -> NetworkWeights:
        """Weights drawn as torch's ``nn.Linear`` draws them (uniform within 1 / sqrt(fan-in))."""
        rng = np.random.default_rng(seed)
        arrays = {}
        fan_in = 1
        for name, spec in _LAYERS:
            shape = _shape(spec, hidden, code)
            if name.endswith("_w"):
                fan_in = shape[-1]  # a bias shares its layer's bound
            bound = 1.0 / math.sqrt(fan_in)
            arrays[name] = rng.uniform(-bound, bound, shape)
        return cls(hidden, code, arrays)

    def packed(self) -> np.ndarray:
        """One float64 array: the header, then every layer flattened in order (what the kernel reads)."""
        parts = [np.array([self.hidden, self.code, _HEADER], dtype=np.float64)]
        for name, spec in _LAYERS:
            a = np.asarray(self.arrays[name], dtype=np.float64)
            if a.shape != _shape(spec, self.hidden, self.code):
                raise ValueError(
                    f"weights: {name} has shape {a.shape}, expected {_shape(spec, self.hidden, self.code)}"
                )
            parts.append(a.reshape(-1))
        return np.concatenate(parts)

    def digest(self) -> str:
        """A SHA-256 of the widths and the weights' bytes: what results computed with them are keyed by."""
        import hashlib

        return hashlib.sha256(self.packed().tobytes()).hexdigest()

    def save(self, path: str | Path) -> None:
        """Write the weights to ``path`` (``.npz``, no pickled objects) with the format and widths."""
        entries: dict[str, Any] = {k: np.asarray(v, dtype=np.float64) for k, v in self.arrays.items()}
        entries.update(
            format=np.array(NETWORK_FORMAT), hidden=np.array(self.hidden), code=np.array(self.code)
        )
        np.savez(Path(path), allow_pickle=False, **entries)

    @classmethod
    def load(cls, path: str | Path) -> NetworkWeights:
        """Read weights written by :meth:`save`, never unpickling (a file that needs it is refused)."""
        where = f"weights {str(path)!r}"
        try:
            with np.load(Path(path), allow_pickle=False) as data:
                fmt = str(data["format"]) if "format" in data else None
                if fmt != NETWORK_FORMAT:
                    raise ValueError(f"{where}: format {fmt!r}, expected {NETWORK_FORMAT!r}")
                hidden, code = int(data["hidden"]), int(data["code"])
                arrays = {name: np.array(data[name], dtype=np.float64) for name, _ in _LAYERS}
        except (OSError, KeyError, EOFError) as exc:
            raise ValueError(f"{where}: cannot be read ({type(exc).__name__}: {exc})") from None
        except ValueError as exc:
            if str(exc).startswith(where):
                raise
            raise ValueError(f"{where}: cannot be read without unpickling or is damaged ({exc})") from None
        if not (1 <= hidden <= 4096 and 1 <= code <= 4096):
            raise ValueError(f"{where}: widths hidden={hidden}, code={code} out of range")
        weights = cls(hidden, code, arrays)
        packed = weights.packed()  # checks every shape
        if not np.isfinite(packed).all():
            raise ValueError(f"{where}: holds a weight that is not finite")
        return weights


@internal_jit
def _relu(x):
    return x if x > 0.0 else 0.0


@kernel_jit
def scores(params, obs, nclass, work, out):
    """The network's scores of ``obs`` (a class-set observation of ``nclass`` real classes): ``out[0]``
    for "wait", ``out[1 + c]`` for class ``c`` (``out`` has ``1 + nclass`` entries at least).
    ``params`` is :meth:`NetworkWeights.packed`; ``work`` scratch of ``nclass * code + 4 * hidden +
    3 * code`` floats. The one forward pass of the network (the torch twin is for training only)."""
    hidden = int(params[0])
    code = int(params[1])
    o = int(params[2])
    w1 = o
    b1 = w1 + hidden * IN_FEATURES
    w2 = b1 + hidden
    b2 = w2 + code * hidden
    s1w = b2 + code
    s1b = s1w + hidden * 3 * code
    s2w = s1b + hidden
    s2b = s2w + hidden
    v1w = s2b + 1
    v1b = v1w + hidden * 2 * code
    v2w = v1b + hidden
    v2b = v2w + hidden
    emb = 0  # work[emb + c * code + d]: class c's code
    h = nclass * code  # a hidden layer
    ctx = h + hidden  # mean then max of the codes
    for c in range(nclass):
        row = SET_SYSTEM_FEATURES + c * SET_CLASS_FEATURES
        for j in range(hidden):
            acc = params[b1 + j]
            base = w1 + j * IN_FEATURES
            for i in range(SET_SYSTEM_FEATURES):
                acc += params[base + i] * obs[i]
            for i in range(SET_CLASS_FEATURES):
                acc += params[base + SET_SYSTEM_FEATURES + i] * obs[row + i]
            work[h + j] = _relu(acc)
        for d in range(code):
            acc = params[b2 + d]
            base = w2 + d * hidden
            for j in range(hidden):
                acc += params[base + j] * work[h + j]
            work[emb + c * code + d] = _relu(acc)
    for d in range(code):
        total = 0.0
        top = -np.inf
        for c in range(nclass):
            v = work[emb + c * code + d]
            total += v
            top = max(top, v)
        work[ctx + d] = total / nclass
        work[ctx + code + d] = top
    # wait: from the context alone
    acc_out = params[v2b]
    for j in range(hidden):
        acc = params[v1b + j]
        base = v1w + j * 2 * code
        for d in range(2 * code):
            acc += params[base + d] * work[ctx + d]
        acc_out += params[v2w + j] * _relu(acc)
    out[0] = acc_out
    for c in range(nclass):
        acc_out = params[s2b]
        for j in range(hidden):
            base = s1w + j * 3 * code
            acc = params[s1b + j]
            for d in range(code):
                acc += params[base + d] * work[emb + c * code + d]
            for d in range(2 * code):
                acc += params[base + code + d] * work[ctx + d]
            acc_out += params[s2w + j] * _relu(acc)
        out[1 + c] = acc_out
    return 0


def work_floats(nclass: int, hidden: int, code: int) -> int:
    """Scratch floats :func:`scores` needs for ``nclass`` classes."""
    return nclass * code + hidden + 2 * code + 8


# --- the policy ------------------------------------------------------------------------------------
# iwork: ep (N_EP) | nwait (C) | nrun (C) | head (C);  fwork: fpar | obs | scores (1 + C) | forward scratch
@kernel_jit
def network_kernel(view, pdata, actions):
    """Start jobs one at a time by the network's best valid action until it waits or nothing fits."""
    iv, ci, ji = view.iv, view.ci, view.ji
    params, iwork, fwork = pdata.params, pdata.iwork, pdata.fwork
    nclass = ci.shape[1]
    ep = iwork[:N_EP]
    nwait = iwork[N_EP : N_EP + nclass]
    nrun = iwork[N_EP + nclass : N_EP + 2 * nclass]
    head = iwork[N_EP + 2 * nclass : N_EP + 3 * nclass]
    nf = int(pdata.state[0])  # fpar's length
    nobs = int(pdata.state[1])
    fpar = fwork[:nf]
    obs = fwork[nf : nf + nobs]
    out = fwork[nf + nobs : nf + nobs + 1 + nclass]
    work = fwork[nf + nobs + 1 + nclass :]
    for c in range(nclass):
        nwait[c] = ci[S.C_NWAIT, c]
        nrun[c] = ci[S.C_NRUN, c]
        head[c] = ci[S.C_HEAD, c]
    free = iv[S.I_FREE]
    # "wait" leads somewhere (the env's can_wait): a departure is due or an arrival may come
    can_wait = iv[S.I_HEAPN] > 0 or iv[S.I_NARR] < iv[S.I_NGEN] or iv[S.I_EXHAUSTED] == 0
    n = 0
    while True:
        fits = False
        for c in range(nclass):
            if nwait[c] > 0 and ci[S.C_NEED, c] <= free:
                fits = True
        if not fits:
            break
        write_class_rows(view, ep, fpar, obs, free, nwait, nrun, head)
        scores(params, obs, nclass, work, out)
        best = -1
        top = -np.inf
        if can_wait:
            best, top = 0, out[0]
        for c in range(nclass):
            if nwait[c] > 0 and ci[S.C_NEED, c] <= free and (best == -1 or out[1 + c] > top):
                best, top = 1 + c, out[1 + c]
        if best <= 0:
            break
        c = best - 1
        s = head[c]
        actions[n] = s
        n += 1
        free -= ci[S.C_NEED, c]
        nwait[c] -= 1
        nrun[c] += 1
        head[c] = ji[s, S.CNEXT]
        can_wait = True  # the job just started will depart
    return n


class NetworkPolicy(Policy):
    """A class-set network as a scheduling policy (see the module docstring).

    Source: the network's own training (:mod:`msj_gym.agents.expert`), not a paper.
    Non-preemptive; size-oblivious (it reads the class-set observation, which holds no job sizes).
    """

    policy_id = "class-set-network"
    reference = "a learned class-set network (msj_gym.agents.network)"
    params_spec: ClassVar[Mapping[str, Param]] = {
        "weights": Param(str, "", "path of the network's weights (.npz)")
    }
    kernel = network_kernel

    def __init__(self, weights: NetworkWeights | str | Path | None = None, **params: Any) -> None:
        if isinstance(weights, str | Path):
            params["weights"] = str(weights)
            weights = None
        super().__init__(**params)
        if weights is None:
            if not self.param_values["weights"]:
                raise ValueError("policy 'class-set-network': give its weights (a .npz path)")
            weights = NetworkWeights.load(self.param_values["weights"])
        self.network = weights
        self._packed = weights.packed()

    def prepare(self, workload: Any, rng: np.random.Generator) -> PolicyData:
        if workload.num_classes > SLOTS:
            raise ValueError(
                f"policy 'class-set-network': reads at most {SLOTS} classes, the workload has "
                f"{workload.num_classes}"
            )
        fpar = workload_floats(
            workload, np.asarray(workload.load_weights) / np.asarray(workload.probabilities)
        )
        class_set_constants(
            fpar, int(workload.num_servers), np.asarray(workload.server_needs, dtype=np.int64)
        )
        nobs = class_set_size(SLOTS, False)
        nclass = workload.num_classes
        ep = np.zeros(N_EP, dtype=np.int64)
        ep[EP_SLOTS] = SLOTS
        ep[EP_OBS] = OBS_CLASSES
        ep[EP_QWIN] = 1
        iwork = np.concatenate([ep, np.zeros(3 * nclass, dtype=np.int64)])
        scratch = work_floats(nclass, self.network.hidden, self.network.code)
        fwork = np.concatenate([fpar, np.zeros(nobs + 1 + nclass + scratch)])
        return (
            super()
            .prepare(workload, rng)
            ._replace(
                params=self._packed,
                state=np.array([fpar.size, nobs], dtype=np.float64),
                iwork=iwork,
                fwork=fwork,
            )
        )

    def with_work(self, pdata: PolicyData, num_slots: int, num_servers: int, num_classes: int) -> PolicyData:
        return pdata  # its scratch depends on the classes only, sized by prepare


class NetworkAgent:
    """The network acting through an env made with :data:`ENV_KWARGS` (``predict`` as
    stable-baselines3's): the best valid action of the same compiled forward pass."""

    def __init__(self, weights: NetworkWeights, num_classes: int) -> None:
        self.weights = weights
        self._packed = weights.packed()
        self._nclass = num_classes
        self._out = np.zeros(1 + num_classes)
        self._work = np.zeros(work_floats(num_classes, weights.hidden, weights.code))

    def predict(
        self,
        observation: np.ndarray,
        state: Any = None,
        episode_start: Any = None,
        deterministic: bool = True,
        action_masks: np.ndarray | None = None,
    ) -> tuple[np.ndarray, None]:
        obs = np.asarray(observation, dtype=np.float64)
        scores(self._packed, obs, self._nclass, self._work, self._out)
        valid = (
            np.ones(1 + self._nclass, dtype=bool)
            if action_masks is None
            else action_masks[: 1 + self._nclass]
        )
        masked = np.where(valid, self._out, -np.inf)
        return np.array(int(np.argmax(masked))), None


def load_network(path: str | Path) -> tuple[NetworkWeights, dict[str, Any]]:
    """A network's weights (``.npz``) and config (the ``.json`` beside it, ``{}`` if none)."""
    weights = NetworkWeights.load(path)
    meta_path = Path(path).with_suffix(".json")
    meta = json.loads(meta_path.read_text()) if meta_path.is_file() else {}
    return weights, meta


def _agent(weights: NetworkWeights, env: Any) -> NetworkAgent:
    return NetworkAgent(weights, getattr(env, "unwrapped", env).workload.num_classes)


def load_checkpoint(path: Path, meta: dict[str, Any]) -> dict[str, Any]:
    """The loader the registry knows these checkpoints by (``algo`` ``"class-set-network"``): the
    network acting through ``MSJ-v0`` with :data:`ENV_KWARGS`, and the native policy its episodes
    equal (:class:`NetworkPolicy` on the same weights)."""
    import functools

    weights = NetworkWeights.load(path)
    if meta.get("env_id", "MSJ-v0") != "MSJ-v0":
        raise ValueError(f"a class-set network acts in MSJ-v0, not in {meta.get('env_id')!r}")
    kwargs = meta.get("env_kwargs", {})
    if any(kwargs.get(k) != v for k, v in ENV_KWARGS.items()):
        raise ValueError(f"a class-set network's env_kwargs must hold {ENV_KWARGS}, got {kwargs}")
    return {
        "factory": functools.partial(_agent, weights),
        "native": ("msj_gym.agents.network:NetworkPolicy", {"weights": str(Path(path).resolve())}),
    }
