"""Compare an env's actions by playing each out in sampled futures: what a scheduler deciding online
may know, all branches of a decision in one compiled call per base policy.

:mod:`msj_gym.env.branches` plays branches out in the episode's real future (its arrivals, its jobs'
real sizes): right for learning by simulation, wrong for an agent that decides online, which cannot
know either. :class:`FuturePlayer` gives each branch a **sampled** future instead, drawn from the
system's model (the workload the env was made from):

* the arrivals after now: the model's own Poisson stream (:meth:`Workload.arrivals`), on a generator of
  the player's own, ``horizon`` arrivals per future, then none;
* the service times of the jobs present: for a size-oblivious player, fresh draws for the waiting
  jobs and, for the running ones, draws of the remaining time given the time already served
  (:meth:`~msj_gym.workloads.distributions.Distribution.sample_residual`); a size-aware player
  (``know_sizes=True``) keeps the sizes the env holds, which a size-aware policy reads too.

Every action of a decision is played out in the same ``futures`` sampled futures (common random
numbers), by the env's own rule for the action and then by a base policy's compiled decision rule
with the engine's own loop, until the last of the sampled arrivals has left; a branch's cost is the
time integral of the number of jobs in the system over it (the sum of the response times still to
come, of the jobs present and of those sampled). What the player reads of the episode is what a
scheduler sees: the jobs present, their classes, arrival and start times and the time each has been
served, and the clock. It never reads the episode's future arrivals nor (size-oblivious) a job's
size: ``tests/env/test_futures.py`` changes both and checks that the costs stay the same, bit for bit.

The copy of the state per branch holds only the job slots a branch can touch (those of the jobs
present, and the next ``horizon + 1`` free ones, since the engine reuses freed slots first), so a
branch costs what its events cost, whatever the size of the env's state.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

import numba
import numpy as np

from ..core import state as S
from ..core.engine import _due, _heap_push, advance, apply, apply_one, can_decide
from ..core.jit import announce, internal_jit, kernel_jit
from ..core.kernels import decide, kernel_types
from ..core.policy import Policy
from ..native.copying import copy1d, copy2d
from .act import _decode, can_wait
from .branches import _fresh
from .layout import EP_QWIN

__all__ = ["FuturePlayer"]

# a branch's status: played to the end, stopped at the event limit, failed (the base's decision was
# refused, or it stalled), or past the env's queue limit
PLAYED, CUT, FAILED, OVERFLOW = 0, 1, 2, 3


@internal_jit
def _restore(dst, src, rows, nrows):
    """The parts of state ``src`` a branch reads or writes, into ``dst``: the scalars, the class table,
    the running jobs and their departure heap, and the job slots ``rows[:nrows]``."""
    copy1d(dst.iv, src.iv)
    copy1d(dst.fv, src.fv)
    copy2d(dst.ci, src.ci)
    copy1d(dst.run_list, src.run_list)
    copy1d(dst.heap_t, src.heap_t)
    copy1d(dst.heap_s, src.heap_s)
    for i in range(nrows):
        s = rows[i]
        for c in range(src.ji.shape[1]):
            dst.ji[s, c] = src.ji[s, c]
        for c in range(S.N_JF):
            dst.jf[s, c] = src.jf[s, c]
        for c in range(S.N_JS):
            dst.js[s, c] = src.js[s, c]


@internal_jit
def _resize(dst, present, remaining, f):
    """Give the jobs present the sizes of future ``f`` (``remaining[f, p]``: the remaining service of job
    ``present[p]`` from now; negative: keep the env's) and key the running ones at their new departures."""
    now = dst.fv[S.F_NOW]
    jf, js = dst.jf, dst.js
    changed = False
    for p in range(present.size):
        r = remaining[f, p]
        if r < 0.0:
            continue
        changed = True
        s = present[p]
        if dst.ji[s, S.STATE] == S.RUNNING:
            # REMAINING counts from the last start, as the engine settles it
            served = (now - jf[s, S.LAST_START]) * jf[s, S.RATE]
            js[s, S.REMAINING] = served + r
            js[s, S.SERVICE] = jf[s, S.ATTAINED] + served + r
        else:
            js[s, S.REMAINING] = r
            js[s, S.SERVICE] = jf[s, S.ATTAINED] + r
        js[s, S.NOISE] = 0.0
    if changed:
        dst.iv[S.I_HEAPN] = 0
        for q in range(dst.iv[S.I_NRUN]):
            s = dst.run_list[q]
            _heap_push(dst, s, _due(dst, s, jf[s, S.LAST_START]))  # as the engine keyed it at the start


@kernel_jit
def branch_rows(src, extra, rows):
    """The slots of the jobs in ``src`` and its next ``extra`` free slots, into ``rows``; returns how
    many, or -1 when fewer than ``extra`` slots are free."""
    iv, ji = src.iv, src.ji
    if iv[S.I_NFREE] < extra:
        return -1
    n = 0
    s = iv[S.I_SHEAD]
    while s != -1:
        rows[n] = s
        n += 1
        s = ji[s, S.SNEXT]
    s = iv[S.I_FREE_HEAD]
    for _ in range(extra):
        rows[n] = s
        n += 1
        s = ji[s, S.WNEXT]
    return n


@internal_jit
def _take(sim, ep, action):
    """Take env job ``action`` (a start of the oldest waiting job of a class) if it is valid now;
    returns whether it was."""
    s = _decode(sim, ep, action)
    if s < 0 or sim.ji[s, S.STATE] != S.WAITING or sim.ji[s, S.NEED] > sim.iv[S.I_FREE]:
        return False
    return apply_one(sim, s) == S.E_NONE


@internal_jit
def _widest_waiting(sim):
    """The waiting class with the largest server need (ties: the first), -1 if none waits."""
    ci = sim.ci
    best = -1
    for c in range(ci.shape[1]):
        if ci[S.C_NWAIT, c] > 0 and (best == -1 or ci[S.C_NEED, c] > ci[S.C_NEED, best]):
            best = c
    return best


@internal_jit
def _load_future(scratch, narr, times, classes, sizes):
    """Put a sampled future's arrivals (absolute times) in ``scratch``'s ring, from arrival ``narr``
    on, and end the stream after them."""
    mask = scratch.ring_t.size - 1
    horizon = times.size
    for i in range(horizon):
        r = (narr + i) & mask
        scratch.ring_t[r] = times[i]
        scratch.ring_c[r] = classes[i]
        scratch.ring_s[r] = sizes[i]
        scratch.ring_n[r] = 0.0
    scratch.ring_t[(narr + horizon) & mask] = np.inf  # never arrives: the stream has ended


@internal_jit
def _branch_state(scratch, src, rows, nrows, ngen):
    """``scratch`` as a branch starts: ``src``'s state (the parts a branch touches), the stream fed up
    to ``ngen`` arrivals and nothing measured."""
    _restore(scratch, src, rows, nrows)
    iv, fv = scratch.iv, scratch.fv
    iv[S.I_NGEN] = ngen
    iv[S.I_EXHAUSTED] = 0
    iv[S.I_MEAS_LO] = -1  # nothing is measured: the branch pays by the time integral
    iv[S.I_MEAS_HI] = -1
    fv[S.F_HORIZON] = np.inf


@internal_jit
def _first_step(scratch, ep, action, persist, hold_wait):
    """Take the branch's ``action`` at the decision: a start of its class, or (0) a wait, which holds the
    idle servers for the widest class waiting now if it does not fit yet (if it does, waiting only
    waits: the hold is -1, and nothing starts while the wait is kept up). Returns (the branch's
    status, the held class, the engine's status, the decision epochs that keep the action up:
    ``persist``, or with ``hold_wait`` one for a start or a plain wait and every one for a hold)."""
    outcome = PLAYED
    hold = -1
    if action == 0:
        hold = _widest_waiting(scratch)
        if hold >= 0 and scratch.ci[S.C_NEED, hold] <= scratch.iv[S.I_FREE]:
            hold = -1
        st = advance(scratch)
    else:
        st = S.ST_EVENT
        if not _take(scratch, ep, action):
            outcome = FAILED
    keep = persist
    if hold_wait:
        keep = 1 if action != 0 or hold < 0 else 2**62
    return outcome, hold, st, keep


@internal_jit
def _keep_up(scratch, ep, action, hold, taken, persist, preemptive):
    """The branch's action kept up at a decision epoch (the ``taken``-th that takes it): a start takes
    as many of its class as fit; a wait starts the ``hold`` class's jobs once they fit (then the hold
    has done its work) and until then nothing, if waiting leads somewhere. Returns (``taken``, whether
    the base decides the rest of the epoch)."""
    if action == 0:
        started = False
        while hold >= 0 and _take(scratch, ep, 1 + hold * ep[EP_QWIN]):
            started = True
        if started:
            taken = persist
        return taken, started or not can_wait(scratch)
    while _take(scratch, ep, action):
        pass
    return taken, can_decide(scratch, preemptive)


@functools.cache
def _player() -> Any:
    @kernel_jit
    def play_futures(
        plain,
        sized,
        size_aware,
        every_event,
        src,
        scratch,
        view,
        sizes,
        template,
        pdata,
        words,
        rows,
        nrows,
        arrival_t,
        arrival_c,
        arrival_s,
        present,
        remaining,
        ep,
        actions,
        persist,
        hold_wait,
        max_events,
        costs,
        status,
    ):
        """For each future ``f`` (its arrivals ``arrival_*[f]``, absolute times) and each env job action
        ``actions[a]`` (0: wait; a start): restore ``scratch`` from ``src``, give the jobs present
        future ``f``'s sizes, take the action (:func:`_first_step`) and keep it up (:func:`_keep_up`)
        at the next decision epochs (``persist - 1`` of them; with ``hold_wait``, none after a start,
        and a hold until the held class's jobs fit); from then on the base decides at every event
        (every one if ``every_event``, else where it can act) until the system is empty.
        ``costs[f, a]``: the time integral of the jobs in the system over the branch; ``status[f, a]``
        as the module's ``PLAYED`` ... ``OVERFLOW``."""
        preemptive = src.iv[S.I_PREEMPTIVE] != 0
        narr = src.iv[S.I_NARR]
        horizon = arrival_t.shape[1]
        for f in range(arrival_t.shape[0]):
            _load_future(scratch, narr, arrival_t[f], arrival_c[f], arrival_s[f])
            for a in range(actions.size):
                _branch_state(scratch, src, rows, nrows, narr + horizon + 1)
                _resize(scratch, present, remaining, f)
                iv, fv = scratch.iv, scratch.fv
                start = fv[S.F_RUN_AREA]
                t0 = fv[S.F_NOW]
                _fresh(pdata, template)
                action = actions[a]
                outcome, hold, st, keep = _first_step(scratch, ep, action, persist, hold_wait)
                taken = 1  # decision epochs that took the action
                events = 0
                while outcome == PLAYED and st == S.ST_EVENT:
                    if every_event or can_decide(scratch, preemptive):
                        ask = True
                        if taken < keep and can_decide(scratch, preemptive):
                            taken, ask = _keep_up(scratch, ep, action, hold, taken + 1, keep, preemptive)
                        if ask:
                            n = decide(plain, sized, size_aware, view, sizes, pdata, words)
                            if n > 0 and apply(scratch, words, n) != S.E_NONE:
                                outcome = FAILED
                                break
                    st = advance(scratch)
                    events += 1
                    if events >= max_events:
                        outcome = CUT
                        break
                if outcome == PLAYED and st != S.ST_FINISHED:
                    outcome = OVERFLOW if st == S.ST_OVERFLOW else FAILED
                cost = fv[S.F_RUN_AREA] - start
                if outcome != PLAYED:
                    # what is left would still pay at least its jobs for as long again
                    cost += iv[S.I_NSYS] * (fv[S.F_NOW] - t0)
                costs[f, a] = cost
                status[f, a] = outcome
        return 0

    return play_futures


_PLAYERS: dict[tuple, Any] = {}


def _compiled(args: tuple) -> Any:
    """The entry point of ``play_futures`` for these argument types, the rule slots typed as functions
    of the kernels' fixed signatures (compiled once, then loaded from the cache)."""
    play = _player()
    key = tuple(numba.typeof(a) for a in args)
    fn = _PLAYERS.get(key)
    if fn is None:
        view_t, sizes_t, _, pdata_t, actions_t = key[2:7]
        sig = (
            *kernel_types(view_t, sizes_t, pdata_t, actions_t),
            numba.types.boolean,
            numba.types.boolean,
            *key,
        )
        with announce("compiling the future player"):
            play.compile(sig)
        fn = _PLAYERS[key] = play.overloads[sig].entry_point
    return fn


class _Base:
    """A base policy's compiled rule and its data, shaped for the player's scratch state."""

    def __init__(self, policy: Policy, workload: Any, slots: int, seed: int) -> None:
        self.policy = policy
        self.rule = policy.decision_rule()
        rng = np.random.Generator(np.random.PCG64(seed))
        self.template = policy.with_work(
            policy.prepare(workload, rng), slots, workload.num_servers, workload.num_classes
        )
        self.pdata = self.template._replace(
            state=self.template.state.copy(),
            iwork=self.template.iwork.copy(),
            fwork=self.template.fwork.copy(),
        )
        self.words = np.zeros(policy.action_words(workload.num_servers), dtype=np.int64)


class FuturePlayer:
    """The costs of a decision's actions in an :class:`~msj_gym.MSJEnv` with job actions
    (``actions="jobs"``), each played out in ``futures`` sampled futures of ``horizon`` arrivals by
    each of the ``bases`` (see the module docstring).

    ``costs(actions)`` returns an array ``(bases, futures, actions)``: the time integral of the number
    of jobs in the system from now until the sampled jobs have left, in the workload's time unit. A
    lower mean over the futures is a better action under that base.

    The futures come from a generator of the player's own (``seed``): the same seed and the same
    decisions give the same futures. ``know_sizes`` keeps the sizes of the jobs present as the env
    holds them (a size-aware scheduler's knowledge) instead of drawing them.

    With ``persist`` > 1 an action is a commitment kept up for the next ``persist - 1`` decision
    epochs: a start starts its class's jobs as they fit; waiting holds the idle servers for the
    widest class waiting at the decision if it does not fit yet (nothing else starts; that class's
    jobs start once they fit, and the hold ends), and where it fits already, waiting only waits,
    nothing starting while it is kept up. Only then does the base take over. Holding servers for a
    wide job once is nearly free when the base starts narrow jobs at the next event; holding them
    until the wide job fits is what helps, and only a persistent branch prices that. A base that
    keeps books at every event (the Quickswaps) takes over at once.

    A start kept up is no longer the base, though, and neither is the branch of the base's own
    action: a planner then compares commitments rather than one step and the base, and the rollout
    argument (no worse than the base) is lost. With ``hold`` (``persist`` aside), a start is followed
    by the base at once, and only the wait is kept up: held for the widest class waiting until its
    jobs fit, however many epochs that takes; where nothing is held, it is a plain wait.
    """

    def __init__(
        self,
        env: Any,
        bases: Sequence[str | Policy],
        *,
        futures: int = 8,
        horizon: int = 64,
        seed: int | np.random.SeedSequence = 0,
        know_sizes: bool = False,
        persist: int = 1,
        hold: bool = False,
        max_events: int | None = None,
    ) -> None:
        env = getattr(env, "unwrapped", env)
        for name, value, lo in (("futures", futures, 1), ("horizon", horizon, 1), ("persist", persist, 1)):
            if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < lo:
                raise ValueError(f"{name}: expected an integer >= {lo}, got {value!r}")
        if env.action_mode != "jobs":
            raise ValueError(
                f"FuturePlayer: plays job actions (actions='jobs'); the env takes {env.action_mode!r} actions"
            )
        workload = env.workload
        if not hasattr(workload, "arrival_rate") or not hasattr(workload, "with_load"):
            raise ValueError(
                f"FuturePlayer: the futures are drawn from a Poisson workload's model; {workload.name!r} "
                "is a recorded trace, which has none"
            )
        if not bases:
            raise ValueError("bases: expected at least one base policy")
        self.env = env
        self.policies = [env._baseline("base", b) for b in bases]
        for p in self.policies:
            if type(p).kernel is None:
                raise ValueError(f"base: {p.policy_id!r} has no compiled kernel")
            if p.size_aware and not know_sizes:
                raise ValueError(
                    f"base: {p.policy_id!r} reads job sizes, which a size-oblivious player does not know; "
                    "give know_sizes=True for a size-aware one"
                )
        self.futures, self.horizon, self.persist = int(futures), int(horizon), int(persist)
        self.know_sizes = bool(know_sizes)
        self.hold = bool(hold)
        self.max_events = max_events
        self.seed = seed
        root = seed if isinstance(seed, np.random.SeedSequence) else np.random.SeedSequence(seed)
        arrivals, sizes = root.spawn(2)
        self._stream = workload.arrivals(arrivals)
        self._rng = np.random.default_rng(sizes)
        self._ring = 1 << int(self.horizon + 1).bit_length()
        self._shape: tuple | None = None

    def _setup(self) -> None:
        """Scratch state and the bases' data shaped like the env's current state (again when its job
        slots grow)."""
        env = self.env
        sim = env.core.sim
        shape = (id(env.core), sim.ji.shape)
        if shape == self._shape:
            return
        slots = sim.ji.shape[0]
        attrs = sim.ring_a.shape[1]
        nclass = sim.ci.shape[1]
        ring = self._ring
        self._scratch = S.Sim(
            iv=sim.iv.copy(),
            fv=sim.fv.copy(),
            jf=sim.jf.copy(),
            js=np.zeros_like(sim.js),  # never the env's sizes: every branch writes its own
            ji=sim.ji.copy(),
            ci=sim.ci.copy(),
            run_list=sim.run_list.copy(),
            heap_t=sim.heap_t.copy(),
            heap_s=sim.heap_s.copy(),
            ring_t=np.zeros(ring),
            ring_c=np.zeros(ring, dtype=np.int64),
            ring_s=np.zeros(ring),
            ring_n=np.zeros(ring),
            ring_a=np.full((ring, attrs), -1, dtype=np.int64),
            acc_f=np.zeros((1, nclass, S.N_ACCF)),
            acc_i=np.zeros((1, nclass, S.N_ACCI), dtype=np.int64),
            ck_key=np.full(1, np.inf),
            ck_nsys=np.zeros(1, dtype=np.int64),
            rec=np.full((1, S.N_REC), np.nan),
        )
        self._view = S.make_view(self._scratch)
        self._sizes = S.make_sizes(self._scratch)
        self._rows = np.zeros(slots, dtype=np.int64)
        self._dirty = np.zeros(0, dtype=np.int64)
        self._bases = [_Base(p, env.workload, slots, env.core.policy_seed) for p in self.policies]
        # each base's entry point, found once per setup: typing the arguments at every decision cost
        # more than a heuristic base's play-outs
        self._entries: list[Any] = [None] * len(self._bases)
        for base in self._bases:
            rule = base.rule
            types = [numba.typeof(a) for a in (self._view, self._sizes, base.pdata, base.words)]
            with announce(f"compiling {rule.name}"):
                if rule.size_aware:
                    rule.sized.compile(tuple(types))
                else:
                    rule.plain.compile((types[0], *types[2:]))
        self._shape = shape

    def costs(self, actions: np.ndarray, futures: int | None = None) -> np.ndarray | None:
        """Costs ``(bases, futures, actions)`` of env job ``actions`` (valid ones) at the current
        decision, in ``futures`` futures (default: the player's) drawn now, new ones at every call;
        ``None`` where the state has too few free job slots for the branches (the caller then decides
        otherwise)."""
        sim = self._live()
        if sim.iv[S.I_NFREE] < self.horizon + 1:
            return None
        f = self.futures if futures is None else int(futures)
        now = float(sim.fv[S.F_NOW])
        present = self._present(sim)
        return self.costs_in(actions, *self._arrivals(now, f), self._present_sizes(sim, present, f))

    def costs_in(
        self,
        actions: np.ndarray,
        arrival_t: np.ndarray,
        arrival_c: np.ndarray,
        arrival_s: np.ndarray,
        remaining: np.ndarray,
    ) -> np.ndarray | None:
        """:meth:`costs` in given futures: ``arrival_*`` ``(futures, horizon)`` arrays of arrival times
        (absolute, after now), classes and service times, and ``remaining`` ``(futures, jobs present)``
        remaining service times of the jobs present in the order of :meth:`present_jobs` (negative:
        the env's own). The sampled ones are what :meth:`costs` passes; a test passes the episode's."""
        sim = self._live()
        self._setup()
        scratch = self._scratch
        f, horizon = arrival_t.shape
        rows = self._rows
        nrows = int(branch_rows(sim, horizon + 1, rows))
        if nrows < 0:
            return None
        # rows an earlier decision's branches touched and this one's restore does not: free, so that
        # a rule that looks at every slot never sees a stale job
        stale = np.setdiff1d(self._dirty, rows[:nrows])
        scratch.ji[stale, S.STATE] = S.FREE_SLOT
        self._dirty = rows[:nrows].copy()
        nsys = int(sim.iv[S.I_NSYS])
        present = rows[:nsys].copy()
        if remaining.shape != (f, nsys) or arrival_c.shape != (f, horizon) or arrival_s.shape != (f, horizon):
            raise ValueError(
                f"futures: expected arrivals of shape {(f, horizon)} and remaining of shape {(f, nsys)}, got "
                f"{arrival_c.shape}, {arrival_s.shape} and {remaining.shape}"
            )
        if self._ring < horizon + 2:
            self._ring = 1 << int(horizon + 1).bit_length()
            self._shape = None
            self._setup()
            scratch = self._scratch
        acts = np.ascontiguousarray(actions, dtype=np.int64)
        out = np.zeros((len(self._bases), f, acts.size))
        status = np.zeros((len(self._bases), f, acts.size), dtype=np.int64)
        limit = self.max_events if self.max_events is not None else 40 * (nsys + horizon) + 1000
        for b, base in enumerate(self._bases):
            args = (
                sim,
                scratch,
                self._view,
                self._sizes,
                base.template,
                base.pdata,
                base.words,
                rows,
                nrows,
                np.ascontiguousarray(arrival_t, dtype=np.float64),
                np.ascontiguousarray(arrival_c, dtype=np.int64),
                np.ascontiguousarray(arrival_s, dtype=np.float64),
                present,
                np.ascontiguousarray(remaining, dtype=np.float64),
                self.env._ep,
                acts,
                # a base that keeps books at every event (the Quickswaps) is asked at every one
                1 if base.rule.every_event else self.persist,
                self.hold and not base.rule.every_event,
                int(limit),
                out[b],
                status[b],
            )
            rule = base.rule
            play = self._entries[b]
            if play is None:
                play = self._entries[b] = _compiled(args)
            play(rule.plain, rule.sized, rule.size_aware, rule.every_event, *args)
        self.last_status = status
        return out

    def present_jobs(self) -> np.ndarray:
        """The slots of the jobs present now, in the order the ``remaining`` of :meth:`costs_in`
        follows (arrival order)."""
        return self._present(self._live())

    def _live(self) -> Any:
        env = self.env
        if env.core is None or env._over:
            raise RuntimeError("FuturePlayer: the env has no decision due (reset it first)")
        return env.core.sim

    @staticmethod
    def _present(sim: Any) -> np.ndarray:
        out = np.zeros(int(sim.iv[S.I_NSYS]), dtype=np.int64)
        s, i = int(sim.iv[S.I_SHEAD]), 0
        while s != -1:
            out[i] = s
            i += 1
            s = int(sim.ji[s, S.SNEXT])
        return out

    def _arrivals(self, now: float, f: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``futures`` x ``horizon`` arrivals of the model after ``now``: consecutive stretches of the
        player's own stream, each moved to start at ``now`` (Poisson arrivals are memoryless)."""
        h = self.horizon
        prev = self._stream._time
        chunk = self._stream.next_chunk(f * h)
        t = chunk.arrival_time.reshape(f, h)
        before = np.concatenate(([prev], chunk.arrival_time[h - 1 :: h][:-1]))
        times = now + (t - before[:, None])
        return (
            times,
            chunk.job_class.reshape(f, h).copy(),
            chunk.service_time.reshape(f, h).copy(),
        )

    def _present_sizes(self, sim: Any, present: np.ndarray, f: int) -> np.ndarray:
        """``futures`` x ``present`` remaining service times of the jobs present (``-1``: keep the env's,
        for a size-aware player), drawn given what each job has been served."""
        out = np.full((f, present.size), -1.0)
        if self.know_sizes or present.size == 0:
            return out
        now = float(sim.fv[S.F_NOW])
        cls = sim.ji[present, S.CLS]
        jf = sim.jf[present]
        running = sim.ji[present, S.STATE] == S.RUNNING
        ages = jf[:, S.ATTAINED] + np.where(running, (now - jf[:, S.LAST_START]) * jf[:, S.RATE], 0.0)
        for c, job_class in enumerate(self.env.workload.classes):
            idx = np.flatnonzero(cls == c)
            if idx.size:
                draws = job_class.service_time.sample_residual(self._rng, np.tile(ages[idx], f))
                out[:, idx] = draws.reshape(f, idx.size)
        return out
