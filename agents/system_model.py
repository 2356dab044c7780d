"""Which base heuristic to follow on a system, chosen by simulating each on the system the agent's
observation describes.

The class-set observation (``observation="classes"``, see the ``MSJEnv`` card) states the system it is
taken in: ``log2(k) / 16``, each class's server need as a share of ``k``, its arrival share, its mean
duration relative to the system's and the squared coefficient of variation (SCV) of its durations,
all squashed where they are unbounded, and the offered load. :func:`system_from_class_set` inverts
those columns into a Poisson :class:`~msj_gym.workloads.workload.Workload`; nothing of a job's own
size enters, so a size-oblivious agent may use it. Only the first two moments of each class's
durations are observed, so the rebuilt system draws them from a family matched to them
(:func:`duration_with_moments`): exponential at SCV 1, gamma below (an Erlang where ``1 / SCV`` is
an integer, deterministic near 0), the balanced two-phase hyperexponential above (SCV capped at
:data:`MAX_MODEL_SCV`). The classes are put in a canonical order first, so that listing them in
another order gives the same system, run for run.

:class:`SimulatedSelector` runs every base on that system with the compiled simulator and picks the
one with the least mean response time, leaning towards the base that is rarely far off (a pick whose
simulated excess over the best is within ``lean`` of it goes to the safe base). This is how
:mod:`msj_gym.agents.generalist` labels its training systems (each base simulated on the system, the
best one followed); the learned selector approximates that table from the static features, and on
generated systems it never saw it picks worse (``benchmarks/generalist_selection.py``).

With ``fallbacks``, it also simulates heuristics the network was not trained beside (the env's
advisors after the bases); one of them is picked only where it simulates better than every base by
more than the lean, and is then followed throughout, the network set aside. They let the agent fall
back on the heuristic that suits a system its bases do not.

With ``rehearse``, the selector also settles whether the agent's network is trusted on the system:
the agent is played on the rebuilt system through its own env, its network with each base and the
pick followed throughout, and the network is trusted where it does better there (a heuristic alone is
not what the agent runs: the network and a heuristic together are).

What the rebuilt system cannot know: arrivals that are not Poisson (a trace's), durations whose
distribution is not determined by two moments, a load of 1 or more (every base is unstable there).
Where the observation does not determine the system (``k`` of 65,536 or more, a load of 1 or more),
:meth:`SimulatedSelector.choose` returns -1 and the caller keeps its own choice.
"""

from __future__ import annotations

import hashlib
import json
import math
import sys
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from msj_gym.env.layout import SET_SYSTEM_FEATURES, STATIC_CLASS, STATIC_SYSTEM
from msj_gym.workloads.distributions import (
    MIN_GAMMA_SCV,
    Deterministic,
    Distribution,
    Exponential,
    Gamma,
    HyperExponential,
)
from msj_gym.workloads.workload import JobClass, Workload

__all__ = [
    "ALL_FLAGGED",
    "MAX_MODEL_SCV",
    "RESCUES",
    "SimulatedSelector",
    "duration_with_moments",
    "little_mean",
    "play_together",
    "run_mean",
    "system_from_class_set",
    "unsquash",
]

# how a selector picks where every heuristic is flagged on some run (see SimulatedSelector.pick)
ALL_FLAGGED = ("little", "safest")
# whom the network's guard hands decisions to where the network is trusted: its base, or the heuristic
# simulated best alone on the system (see SimulatedSelector)
RESCUES = ("base", "alone")
# above this SCV the rebuilt durations are hyperexponential at this SCV: a trace's class without a
# finite second moment is observed as 1e6, where sample means of a few runs would not settle
MAX_MODEL_SCV = 100.0
# the observation's log2(k) / 16 is capped at 1: from k = 65,536 on, k is not known
_MAX_K_COLUMN = 1.0
# the class-set system columns (the ``MSJEnv`` card): load as squash(1 / (1 - rho)), 1 for rho >= 1
_SYS_K, _SYS_LOAD = 4, 6
# the class-row columns: present, need / k, arrival share, mean duration, SCV of the durations
_ROW_PRESENT, _ROW_NEED, _ROW_SHARE, _ROW_MEAN, _ROW_SCV = 0, 1, 3, 6, 7


def unsquash(y: float) -> float:
    """The inverse of the observation's ``squash`` (``x -> log1p(x) / (1 + log1p(x))``) on ``[0, 1)``."""
    y = float(y)
    if not 0.0 <= y < 1.0:
        raise ValueError(f"squashed value: expected a number in [0, 1), got {y!r}")
    return math.expm1(y / (1.0 - y))


def duration_with_moments(mean: float, scv: float) -> Distribution:
    """A duration distribution with this mean and squared coefficient of variation (see the module
    docstring for the family chosen)."""
    if scv < MIN_GAMMA_SCV:
        return Deterministic(mean)
    if abs(scv - 1.0) < 1e-3:  # the observation is float32: an exponential class reads as 1 +- 1e-6
        return Exponential(mean)
    if scv < 1.0:
        return Gamma(mean, scv)
    return HyperExponential(mean=mean, scv=min(scv, MAX_MODEL_SCV))


def system_from_class_set(obs: np.ndarray, features: int) -> Workload | None:
    """The Poisson system a class-set observation (one row of ``8 + slots * features`` floats)
    describes, its classes in a canonical order; ``None`` where the observation does not determine it
    (``k`` of 65,536 or more, an offered load of 1 or more, no class)."""
    obs = np.asarray(obs, dtype=np.float64)
    system = obs[:SET_SYSTEM_FEATURES]
    if system[_SYS_K] >= _MAX_K_COLUMN or system[_SYS_LOAD] >= 1.0:
        return None
    k = round(float(2.0 ** (16.0 * system[_SYS_K])))
    load = 1.0 - 1.0 / unsquash(system[_SYS_LOAD]) if system[_SYS_LOAD] > 0.0 else 0.0
    rows = obs[SET_SYSTEM_FEATURES:].reshape(-1, features)
    rows = rows[rows[:, _ROW_PRESENT] > 0.5]
    if not rows.size or not 0.0 < load < 1.0:
        return None
    # canonical order: the rebuilt system, and every run on it, do not depend on the classes' order
    order = np.lexsort(rows[:, [_ROW_SCV, _ROW_MEAN, _ROW_SHARE, _ROW_NEED]].T)
    rows = rows[order]
    shares = rows[:, _ROW_SHARE] / rows[:, _ROW_SHARE].sum()
    classes = []
    for row, share in zip(rows, shares, strict=True):
        need = min(max(round(float(row[_ROW_NEED] * k)), 1), k)
        duration = duration_with_moments(unsquash(row[_ROW_MEAN]), unsquash(row[_ROW_SCV]))
        classes.append(JobClass(need, duration, float(share), f"need-{need}"))
    return Workload(num_servers=k, classes=classes, load=load, name="observed")


def any_system() -> Workload:
    """A plain system (three classes of needs 1, 2 and 4 on 6 servers, exponential durations), with
    none of the structure a narrow heuristic asks for (one-or-all, say). The agent meets every kind of
    system, so a heuristic it may follow that is refused here is refused before any run."""
    classes = [JobClass(n, Exponential(1.0), p, f"need-{n}") for n, p in ((1, 0.5), (2, 0.3), (4, 0.2))]
    return Workload(num_servers=6, classes=classes, load=0.5, name="any")


def refuse_narrow(policy: Any, field: str, spec: str) -> None:
    """A one-line ``ValueError`` naming ``field`` and ``spec`` if ``policy`` (a heuristic the agent may
    follow) is not defined on :func:`any_system`: the agent meets every kind of system, so each of
    its heuristics must run on each."""
    from msj_gym.registry import supports

    narrow = supports(policy, any_system())
    if narrow is not None:
        raise ValueError(f"{field}: {spec!r} is not defined on every system ({narrow})")


def run_mean(result: Any, flagged: bool = True) -> float:
    """A run's mean response time, ``inf`` if it is flagged unstable. With ``flagged`` false, a run
    whose only flag is a rising number in system keeps its mean (on a run of a few thousand arrivals
    that is often a queue still draining, and a run that really runs away has a mean to show it);
    one that left measured jobs waiting (a starved class: the mean of the others would flatter it)
    stays ``inf``."""
    from msj_gym.metrics.result import GROWING_TREND

    if result.stable or (not flagged and result.stability_note.startswith(GROWING_TREND)):
        return float(result.mean_response_time)
    return math.inf


def little_mean(result: Any) -> float:
    """A run's mean number in system over its arrival rate: its mean response time by Little's law,
    flagged or not. Unlike the mean over the jobs that left, it counts the jobs still waiting at the
    end for the time they waited, so a run that starves a class shows it (``inf``: nothing to
    divide)."""
    rate = float(result.arrival_rate)
    value = float(result.mean_jobs_in_system) / rate if rate > 0 else math.inf
    return value if math.isfinite(value) else math.inf


def play_together(
    envs: Sequence[Any],
    seeds: Sequence[int],
    act: Callable[[list[int], np.ndarray, np.ndarray], Sequence[int]],
    flagged: bool = True,
) -> np.ndarray:
    """Each env's episode from ``reset(seed=...)``, all stepped together: at each step ``act(live,
    observations, masks)`` gives the actions of the envs still running (``live``, their indices),
    so that a network sees one batch per step. Returns each run's mean as :func:`run_mean` counts it
    (``flagged``)."""
    obs, masks = [], []
    for env, s in zip(envs, seeds, strict=True):
        o, info = env.reset(seed=s)
        obs.append(o)
        masks.append(info["action_mask"])
    out = np.full(len(envs), math.inf)
    live = list(range(len(envs)))
    while live:
        actions = act(live, np.array([obs[j] for j in live]), np.array([masks[j] for j in live]))
        still = []
        for j, a in zip(live, actions, strict=True):
            obs[j], _, _, over, info = envs[j].step(int(a))
            masks[j] = info["action_mask"]
            if over:
                out[j] = run_mean(envs[j].unwrapped.result(), flagged)
            else:
                still.append(j)
        live = still
    return out


def _described(workload: Workload) -> str:
    """A rebuilt system in a few words, for what is said on stderr."""
    classes = len(workload.classes)
    return (
        f"k = {workload.num_servers}, {classes} class{'es' if classes > 1 else ''}, load {workload.load:.3g}"
    )


@dataclass
class _StoredPlan:
    """One system's plan on disk (see :class:`SimulatedSelector`), the whole key and a SHA-256 of the
    key and the plan stored beside it: an entry that is unreadable, keyed otherwise, edited or damaged
    since it was written (its digest does not match), or whose choices are not among the ``choices``
    heuristics it may follow, is computed again (a one-line note says so where it was there but did
    not check out); one that cannot be written is not kept (the cache saves time, it is never
    needed)."""

    key: str
    choices: int = 0  # heuristics a plan may pick (the selector's bases and fallbacks)

    @property
    def path(self) -> Path:
        from msj_gym.atomic import cache_folder

        return cache_folder("plans") / f"{hashlib.sha256(self.key.encode()).hexdigest()[:32]}.json"

    def _digest(self, got: tuple[int, int, int]) -> str:
        return hashlib.sha256(json.dumps([self.key, *got]).encode()).hexdigest()

    def get(self) -> tuple[int, int, int] | None:
        try:
            entry = json.loads(self.path.read_text())
            if entry["key"] != self.key:
                return None
            got = int(entry["pick"]), int(entry["mode"]), int(entry["alone"])
        except (OSError, ValueError, KeyError, TypeError):
            return None
        fits = 0 <= got[0] < self.choices and got[1] in (-1, 0, 1) and 0 <= got[2] < self.choices
        if entry.get("digest") != self._digest(got) or not fits:
            print(
                f"msj-gym: note: cached plan {str(self.path)!r} does not check out (edited or damaged); "
                "planning again",
                file=sys.stderr,
                flush=True,
            )
            return None
        return got

    def put(self, got: tuple[int, int, int]) -> None:
        from msj_gym.atomic import atomic_write_text

        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            entry = {"key": self.key, "pick": got[0], "mode": got[1], "alone": got[2]}
            atomic_write_text(self.path, json.dumps({**entry, "digest": self._digest(got)}))
        except OSError:
            pass


# plays the agent on a rebuilt system: (its network's mean response time following each base, that of
# the given base followed throughout), over the selector's seeds
Rehearsal = Callable[[Workload, int], tuple[np.ndarray, float]]


@dataclass
class SimulatedSelector:
    """Picks the base to follow on the system an observation describes by simulating each of
    ``bases`` (registry specs, in the order of the env's advisors) on it, ``seeds`` runs of
    ``arrivals`` arrivals each; a base whose run is flagged unstable counts as unstable. The pick is
    the base with the least excess over the best (its mean response time over the best's, minus 1),
    less ``lean`` for base ``safest``. Each system is simulated once (kept by its observed
    columns, up to ``cache`` systems in the process, and on disk in the cache folder ``plans`` (see
    :func:`msj_gym.atomic.cache_folder`) for every process: keyed by the selector's settings, the
    system, the code that simulates it and, for a rehearsal, the network's weights, so that a changed
    one is never served an old plan).

    ``fallbacks`` are more heuristics to choose from (the env's next advisors, after the bases), ones
    the network was not trained beside: where one is picked it is followed throughout, the network set
    aside (unless a rehearsal, below, trusts the network instead). A fallback's excess counts
    ``lean`` more, since picking it forgoes what the network adds to a base; so a fallback is picked
    only where it simulates better than every base by more than ``lean`` (than the safe base by twice
    that). They widen the heuristics the agent can fall back on to those of a system its bases do not
    suit (Least Servers First where short narrow jobs should go first, say).

    Where every heuristic is flagged on some run (a rare class of wide jobs still waiting when the
    runs stop, say), no mean response time is left to compare. With ``all_flagged="little"`` the
    pick is then made the same way among the heuristics flagged on the fewest runs, by each run's
    number in system over its arrival rate (:func:`little_mean`, Little's law), which counts the jobs
    left waiting; with ``"safest"`` it is the safe base.

    With ``rehearse`` arrivals (0: off) it also settles, per system, whether the agent's network is
    trusted there or the pick is followed throughout (what the gate head decides otherwise): the
    agent rehearses on the rebuilt system through its own env (``env_id`` with ``env_kwargs``), on
    ``seeds``, once with its network following each base (its guards as they are) and once following
    the pick throughout, the same jobs for each. The network's base is the one it rehearses best with
    (unless the pick is within ``lean`` of it); with ``trust`` >= 0 the network is trusted where its
    mean response time is below ``1 - trust`` times the pick's followed throughout, with ``trust`` < 0
    unless the pick's is below ``1 + trust`` times the network's (a lean towards the network). With
    ``rehearse_fallbacks`` false, a fallback pick is followed throughout without a rehearsal (it has
    simulated better than every base by the lean already). A short run whose only flag is a rising
    number in system keeps its mean here (:func:`run_mean` with ``flagged`` false): a few thousand
    arrivals at a heavy load are often still draining. A base pick scores the heuristic alone; the
    rehearsal scores the agent, the network and a heuristic together, which is what is then run.

    Where the network is trusted, its guards (a job waiting too long, a queue too long) hand decisions
    to a heuristic until they clear: with ``rescue="base"`` to the network's base, with
    ``"alone"`` to the heuristic simulated best alone on the system (the pick), which is the one that
    drains that system best. A rehearsal plays the network with the same rescue, so that it scores
    what is then run. :meth:`plan` gives the pick beside the base either way."""

    bases: Sequence[str]
    safest: int
    fallbacks: Sequence[str] = ()
    seeds: Sequence[int] = (0, 1)
    arrivals: int = 20_000
    lean: float = 0.01
    cache: int = 4096
    rehearse: int = 0
    trust: float = -0.02
    rehearse_fallbacks: bool = True
    all_flagged: str = "little"
    rescue: str = "base"
    env_id: str = "MSJ-v0"
    env_kwargs: dict[str, Any] | None = None
    # per system: (the base or heuristic followed, the trust, the pick)
    _picks: OrderedDict[bytes, tuple[int, int, int]] = field(
        default_factory=OrderedDict, init=False, repr=False
    )

    def __post_init__(self) -> None:
        from msj_gym.registry import policy_from_spec

        self.bases = tuple(str(b) for b in self.bases)
        self.fallbacks = tuple(str(b) for b in self.fallbacks)
        self.seeds = tuple(int(s) for s in self.seeds)
        for name, specs in (("bases", self.bases), ("fallbacks", self.fallbacks)):
            for b in specs:  # a spec that names no heuristic, or one narrower than the agent, before any run
                refuse_narrow(policy_from_spec(b, name), name, b)
        twice = sorted({b for b in self.followable if self.followable.count(b) > 1})
        if twice:
            raise ValueError(f"bases, fallbacks: expected each heuristic once, got {', '.join(twice)} twice")
        if not 0 <= self.safest < len(self.bases):
            raise ValueError(f"safest: expected a base index below {len(self.bases)}, got {self.safest}")
        if not self.seeds or self.arrivals < 1:
            raise ValueError(
                f"seeds, arrivals: expected some seeds and arrivals, got {self.seeds}, {self.arrivals}"
            )
        if not (math.isfinite(self.lean) and self.lean >= 0):
            raise ValueError(f"lean: expected a non-negative number, got {self.lean}")
        if isinstance(self.rehearse, bool) or not isinstance(self.rehearse, int) or self.rehearse < 0:
            raise ValueError(f"rehearse: expected a whole number of arrivals (0: off), got {self.rehearse!r}")
        if not isinstance(self.rehearse_fallbacks, bool):
            raise ValueError(f"rehearse_fallbacks: expected True or False, got {self.rehearse_fallbacks!r}")
        if self.all_flagged not in ALL_FLAGGED:
            raise ValueError(
                f"all_flagged: expected one of {', '.join(ALL_FLAGGED)}, got {self.all_flagged!r}"
            )
        if self.rescue not in RESCUES:
            raise ValueError(f"rescue: expected one of {', '.join(RESCUES)}, got {self.rescue!r}")
        if not (math.isfinite(self.trust) and -1 < self.trust < 1):
            raise ValueError(f"trust: expected a share in (-1, 1), got {self.trust}")
        if self.rehearse and not isinstance(self.env_kwargs, dict):
            raise ValueError(
                f"env_kwargs: the agent's env keywords are needed to rehearse, got {self.env_kwargs!r}"
            )

    def config(self) -> dict[str, Any]:
        """The keywords that make this selector again (a checkpoint keeps them)."""
        out = asdict(self)
        out.pop("_picks")
        out.update(bases=list(self.bases), fallbacks=list(self.fallbacks), seeds=list(self.seeds))
        return out

    @property
    def followable(self) -> tuple[str, ...]:
        """Every heuristic the agent may follow, in the order of the env's advisors: the bases, then
        the fallbacks."""
        return (*self.bases, *self.fallbacks)

    def means(self, workload: Workload) -> np.ndarray:
        """Each base's and then each fallback's mean response time on ``workload`` over the runs
        (``inf``: a run flagged)."""
        return self.measure(workload)[0]

    def measure(self, workload: Workload) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per heuristic of :attr:`followable` on ``workload`` over the runs: the mean response time
        (``inf``: a run flagged), how many runs are flagged, and the mean of each run's number in
        system over its arrival rate (Little's law), which counts the jobs a run leaves waiting."""
        from msj_gym import Simulator
        from msj_gym.registry import policy_from_spec

        means, flagged, little = (np.empty(len(self.followable)) for _ in range(3))
        for i, spec in enumerate(self.followable):
            runs = [
                Simulator(workload, policy_from_spec(spec), seed=s, num_arrivals=self.arrivals).run()
                for s in self.seeds
            ]
            means[i] = np.mean([run_mean(r) for r in runs])
            flagged[i] = sum(not r.stable for r in runs)
            little[i] = np.mean([little_mean(r) for r in runs])
        return means, flagged, little

    def pick(
        self, means: np.ndarray, flagged: np.ndarray | None = None, little: np.ndarray | None = None
    ) -> int:
        """The heuristic chosen (an index into :attr:`followable`) from their mean response times.
        Where every one is flagged on some run: with ``all_flagged="little"`` (and ``flagged`` and
        ``little`` from :meth:`measure`), the same choice among those flagged on the fewest runs by
        Little's-law means; otherwise the safe base."""
        best = float(np.min(means))
        if not math.isfinite(best):
            if self.all_flagged == "safest" or flagged is None or little is None:
                return self.safest
            fewest = np.asarray(flagged) == np.min(flagged)
            means = np.where(fewest & np.isfinite(little), np.asarray(little, dtype=float), math.inf)
            best = float(np.min(means))
            if not (math.isfinite(best) and best > 0):
                return self.safest
        excess = np.where(np.isfinite(means), means / best - 1.0, math.inf)
        excess[self.safest] -= self.lean
        excess[len(self.bases) :] += self.lean
        return int(np.argmin(excess))

    def choose(self, obs: np.ndarray, features: int) -> np.ndarray:
        """Per observation of the batch ``obs`` (``(B, 8 + slots * features)``), the base index
        chosen, or -1 where the observation does not determine the system (no rehearsal)."""
        return self.plan(obs, features)[0]

    def plan(
        self,
        obs: np.ndarray,
        features: int,
        rehearsal: Rehearsal | None = None,
        network: Callable[[], str] | None = None,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per observation of the batch ``obs``: the heuristic chosen (an index into
        :attr:`followable`; -1 where the observation does not determine the system), whether the
        agent's network is trusted there: 0 (trusted, and the base is the one the network does best
        with), 1 (the heuristic followed throughout: always so for a fallback) or -1 (not settled: no
        rehearsal, or a system not determined), and the heuristic simulated best alone there (the
        pick; -1 where the system is not determined). ``rehearsal`` plays the agent on a rebuilt system; a
        selector with ``rehearse`` needs it, and ``network``, a digest of the network it plays (asked
        only where a system is new), keys its plans on disk; without one they are kept in the
        process only."""
        if self.rehearse and rehearsal is None:
            raise ValueError("rehearsal: this selector rehearses the agent; its network must be passed")
        obs = np.asarray(obs, dtype=np.float32)
        # the columns that describe the system, not its state: the same at every decision of an episode
        static = obs[:, self._static_columns(obs.shape[1], features)]
        picks = np.empty(obs.shape[0], dtype=np.int64)
        modes = np.empty(obs.shape[0], dtype=np.int64)
        alone = np.empty(obs.shape[0], dtype=np.int64)
        for i in range(obs.shape[0]):
            key = static[i].tobytes()
            got = self._picks.get(key)
            if got is None:  # a system not seen in this order: the same pick as in any other order
                rows = static[i, len(STATIC_SYSTEM) :].reshape(-1, len(STATIC_CLASS))
                canonical = (
                    static[i, : len(STATIC_SYSTEM)].tobytes() + rows[np.lexsort(rows.T[::-1])].tobytes()
                )
                got = self._picks.get(canonical)
                if got is None:
                    try:
                        workload = system_from_class_set(obs[i], features)
                    except ValueError:  # columns no system has (a share of 0, say): the caller picks
                        workload = None
                    if workload is None:
                        got = (-1, -1, -1)
                    else:
                        got = self._planned(workload, rehearsal, self._stored(canonical, features, network))
                    self._keep(canonical, got)
                self._keep(key, got)
            picks[i], modes[i], alone[i] = got
        return picks, modes, alone

    def _planned(
        self, workload: Workload, rehearsal: Rehearsal | None, stored: _StoredPlan | None
    ) -> tuple[int, int, int]:
        """A new system's plan: from disk where it is there, else settled (and put on disk)."""
        got = stored.get() if stored is not None else None
        if got is not None:
            return got
        if stored is None:
            return self._settle(workload, rehearsal)
        from msj_gym.atomic import computed_once

        # workers meeting the same new system at once plan it once; the others read its plan
        with computed_once(stored.path, f"planning the agent on the same system ({_described(workload)})"):
            got = stored.get()
            if got is None:
                got = self._settle(workload, rehearsal)
                stored.put(got)
        return got

    def _settle(self, workload: Workload, rehearsal: Rehearsal | None) -> tuple[int, int, int]:
        """The base, the trust in the network and the pick on a rebuilt system (see the class docstring), each
        step said on stderr where it takes a while (a rehearsal takes seconds, once per system)."""
        from msj_gym.core.jit import announce

        planning = f"planning the agent on a system it has not seen ({_described(workload)})"
        with announce(f"{planning}: simulating its heuristics"):
            pick = self.pick(*self.measure(workload))
        fallback = pick >= len(self.bases)
        if not self.rehearse or rehearsal is None or (fallback and not self.rehearse_fallbacks):
            return pick, (1 if fallback else -1), pick
        with announce(f"{planning}: rehearsing it"):
            network, followed = rehearsal(workload, pick)
        best = int(np.argmin(network))
        # the network's base: the one it rehearses best with, unless the pick is within the lean of it
        base = best if fallback or network[best] < (1.0 - self.lean) * network[pick] else pick
        mine = float(network[base])
        if self.trust >= 0:  # a lean towards following: the network must win by the trust
            trusted = mine < (1.0 - self.trust) * followed
        else:  # a lean towards the network: following must win by as much
            trusted = not followed < (1.0 + self.trust) * mine
        return (base, 0, pick) if math.isfinite(mine) and trusted else (pick, 1, pick)

    def _stored(self, system: bytes, features: int, network: Callable[[], str] | None) -> _StoredPlan | None:
        """The disk entry of a system's plan (None: a rehearsal without the network's digest)."""
        if self.rehearse and network is None:
            return None
        from importlib.metadata import version

        from msj_gym.agents.evaluate import code_stamp

        doc = {
            "selector": self.config(),
            "features": int(features),
            "system": system.hex(),
            # what a plan is computed with: the simulator, envs and heuristics, this module and the
            # network's (its weights, and the libraries its arithmetic is done by)
            "code": code_stamp(Path(__file__), Path(__file__).with_name("set_policy.py")),
            "network": network() if self.rehearse and network is not None else None,
            "libraries": {m: version(m) for m in ("numpy", "numba", *(("torch",) if self.rehearse else ()))},
        }
        return _StoredPlan(json.dumps(doc, sort_keys=True, default=str), len(self.followable))

    def _keep(self, key: bytes, got: tuple[int, int, int]) -> None:
        self._picks[key] = got
        if len(self._picks) > self.cache:
            self._picks.popitem(last=False)

    @staticmethod
    def _static_columns(width: int, features: int) -> np.ndarray:
        """The observation's static columns: the system's, then each class slot's."""
        slots = (width - SET_SYSTEM_FEATURES) // features
        per_slot = SET_SYSTEM_FEATURES + features * np.arange(slots)[:, None] + np.array(STATIC_CLASS)
        return np.concatenate([np.array(STATIC_SYSTEM), per_slot.ravel()])
