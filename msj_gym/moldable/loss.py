"""A compiled discrete-event simulator of the moldable loss system (Ghanbarian et al. (2024), Sec. 2).

No queue: the only decisions are at arrivals. An arrival that finds no idle server is lost without
asking the policy; otherwise the policy's rule gives it ``k >= 1`` servers (or rejects it), which it
holds until ``arrival time + inherent size / s(k)``. Running jobs sit in a min-heap of completion
times; departures at the same instant as an arrival are processed first.

Randomness: one ``SeedSequence(seed)`` spawns, in this order, the inter-arrival stream, the class
stream, the policy stream (one uniform per arrival, which the probabilistic rules use to draw ``J``) and
one inherent-size stream per class. Every arrival's class, size and uniform are fixed by the seed
whatever the policy does (common random numbers), and the batch loop and the step interface used by
``MSJMoldable-v0`` run the same compiled ``_advance`` / ``_apply``, so one seed gives bit-identical
results along both paths.

Measurement: arrivals with index ``warmup .. num_arrivals-1`` (the run stops after the last one: every
admitted job's execution time is known at admission). Blocking probability and mean execution time of
accepted jobs come with batch-means 95 % CIs (ratio estimators over ``num_batches`` contiguous batches of
arrivals); the time averages of ``Q_{c,i} / n`` are taken between the first and last measured arrival.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any, NamedTuple

import numpy as np

from ..core.jit import inline_jit, kernel_jit
from ..core.simulator import arrival_count
from ..metrics.stats import Estimate, batch_ratio
from ..registry import make_moldable_policy
from .model import MoldableSystem
from .policy import AllocationRule, MoldablePolicy, allocate

__all__ = ["LossSimulator", "MoldableClassResult", "MoldableResult", "moldable_policy", "simulate_moldable"]

# integer scalars
I_N, I_IDLE, I_NRUN, I_POS, I_LEN, I_BASE, I_LO, I_HI, I_NB, I_PENDING, I_MEASURING = range(11)
I_ALL_BLOCKED, I_ALL_ACCEPTED, I_DEPARTURES = 11, 12, 13
N_I = 14
# float scalars
F_NOW, F_T0, F_T1, F_ALL_TIME = 0, 1, 2, 3
N_F = 4
# advance() outcomes
PENDING, REFILL, DONE = 0, 1, 2


class LossState(NamedTuple):
    iv: np.ndarray
    fv: np.ndarray
    heap_t: np.ndarray  # running jobs: completion time, class, servers (min-heap on time)
    heap_c: np.ndarray
    heap_k: np.ndarray
    busy: np.ndarray  # servers held per class
    q: np.ndarray  # q[c, i]: class-c jobs running on i servers
    q_area: np.ndarray  # time integral of q over the measurement window
    speed: np.ndarray  # speed[c, i] = s_c(i)
    at: np.ndarray  # arrival chunk: time, class, inherent size, policy uniform
    ac: np.ndarray
    ax: np.ndarray
    au: np.ndarray
    b_arr: np.ndarray  # per batch and class: measured arrivals, blocked, sum of execution times
    b_blk: np.ndarray
    b_time: np.ndarray
    alloc: np.ndarray  # alloc[c, k]: measured arrivals given k servers (k = 0: lost)


@inline_jit
def _integrate(st, t):
    if st.iv[I_MEASURING] == 1:
        dt = t - st.fv[F_NOW]
        for c in range(st.q.shape[0]):
            for i in range(st.q.shape[1]):
                st.q_area[c, i] += st.q[c, i] * dt
    st.fv[F_NOW] = t


@inline_jit
def _push(st, t, c, k):
    pos = st.iv[I_NRUN]
    st.iv[I_NRUN] = pos + 1
    ht, hc, hk = st.heap_t, st.heap_c, st.heap_k
    while pos > 0:
        parent = (pos - 1) >> 1
        if ht[parent] <= t:
            break
        ht[pos], hc[pos], hk[pos] = ht[parent], hc[parent], hk[parent]
        pos = parent
    ht[pos], hc[pos], hk[pos] = t, c, k


@inline_jit
def _pop(st):
    ht, hc, hk = st.heap_t, st.heap_c, st.heap_k
    m = st.iv[I_NRUN] - 1
    st.iv[I_NRUN] = m
    t, c, k = ht[m], hc[m], hk[m]
    pos = 0
    while True:
        child = 2 * pos + 1
        if child >= m:
            break
        if child + 1 < m and ht[child + 1] < ht[child]:
            child += 1
        if t <= ht[child]:
            break
        ht[pos], hc[pos], hk[pos] = ht[child], hc[child], hk[child]
        pos = child
    ht[pos], hc[pos], hk[pos] = t, c, k


@inline_jit
def _departures(st, t):
    iv = st.iv
    while iv[I_NRUN] > 0 and st.heap_t[0] <= t:
        td, c, k = st.heap_t[0], st.heap_c[0], st.heap_k[0]
        _integrate(st, td)
        _pop(st)
        st.busy[c] -= k
        iv[I_IDLE] += k
        st.q[c, k] -= 1
        iv[I_DEPARTURES] += 1


@inline_jit
def _record(st, g, c, k, exec_time):
    iv = st.iv
    if k == 0:
        iv[I_ALL_BLOCKED] += 1
    else:
        iv[I_ALL_ACCEPTED] += 1
        st.fv[F_ALL_TIME] += exec_time
    lo, hi = iv[I_LO], iv[I_HI]
    if lo <= g < hi:
        b = (g - lo) * iv[I_NB] // (hi - lo)
        st.b_arr[b, c] += 1
        if k == 0:
            st.b_blk[b, c] += 1
        else:
            st.b_time[b, c] += exec_time
        st.alloc[c, k] += 1


@inline_jit
def _advance(st):
    """Process events up to the next arrival that finds an idle server (PENDING), or stop at the end of
    the arrival chunk (REFILL) or of the run (DONE). Arrivals finding no idle server are lost here."""
    iv, fv = st.iv, st.fv
    while True:
        pos = iv[I_POS]
        g = iv[I_BASE] + pos
        if g >= iv[I_HI]:
            return DONE
        if pos >= iv[I_LEN]:
            return REFILL
        t = st.at[pos]
        _departures(st, t)
        _integrate(st, t)
        if g == iv[I_LO]:
            iv[I_MEASURING] = 1
            fv[F_T0] = t
        if g == iv[I_HI] - 1:
            fv[F_T1] = t
        if iv[I_IDLE] == 0:
            _record(st, g, st.ac[pos], 0, 0.0)
            iv[I_POS] = pos + 1
            continue
        iv[I_PENDING] = 1
        return PENDING


@inline_jit
def _apply(st, k):
    """Admit the pending arrival on ``k`` servers (k = 0: reject it). The caller checks k."""
    iv = st.iv
    pos = iv[I_POS]
    c = st.ac[pos]
    exec_time = 0.0
    if k > 0:
        exec_time = st.ax[pos] / st.speed[c, k]
        _push(st, st.fv[F_NOW] + exec_time, c, k)
        st.busy[c] += k
        iv[I_IDLE] -= k
        st.q[c, k] += 1
    _record(st, iv[I_BASE] + pos, c, k, exec_time)
    iv[I_POS] = pos + 1
    iv[I_PENDING] = 0


@kernel_jit
def advance(st):
    return _advance(st)


@kernel_jit
def apply(st, k):
    _apply(st, k)


@kernel_jit
def run_batch(st, rule):
    """The batch loop: advance, ask the rule, apply, until the chunk or the run ends."""
    while True:
        r = _advance(st)
        if r != PENDING:
            return r
        pos = st.iv[I_POS]
        k = allocate(rule, st.ac[pos], st.busy, st.iv[I_IDLE], st.au[pos])
        _apply(st, k)


@dataclass(frozen=True)
class MoldableClassResult:
    name: str
    arrivals: int
    blocked: int
    blocking: float
    blocking_ci95: float
    mean_execution_time: float
    execution_ci95: float
    allocation: list[int]  # measured accepted jobs by number of servers 1..d
    mean_jobs: list[float]  # time average of Q_i / n, i = 1..d


@dataclass(frozen=True)
class MoldableResult:
    """One run of the moldable loss system. ``blocking`` is the fraction of measured arrivals lost,
    ``mean_execution_time`` the mean execution time (inherent size / s(k)) of the accepted ones, both
    with batch-means 95 % half-widths; ``busy_fraction`` the time-average fraction of busy servers."""

    blocking: float
    blocking_ci95: float
    mean_execution_time: float
    execution_ci95: float
    arrivals: int
    blocked: int
    busy_fraction: float
    per_class: dict[str, MoldableClassResult]
    simulated_time: float
    batch_lag1_autocorrelation: float
    provenance: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        from ..metrics.result import json_clean

        return json_clean(asdict(self))

    def summary(self) -> str:
        lines = [
            f"blocking probability     {self.blocking:.6g} ± {self.blocking_ci95:.3g} (95% CI)",
            f"mean execution time      {self.mean_execution_time:.6g} ± {self.execution_ci95:.3g}",
            f"busy fraction            {self.busy_fraction:.6g}",
            f"measured arrivals        {self.arrivals} ({self.blocked} lost)",
        ]
        if len(self.per_class) > 1:
            for c in self.per_class.values():
                lines.append(
                    f"  {c.name:<12} blocking {c.blocking:.5g} ± {c.blocking_ci95:.2g}  "
                    f"E[T] {c.mean_execution_time:.5g} ± {c.execution_ci95:.2g}"
                )
        return "\n".join(lines)


def new_state(system: MoldableSystem, num_arrivals: int, warmup: int, num_batches: int) -> LossState:
    """The empty system at time 0 with room for one arrival chunk (no arrivals yet)."""
    n, nc, dmax = system.num_servers, system.num_classes, system.max_parallelism
    ch = min(LossSimulator.CHUNK, num_arrivals)
    iv = np.zeros(N_I, dtype=np.int64)
    iv[I_N] = iv[I_IDLE] = n
    iv[I_LO], iv[I_HI], iv[I_NB] = warmup, num_arrivals, num_batches
    nb = num_batches
    return LossState(
        iv=iv,
        fv=np.zeros(N_F),
        heap_t=np.zeros(n),
        heap_c=np.zeros(n, dtype=np.int64),
        heap_k=np.zeros(n, dtype=np.int64),
        busy=np.zeros(nc, dtype=np.int64),
        q=np.zeros((nc, dmax + 1), dtype=np.int64),
        q_area=np.zeros((nc, dmax + 1)),
        speed=system.speed_table(),
        at=np.zeros(ch),
        ac=np.zeros(ch, dtype=np.int64),
        ax=np.zeros(ch),
        au=np.zeros(ch),
        b_arr=np.zeros((nb, nc), dtype=np.int64),
        b_blk=np.zeros((nb, nc), dtype=np.int64),
        b_time=np.zeros((nb, nc)),
        alloc=np.zeros((nc, dmax + 1), dtype=np.int64),
    )


class LossArrivals:
    """The job stream of one seeded run: arrival times, classes, inherent sizes and policy uniforms,
    generated in chunks of ``LossSimulator.CHUNK`` (fixed: the times are chunk-wise cumulative sums)
    from the streams spawned off ``SeedSequence(seed)`` in the documented order."""

    def __init__(self, system: MoldableSystem, seed: int, num_arrivals: int) -> None:
        self.system, self.num_arrivals = system, num_arrivals
        root = np.random.SeedSequence(seed)
        streams = [np.random.Generator(np.random.PCG64(s)) for s in root.spawn(3 + system.num_classes)]
        self._rng_gap, self._rng_cls, self._rng_u = streams[:3]
        self._rng_size = streams[3:]
        rates = np.array([c.arrival_rate for c in system.classes])
        self._class_p = rates / rates.sum()
        self._mean_gap = 1.0 / system.arrival_rate
        self._t_last = 0.0
        self.generated = 0

    def fill(self, st: LossState) -> None:
        """The next chunk into ``st``'s arrival arrays (an empty one once every arrival is out)."""
        m = min(st.at.size, self.num_arrivals - self.generated)
        st.iv[I_BASE] = self.generated
        st.iv[I_POS] = 0
        st.iv[I_LEN] = m
        if m <= 0:
            return
        t = self._t_last + np.cumsum(self._rng_gap.exponential(self._mean_gap, m))
        self._t_last = float(t[-1])
        nc = self.system.num_classes
        cls = self._rng_cls.choice(nc, size=m, p=self._class_p) if nc > 1 else np.zeros(m, dtype=np.int64)
        x = np.empty(m)
        for c, cl in enumerate(self.system.classes):
            idx = np.flatnonzero(cls == c)
            x[idx] = cl.service_time.sample(self._rng_size[c], idx.size)
        bad = np.flatnonzero(~np.isfinite(x) | (x <= 0))
        if bad.size:
            raise ValueError(
                f"service_time: arrival {self.generated + bad[0]} has inherent size {x[bad[0]]!r}"
            )
        st.at[:m], st.ac[:m], st.ax[:m] = t, cls, x
        st.au[:m] = self._rng_u.random(m)
        self.generated += m


class LossSimulator:
    """One seeded run of a moldable allocation ``policy`` on ``system``.

    ``num_arrivals`` arrivals are simulated from an empty system; the first ``warmup`` (default 10 %)
    are not measured. Batch mode: :meth:`run`. Step mode (what ``MSJMoldable-v0`` drives):
    :meth:`next_decision` moves to the next arrival that finds an idle server, :meth:`admit` gives it
    ``k`` servers (0 rejects it); :meth:`result` summarises either way.
    """

    CHUNK = 1 << 15  # arrivals generated per refill; fixed so that a seed gives one job stream

    def __init__(
        self,
        system: MoldableSystem,
        policy: MoldablePolicy | None,
        *,
        seed: int = 0,
        num_arrivals: int = 100_000,
        warmup: int | None = None,
        num_batches: int = 30,
    ) -> None:
        if not isinstance(system, MoldableSystem):
            raise TypeError(f"system: expected a MoldableSystem, got {type(system).__name__}")
        if policy is not None and not isinstance(policy, MoldablePolicy):
            raise TypeError(f"policy: expected a MoldablePolicy, got {type(policy).__name__}")
        if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or seed < 0:
            raise ValueError(f"seed: expected a non-negative integer, got {seed!r}")
        num_arrivals, warmup = arrival_count(num_arrivals, warmup)
        if isinstance(num_batches, bool) or int(num_batches) < 2:
            raise ValueError(f"num_batches: expected an integer >= 2, got {num_batches!r}")
        self.system, self.policy = system, policy
        self.seed, self.num_arrivals, self.warmup = int(seed), num_arrivals, warmup
        self.num_batches = min(int(num_batches), num_arrivals - self.warmup)
        self.rule: AllocationRule | None = policy.prepare(system) if policy is not None else None
        self._setup()

    def _setup(self) -> None:
        self.arrivals = LossArrivals(self.system, self.seed, self.num_arrivals)
        self.state = new_state(self.system, self.num_arrivals, self.warmup, self.num_batches)
        self.refill()

    def refill(self) -> None:
        """The next arrival chunk into the state (what ``REFILL`` from the compiled loop asks for)."""
        self.arrivals.fill(self.state)

    # --- batch mode -------------------------------------------------------------------------------
    def run(self) -> MoldableResult:
        """Simulate every arrival under the policy and summarise."""
        if self.rule is None:
            raise ValueError("run: this simulator has no policy (it is driven through next_decision/admit)")
        while True:
            r = run_batch(self.state, self.rule)
            if r == DONE:
                return self.result()
            self.refill()

    # --- step mode --------------------------------------------------------------------------------
    def next_decision(self) -> bool:
        """Advance to the next arrival that finds an idle server; False once the run is over."""
        st = self.state
        if st.iv[I_PENDING]:
            return True
        while True:
            r = advance(st)
            if r == PENDING:
                return True
            if r == DONE:
                return False
            self.refill()

    @property
    def done(self) -> bool:
        return (
            not self.state.iv[I_PENDING] and self.state.iv[I_BASE] + self.state.iv[I_POS] >= self.num_arrivals
        )

    @property
    def pending_class(self) -> int:
        return int(self.state.ac[self.state.iv[I_POS]])

    @property
    def pending_uniform(self) -> float:
        """The pending arrival's uniform from the policy stream (what probabilistic rules draw with)."""
        return float(self.state.au[self.state.iv[I_POS]])

    @property
    def idle(self) -> int:
        return int(self.state.iv[I_IDLE])

    @property
    def now(self) -> float:
        return float(self.state.fv[F_NOW])

    def max_servers(self) -> int:
        """Largest allocation the pending arrival may get: min(d_c, idle servers)."""
        return min(self.system.classes[self.pending_class].max_parallelism, self.idle)

    def admit(self, k: int) -> None:
        """Give the pending arrival ``k`` servers (``0`` rejects it)."""
        if not self.state.iv[I_PENDING]:
            raise ValueError("admit: no arrival is waiting for a decision (call next_decision first)")
        hi = self.max_servers()
        if isinstance(k, bool) or int(k) != k or not 0 <= k <= hi:
            raise ValueError(f"k: expected an integer in [0, {hi}] (0 rejects), got {k!r}")
        apply(self.state, int(k))

    def counters(self) -> tuple[int, int, float]:
        """Over every arrival so far (measured or not): (lost or rejected, accepted, sum of the
        accepted jobs' execution times)."""
        iv = self.state.iv
        return int(iv[I_ALL_BLOCKED]), int(iv[I_ALL_ACCEPTED]), float(self.state.fv[F_ALL_TIME])

    # --- results ----------------------------------------------------------------------------------
    def result(self) -> MoldableResult:
        return loss_result(
            self.state,
            self.system,
            run_provenance(self.system, self.policy, self.seed, self.num_arrivals, self.warmup),
        )


def run_provenance(
    system: MoldableSystem, policy: MoldablePolicy | None, seed: int, num_arrivals: int, warmup: int
) -> dict[str, Any]:
    """What a :class:`MoldableResult` records of its run (``policy=None``: an agent acted)."""
    return {
        "system": system.to_dict(),
        "policy": policy.to_dict() if policy is not None else {"id": "agent"},
        "seed": seed,
        "num_arrivals": num_arrivals,
        "warmup": warmup,
    }


def overall_estimates(st: LossState) -> tuple[Estimate, Estimate]:
    """(blocking probability, mean execution time) over the measured arrivals of every class."""
    arr, blk = st.b_arr.sum(axis=1), st.b_blk.sum(axis=1)
    return batch_ratio(blk, arr), batch_ratio(st.b_time.sum(axis=1), arr - blk)


def loss_result(st: LossState, system: MoldableSystem, provenance: dict[str, Any]) -> MoldableResult:
    """The :class:`MoldableResult` of the run in state ``st`` (final once the run is over)."""
    sy = system
    span = float(st.fv[F_T1] - st.fv[F_T0])
    n = sy.num_servers
    per_class = {}
    for c, cl in enumerate(sy.classes):
        arr, blk = st.b_arr[:, c], st.b_blk[:, c]
        pb = batch_ratio(blk, arr)
        et = batch_ratio(st.b_time[:, c], arr - blk)
        d = cl.max_parallelism
        mean_jobs = (st.q_area[c, 1 : d + 1] / (span * n)).tolist() if span > 0 else [math.nan] * d
        per_class[cl.name] = MoldableClassResult(
            cl.name,
            int(arr.sum()),
            int(blk.sum()),
            pb.mean,
            pb.ci95_half_width,
            et.mean,
            et.ci95_half_width,
            st.alloc[c, 1 : d + 1].tolist(),
            mean_jobs,
        )
    pb, et = overall_estimates(st)
    ks = np.arange(st.q.shape[1])
    # correctly rounded: a BLAS product's summation order depends on the CPU
    busy = math.fsum((st.q_area * ks).ravel().tolist()) / (span * n) if span > 0 else math.nan
    return MoldableResult(
        blocking=pb.mean,
        blocking_ci95=pb.ci95_half_width,
        mean_execution_time=et.mean,
        execution_ci95=et.ci95_half_width,
        arrivals=int(st.b_arr.sum()),
        blocked=int(st.b_blk.sum()),
        busy_fraction=busy,
        per_class=per_class,
        simulated_time=float(st.fv[F_NOW]),
        batch_lag1_autocorrelation=et.lag1_autocorrelation,
        provenance=provenance,
    )


def moldable_policy(policy: str | MoldablePolicy, **params: Any) -> MoldablePolicy:
    """``policy`` itself, or (a scheme's id) the scheme made with ``params``, which only an id takes."""
    if isinstance(policy, str):
        return make_moldable_policy(policy, **params)
    if params:
        raise ValueError("params only apply when policy is given by id")
    return policy


def simulate_moldable(
    system: MoldableSystem,
    policy: str | MoldablePolicy,
    *,
    seed: int = 0,
    num_arrivals: int = 100_000,
    warmup: int | None = None,
    **params: Any,
) -> MoldableResult:
    """One batch run; ``policy`` an instance or a moldable scheme's id (``msj-gym list --model moldable``)."""
    scheme = moldable_policy(policy, **params)
    return LossSimulator(system, scheme, seed=seed, num_arrivals=num_arrivals, warmup=warmup).run()
