"""Compare an env's actions by simulation, all branches of a decision in one compiled call.

Rollout-based planning and policy improvement (``agents/improve.py``) ask, at a decision: what does
the episode cost from here if the agent takes action ``a`` and a base heuristic plays the rest? In
Python that is, per action, :func:`~msj_gym.env.planning.restore`, ``env.step`` and
:func:`~msj_gym.env.planning.play_out`:
a deep copy of the simulator and a handful of compiled calls. :class:`BranchPlayer` does the same
inside one compiled loop: for each branch it copies the state into a scratch state (the arrival
stream, which the engine only reads, is shared: every branch sees the same future jobs, the common
random numbers), takes the action with the env's own step, and runs the base's compiled decision rule
to the end of the episode with the engine's own loop. The results are the Python path's, bit for bit
where a branch is one step and a play-out (tested; to rounding where it takes several steps, see
:func:`python_costs`); a branch that needs something of Python (more job slots in a long queue, more
arrivals) is redone by the Python path.

The base is either a policy of its own, prepared afresh for every branch as a native run starts it,
or one of the env's advisors: then every branch follows that advisor to the end as the agent's action
for it does, from the advisor's data as the run has it (a Quickswap's phase), so that the costs are
those of the heuristic the agent would really follow.

The base must be a policy with a compiled kernel whose decisions do not draw from its random
generator (every MSJ baseline); its data is prepared fresh for every branch, as ``play_out`` does.
"""

from __future__ import annotations

import functools
from typing import Any

import numba
import numpy as np

from ..core import state as S
from ..core.engine import advance, apply, can_decide
from ..core.jit import compile_announced, internal_jit, kernel_jit
from ..core.kernels import decide, kernel_types
from ..core.policy import Policy
from ..native.copying import copy1d
from . import planning
from .batch import copy_state
from .layout import EP_ADVISE
from .stepping import reward_paid, step_of

__all__ = ["BASE_DECISION", "BranchPlayer", "python_costs"]

SCRATCH_SLOTS = 8192  # job slots of a branch's state: queues this long stay in compiled code
BASE_DECISION = -3  # a branch whose first decision is the base's own (``step_policy``), not an action
_WORDS = -10  # branch ``_WORDS - j``: apply the decision ``j`` given as engine words (an advisor's)
# per branch: played out in the compiled loop, ended within the step, or left to the Python path
_PLAYED, _ENDED, _PYTHON = 0, 1, 2


@internal_jit
def _fresh(pdata, template):
    """The policy's data as ``prepare`` made it (its parameters and tables are only read)."""
    copy1d(pdata.state, template.state)
    copy1d(pdata.iwork, template.iwork)
    copy1d(pdata.fwork, template.fwork)


@internal_jit
def _at_cap(sim, st, cap, finite):
    """What the Python side does when the engine asks for arrivals at the stream's cap (``cap``
    arrivals fed): marks the stream exhausted, and ends a run on an unending stream (it is cut
    short: unstable) or lets a finite one drain. Returns 1: the run ended, 2: go on, 0: not at the
    cap (only Python can feed more)."""
    if st != S.ST_NEED_ARRIVALS or sim.iv[S.I_NGEN] < cap:
        return 0
    sim.iv[S.I_EXHAUSTED] = 1
    return 2 if finite else 1


@internal_jit
def _due(mask, own):
    """Whether the env has a decision for the agent: one of its own actions but "wait" is valid."""
    for i in range(1, own):
        if mask[i]:
            return True
    return False


@internal_jit
def _branch_start(scratch, sim, mask, mask0, out, pdata, template, fresh):
    """A branch starts from the decision: ``sim``'s state, mask ``mask0``, nothing paid yet, and (if
    ``fresh``) the base's data as at the decision (the advisor's, if it is followed)."""
    copy_state(scratch, sim)
    copy1d(mask, mask0)
    for i in range(out.size):
        out[i] = 0.0
    if fresh:
        _fresh(pdata, template)


@internal_jit
def _after_step(scratch, st, at_cap):
    """The branch's status once its action is taken: ``_ENDED`` if the episode ended within the step (at
    the stream's cap, finished, or stalled), ``_PYTHON`` if the engine needs Python, else ``_PLAYED``
    (the base plays on)."""
    if at_cap == 1 or st == S.ST_FINISHED or (st == S.ST_ERROR and scratch.iv[S.I_ERR] == S.E_STALL):
        return _ENDED
    if st != S.ST_EVENT:
        return _PYTHON
    return _PLAYED


@internal_jit
def _apply_decision(plain, sized, size_aware, scratch, view, sizes, pdata, actions, a, words, offsets):
    """Apply branch action ``a`` given as a decision: the base's own (``BASE_DECISION``) or, ``_WORDS - j``,
    the engine words ``words[offsets[j]:offsets[j + 1]]`` (an advisor's); the env then advances as it
    does after a decision. Returns whether the engine took it."""
    if a == BASE_DECISION:
        n = decide(plain, sized, size_aware, view, sizes, pdata, actions)
        return not (n > 0 and apply(scratch, actions, n) != S.E_NONE)
    j = _WORDS - a
    lo, hi = offsets[j], offsets[j + 1]
    return not (hi > lo and apply(scratch, words[lo:hi], hi - lo) != S.E_NONE)


@internal_jit
def _play_out(plain, sized, size_aware, every_event, scratch, view, sizes, pdata, actions, cap, finite):
    """The base plays ``scratch`` out from a decision with the engine's own loop (asked at every event if
    ``every_event``, else where it can act). Returns ``ST_FINISHED`` if the episode ended (or the run
    stopped at the stream's cap: what it paid so far is the cost), else the status that needs Python."""
    preemptive = scratch.iv[S.I_PREEMPTIVE] != 0
    n = decide(plain, sized, size_aware, view, sizes, pdata, actions)
    if n > 0 and apply(scratch, actions, n) != S.E_NONE:
        return S.ST_ERROR
    while True:
        st = advance(scratch)
        if st != S.ST_EVENT:
            at_cap = _at_cap(scratch, st, cap, finite)
            if at_cap == 2:
                continue
            if at_cap == 1:
                st = S.ST_FINISHED
            return st
        if every_event or can_decide(scratch, preemptive):
            n = decide(plain, sized, size_aware, view, sizes, pdata, actions)
            if n > 0 and apply(scratch, actions, n) != S.E_NONE:
                return S.ST_ERROR


@functools.cache
def _player(step: Any) -> Any:
    """``play_branches`` with ``step``, the step of the env's modes, inlined."""

    @kernel_jit
    def play_branches(
        plain,
        sized,
        size_aware,
        every_event,
        sim,
        scratch,
        view,
        sizes,
        template,
        pdata,
        actions,
        ep,
        fpar,
        obs,
        mask0,
        mask,
        out,
        work,
        cap,
        finite,
        words,
        offsets,
        branch_actions,
        persist,
        own,
        rewards,
        areas,
        status,
    ):
        """For each ``branch_actions[b]`` (an env action, ``BASE_DECISION``, or ``_WORDS - j``: the engine
        words ``words[offsets[j]:offsets[j + 1]]``, an advisor's decision): from ``sim`` (a decision
        of the env with mask ``mask0``), take it as the env's step does (an env action: at the next
        ``persist - 1`` decisions too, while it stays valid), then let the base play the episode out
        natively. ``rewards[b]``: the steps' reward, ``areas[b]``: what the play-out pays (both
        unscaled); ``status[b]``: ``_PLAYED``, ``_ENDED`` (the episode ended within the step) or
        ``_PYTHON`` (the branch needs the Python path)."""
        for b in range(branch_actions.size):
            a = branch_actions[b]
            # the base decides or keeps books within the branch's step: its data as at this decision
            _branch_start(scratch, sim, mask, mask0, out, pdata, template, own > 0 or a == BASE_DECISION)
            if a == BASE_DECISION or a <= _WORDS:
                ok = _apply_decision(
                    plain, sized, size_aware, scratch, view, sizes, pdata, actions, a, words, offsets
                )
                if not ok:
                    status[b] = _PYTHON
                    continue
                a = -1
            taken = 0
            while True:
                st = step(scratch, a, ep, fpar, obs, mask, out, work)  # out[0] adds up the steps' rewards
                at_cap = _at_cap(scratch, st, cap, finite)
                # the env's own loop: past the cap, and (an advisor followed) past the events where
                # nothing is to be decided, at which an advisor that follows every event is asked
                while at_cap == 2 or (own > 0 and at_cap == 0 and st == S.ST_EVENT and not _due(mask, own)):
                    if at_cap == 0 and every_event:
                        decide(plain, sized, size_aware, view, sizes, pdata, actions)
                    st = step(scratch, -1, ep, fpar, obs, mask, out, work)
                    at_cap = _at_cap(scratch, st, cap, finite)
                taken += 1
                if taken >= persist or a < 0 or at_cap != 0 or st != S.ST_EVENT or not mask[a]:
                    break
            rewards[b] = out[0]
            areas[b] = 0.0
            status[b] = _after_step(scratch, st, at_cap)
            if status[b] != _PLAYED:
                continue
            start = reward_paid(scratch.fv, ep)
            if own == 0:  # a base of its own starts afresh, as play_out prepares it
                _fresh(pdata, template)
            st = _play_out(
                plain, sized, size_aware, every_event, scratch, view, sizes, pdata, actions, cap, finite
            )
            if st == S.ST_FINISHED:
                areas[b] = reward_paid(scratch.fv, ep) - start
            else:
                status[b] = _PYTHON
        return 0

    return play_branches


_PLAYERS: dict[tuple, Any] = {}


def _compiled(args: tuple) -> Any:
    """The entry point of ``play_branches`` for these argument types and the env's modes (its ``ep``
    among ``args``), the rule slots typed as functions of the kernels' fixed signatures (compiled
    once, then loaded from the cache)."""
    play_branches = _player(step_of(args[7]))
    key = (play_branches, *(numba.typeof(a) for a in args))
    fn = _PLAYERS.get(key)
    if fn is None:
        _, _, view_t, sizes_t, _, pdata_t, actions_t = key[1:8]
        sig = (
            *kernel_types(view_t, sizes_t, pdata_t, actions_t),
            numba.types.boolean,
            numba.types.boolean,
            *key[1:],
        )
        compile_announced(play_branches, sig, "compiling the branch player")
        fn = _PLAYERS[key] = play_branches.overloads[sig].entry_point
    return fn


class BranchPlayer:
    """The costs of a decision's actions in an :class:`~msj_gym.MSJEnv` (unweighted rewards) with a
    base heuristic playing each branch out: what ``restore``, ``step`` and ``play_out`` give,
    computed in one compiled call.

    ``costs(actions)`` returns, per entry of ``actions`` (env actions, an advisor's included, or
    :data:`BASE_DECISION` for the base's own decision as ``step_policy`` makes it), minus the reward
    the episode would still pay: ``-(step reward + play-out reward)`` in the env's reward units.

    With ``persist`` > 1 an env action is a commitment rather than one decision: the branch takes it
    again at each of the next ``persist - 1`` decisions while it stays valid (stopping at the first
    where the mask rules it out), and only then does the base take over. A one-decision deviation
    is nearly free when the base repairs it at once (one more narrow job ahead of a waiting wide
    one costs little if the base then holds servers for the wide job); the same choice made at
    every decision may starve a class, and a persistent branch prices that. The base's own decision
    and the advisors' are single decisions whatever ``persist``.

    A ``base`` that is one of ``env``'s advisors (the same object) is followed: every branch goes on as
    the agent's action for that advisor does, from the advisor's data as the env keeps it, asked at
    every event where the env asks it (:attr:`follows` is its index); and :data:`BASE_DECISION` is the
    advisor's advice at this decision. Another ``base`` is prepared afresh for every branch."""

    def __init__(self, env: Any, base: Policy, persist: int = 1) -> None:
        if isinstance(persist, bool) or not isinstance(persist, int | np.integer) or persist < 1:
            raise ValueError(f"persist: expected a positive integer, got {persist!r}")
        self.persist = int(persist)
        env = getattr(env, "unwrapped", env)
        # the base is one of the env's advisors: the play-outs follow it as its action does
        self.follows = next((j for j, p in enumerate(env.advisors) if p is base), None)
        if env.weighted:
            raise ValueError("BranchPlayer: weighted=True rewards are not supported; make the env unweighted")
        base = env._baseline("base", base)
        if type(base).kernel is None:
            raise ValueError(f"base: {base.policy_id!r} has no compiled kernel")
        self.env, self.base = env, base
        self.rule = base.decision_rule()
        self._shape: tuple | None = None
        self.compiled_branches = 0  # branches the compiled loop finished (the rest went to Python)
        self.python_branches = 0

    def _setup(self) -> None:
        """Scratch state, views and policy data shaped like the env's current state."""
        env = self.env
        core = env.core
        sim = core.sim
        shape = (id(core), sim.ji.shape, sim.rec.shape)
        if shape == self._shape:
            return
        fields = {
            name: (arr if name.startswith("ring_") else arr.copy()) for name, arr in sim._asdict().items()
        }
        slots = max(SCRATCH_SLOTS, sim.ji.shape[0])
        for name, width in (("ji", sim.ji.shape[1]), ("jf", S.N_JF), ("js", S.N_JS)):
            fields[name] = np.zeros((slots, width), dtype=fields[name].dtype)
        self._scratch = S.Sim(**fields)
        self._view = S.make_view(self._scratch)
        self._sizes = S.make_sizes(self._scratch)
        # the base's data as prepare_policy makes it (the run's policy stream), for the scratch's slots
        wl = env.workload
        rng = np.random.Generator(np.random.PCG64(core.policy_seed))
        self._template = self.base.with_work(
            self.base.prepare(wl, rng), slots, wl.num_servers, wl.num_classes
        )
        self._pdata = self._template._replace(
            state=self._template.state.copy(),
            iwork=self._template.iwork.copy(),
            fwork=self._template.fwork.copy(),
        )
        self._actions = np.zeros(self.base.action_words(env.workload.num_servers), dtype=np.int64)
        self._obs = env._obs.copy()
        self._mask = env._mask.copy()
        self._out = np.zeros_like(env._out)
        self._work = env._work.copy()
        self._fixed = (self._scratch, self._view, self._sizes, self._template, self._pdata, self._actions)
        rule, types = (
            self.rule,
            [numba.typeof(a) for a in (self._view, self._sizes, self._pdata, self._actions)],
        )
        if rule.size_aware:
            compile_announced(rule.sized, tuple(types), f"compiling {rule.name}")
        else:
            compile_announced(rule.plain, (types[0], *types[2:]), f"compiling {rule.name}")
        # the env's step parameters; the stops for the advisors' bookkeeping only where one is followed
        self._ep = env._ep.copy()
        if self.follows is None:
            self._ep[EP_ADVISE] = 0
        self._own = 0 if self.follows is None else env._n_actions - len(env.advisors)
        sample = (sim, *self._fixed, self._ep, env._fpar, self._obs, env._mask, self._mask, self._out)
        feed = core.arrivals
        self._cap, self._finite = int(feed.max_arrivals), bool(feed.finite)
        ints = np.zeros(1, np.int64)
        tail = (ints, ints, ints, self.persist, self._own, np.zeros(1), np.zeros(1), ints)
        self._play = _compiled((*sample, self._work, self._cap, self._finite, *tail))
        self._shape = shape

    def costs(self, actions: np.ndarray) -> np.ndarray:
        env = self.env
        if env.core is None or env._over:
            raise RuntimeError("BranchPlayer: the env has no decision due (reset it first)")
        self._setup()
        actions = np.asarray(actions, dtype=np.int64)
        n = actions.size
        rewards, areas = np.zeros(n), np.zeros(n)
        status = np.zeros(n, dtype=np.int64)
        rule = self.rule
        # an advisor's action is its decision, which the env keeps as engine words
        first = env._n_actions - len(env.advisors)
        branches = actions.copy()
        advised = actions >= first
        branches[advised] = _WORDS - (actions[advised] - first)
        if self.follows is not None:
            # the advisor's data as the run has it (asked at this decision already): the play-outs
            # go on from it, and its own decision is its advice, not a second question
            self._template.state[:] = self._advisor_data().state
            branches[actions == BASE_DECISION] = _WORDS - self.follows
        words = np.concatenate([np.zeros(0, dtype=np.int64), *env._advice])
        offsets = np.cumsum([0, *(a.size for a in env._advice)]).astype(np.int64)
        self._play(
            rule.plain,
            rule.sized,
            rule.size_aware,
            rule.every_event,
            env.core.sim,
            *self._fixed,
            self._ep,
            env._fpar,
            self._obs,
            env._mask,
            self._mask,
            self._out,
            self._work,
            self._cap,
            self._finite,
            words,
            offsets,
            branches,
            self.persist,
            self._own,
            rewards,
            areas,
            status,
        )
        scale = env._reward_scale
        out = np.empty(n)
        for b in range(n):
            # the Python path's arithmetic, operation for operation
            if status[b] == _PLAYED:
                out[b] = -(float(rewards[b]) * scale + -float(areas[b]) * scale)
            elif status[b] == _ENDED:
                out[b] = -(float(rewards[b]) * scale + 0.0)
            else:
                out[b] = self._python_branch(int(actions[b]))
        played = int(np.count_nonzero(status != _PYTHON))
        self.compiled_branches += played
        self.python_branches += n - played
        return out

    def _advisor_data(self) -> Any:
        """The followed advisor's data now, as the env keeps it."""
        entry = self.env._drivers.get(id(self.base))
        if entry is None or entry[0] is not self.base:
            raise RuntimeError("BranchPlayer: the followed advisor has not been asked at this decision")
        return entry[1].pdata

    def _python_branch(self, action: int) -> float:
        return float(python_costs(self.env, self.base, np.array([action]), self.persist)[0])


def python_costs(env: Any, base: Policy, actions: np.ndarray, persist: int = 1) -> np.ndarray:
    """What :meth:`BranchPlayer.costs` computes, the slow way, branch by branch from Python: the
    env's own snapshot, step (or ``step_policy`` for :data:`BASE_DECISION`; an env action again at
    the next ``persist - 1`` decisions where it stays valid) and ``play_out``; where ``base`` is one
    of the env's advisors, its action at every decision to the end instead of ``play_out``. The env
    is restored afterwards. Where a branch takes several steps, their rewards are scaled one by one
    where the compiled loop scales their sum (and a followed advisor's play-out adds the steps'
    rewards where the compiled one takes the difference of the run's totals), so the two agree to
    rounding, not bit for bit."""
    env = getattr(env, "unwrapped", env)
    snap = planning.snapshot(env)
    out = np.empty(len(actions))
    advice = env._n_actions - len(env.advisors)  # actions from here on are advisors' decisions
    follows = next((advice + j for j, p in enumerate(env.advisors) if p is base), None)
    try:
        for i, a in enumerate(np.asarray(actions).tolist()):
            planning.restore(env, snap)
            if a == BASE_DECISION and follows is not None:
                a = follows
            _, reward, _, truncated, info = (
                planning.step_policy(env, base) if a == BASE_DECISION else env.step(a)
            )
            taken = 1
            while taken < persist and 0 <= a < advice and not truncated and info["action_mask"][a]:
                _, more, _, truncated, info = env.step(a)
                reward += more
                taken += 1
            if follows is None:
                out[i] = -(reward + (0.0 if truncated else planning.play_out(env, base)))
                continue
            while not truncated:
                _, more, _, truncated, _ = env.step(follows)
                reward += more
            out[i] = -reward
    finally:
        planning.restore(env, snap)
    return out
