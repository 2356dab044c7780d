"""``CompatAssign-v0``: choose the servers of each arriving job on a job-server compatibility graph.

The decision Bonald & Comte (2017), Sec. 5, leave to chance: with random assignment each job is given
``d`` servers uniformly at random among its class's pool; here an agent picks them, one server per
step, and the scheduler (FCFS or Algorithm 1, fixed for the environment) serves the jobs.
"""

from __future__ import annotations

from typing import Any, Protocol, cast

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from ..core import state as S
from ..core.engine import batch_runner
from ..metrics.result import SimulationResult
from ..pooled import PooledSimulator
from ..registry import make_policy
from ..workloads.compat import CompatWorkload

__all__ = ["CompatAssignEnv", "DrawnAssignmentAgent", "RandomAssignmentAgent"]


class _CompatScheduler(Protocol):
    """What the observation reads of the scheduler (``compat-fcfs`` or ``balanced-fair``: classes
    reached by their ids, so not importable here)."""

    def busy_servers(self, pdata: Any, num_servers: int) -> np.ndarray: ...


def _squash(x: np.ndarray | float) -> np.ndarray | float:
    lx = np.log1p(x)
    return lx / (1.0 + lx)


class _OneArrivalAtATime(PooledSimulator):
    """A :class:`PooledSimulator` whose arrival ring is fed one job at a time, so that the engine asks
    for the next job (``ST_NEED_ARRIVALS``) exactly when the last one fed is the next event: the
    moment to choose its servers. The jobs are drawn in the same chunks as the native run's, so a seed
    gives the same job stream."""

    FEED_LIMIT = 1


class CompatAssignEnv(gym.Env):
    """Assigning jobs to servers on a compatibility graph (``CompatAssign-v0``).

    ## Description
    ``S`` servers of capacities ``C_s``; jobs arrive in classes (Poisson), and a job of a class with a
    random assignment (``choose = d``) may use ``d`` servers of its class's pool, processed in parallel
    by every one of them not busy with an earlier job (the model of Bonald & Comte (2017), Sec. 2). The agent
    chooses those ``d`` servers when the job arrives, one server per step (all at zero elapsed time); jobs of
    classes with fixed servers need no decision. The scheduler is ``fcfs`` (policy ``compat-fcfs``) or
    ``balanced-fair`` (Algorithm 1 with ``m`` interruptions per job), run by the engine's loop as in
    :class:`~msj_gym.pooled.PooledSimulator`; the run pauses before each arrival that needs servers.

    ## Action space
    ``Discrete(S)``: the next server for the arriving job. Masks (``action_masks()``,
    ``info["action_mask"]``): the servers of the job's pool not chosen yet. **A masked action is
    replaced by the lowest-index allowed server** and counted in ``info["invalid_actions"]``; an action
    outside the space raises ``ValueError``.

    ## Observation space
    ``Box(0, 1, (3 S + 2,), float32)``, with ``squash(x) = L / (1 + L)``, ``L = log(1 + x)``: per server
    busy (1/0); per server squash(jobs in the system that may use it); per server 1 if already chosen
    for the arriving job; squash(jobs in the system); servers chosen so far / d.

    ## Rewards
    As ``MSJ-v0``: minus the time integral of the number of jobs in the system between two decisions
    (``reward="mean"``: divided by the expected number of arrivals of an episode).

    ## Episode end
    Truncated once every measured job has left (``num_arrivals``, ``warmup``), or at the simulator's
    arrival cap or ``max_jobs_in_system`` (unstable). ``result()`` gives the full result.

    ## Info
    ``time``, ``jobs_in_system``, ``action_mask``, ``drawn_servers`` (the servers the workload's own
    random assignment drew for this job: following them reproduces the paper's random assignment, bit
    for bit the native run), ``invalid_actions``.

    ## Arguments
    ``scenario`` (``"003-random-2"``: a name of ``COMPAT_SCENARIOS`` or a ``CompatWorkload``), ``load``
    (0.7), ``distribution`` (``"exponential"``), ``scheduler`` (``"fcfs"`` | ``"balanced-fair"``),
    ``m`` (5.0), ``num_arrivals`` (1000), ``warmup`` (0), ``reward`` (``"integral"`` | ``"mean"``),
    ``max_jobs_in_system`` (100000), ``render_mode`` (None | ``"rgb_array"``: a picture of the servers as
    boxes, capacity written in, busy ones in the colour of the class they serve, the arriving job's pool
    outlined and its chosen servers dotted, the clock and the jobs in the system per class; see
    :class:`msj_gym.env.render.CompatFrameRenderer`).

    ## Version history
    * v0: initial version.
    """

    # gymnasium's Env declares metadata an instance attribute (set per instance, as wrappers do)
    metadata: dict[str, Any] = {"render_modes": ["rgb_array"], "render_fps": 4}  # noqa: RUF012

    def __init__(
        self,
        scenario: str | CompatWorkload = "003-random-2",
        *,
        load: float | None = 0.7,
        distribution: str = "exponential",
        scheduler: str = "fcfs",
        m: float = 5.0,
        num_arrivals: int = 1000,
        warmup: int = 0,
        reward: str = "integral",
        max_jobs_in_system: int = 100_000,
        render_mode: str | None = None,
    ) -> None:
        from ..workloads.compat import CompatWorkload, build_compat_scenario

        if isinstance(scenario, CompatWorkload):
            wl = scenario.with_load(load) if load is not None else scenario
        else:
            wl = build_compat_scenario(
                scenario, load=0.7 if load is None else load, distribution=distribution
            )
        if not any(c.choose for c in wl.classes):
            raise ValueError("scenario: no class has a random assignment (choose = d), nothing to decide")
        if scheduler not in ("fcfs", "balanced-fair"):
            raise ValueError(f"scheduler: expected 'fcfs' or 'balanced-fair', got {scheduler!r}")
        if reward not in ("integral", "mean"):
            raise ValueError(f"reward: expected 'integral' or 'mean', got {reward!r}")
        if render_mode not in (None, "rgb_array"):
            # gym.make turns "human" and "rgb_array_list" into "rgb_array" plus a wrapper
            raise ValueError(f"render_mode: expected None or 'rgb_array', got {render_mode!r}")
        self.workload = wl
        # the env's "fcfs" is the compatibility model's FCFS (policy id compat-fcfs)
        self.scheduler = make_policy("compat-fcfs") if scheduler == "fcfs" else make_policy(scheduler, m=m)
        self.num_arrivals, self.warmup, self.max_jobs = num_arrivals, warmup, max_jobs_in_system
        self._reward_scale = 1.0 / num_arrivals if reward == "mean" else 1.0
        n = wl.num_servers
        self.action_space: spaces.Discrete = spaces.Discrete(n)
        self.observation_space = spaces.Box(0.0, 1.0, (3 * n + 2,), np.float32)
        self._sim: PooledSimulator | None = None
        self._chosen: list[int] = []  # the servers chosen so far for the arriving job
        self.render_mode = render_mode
        self._renderer: Any = None  # made on the first render: Pillow only when asked for

    # ------------------------------------------------------------------------------------------------
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict]:
        super().reset(seed=seed)
        run_seed = int(self.np_random.integers(2**31)) if seed is None else int(seed)
        self._sim = _OneArrivalAtATime(
            self.workload,
            self.scheduler,
            seed=run_seed,
            num_arrivals=self.num_arrivals,
            warmup=self.warmup,
            max_jobs_in_system=self.max_jobs,
        )
        self._rule = self._sim.policy.decision_rule()
        self._decided = 0  # jobs whose servers are final
        self._invalid = 0
        self._over = False
        self._area = 0.0
        self._advance()
        return self._observation(), self._info()

    def _advance(self) -> None:
        """Run to the next arrival that needs servers chosen (or to the end of the episode)."""
        sim = self._sim
        assert sim is not None
        while True:
            status = batch_runner(self._rule, sim.sim, sim.view, sim.sizes, sim.pdata, sim.actions, False)
            ngen = int(sim.sim.iv[S.I_NGEN])
            if status == S.ST_NEED_ARRIVALS and ngen > self._decided:
                # The engine needs the job after the last one fed: that one's arrival is next.
                r = (ngen - 1) & (sim.sim.ring_t.size - 1)
                cls = self.workload.classes[int(sim.sim.ring_c[r])]
                if cls.choose:
                    self._job, self._cls, self._chosen = r, cls, []
                    self._drawn = [int(v) for v in sim.sim.ring_a[r] if v >= 0]
                    return
                self._decided = ngen
            if not sim.handle(status):
                self._over = True
                return

    def action_masks(self) -> np.ndarray:
        mask = np.zeros(self.workload.num_servers, dtype=bool)
        if not self._over:
            mask[list(self._cls.servers)] = True
            mask[self._chosen] = False
        return mask

    def _observation(self) -> np.ndarray:
        sim = self._sim
        assert sim is not None
        n = self.workload.num_servers
        live = sim.sim.ji[:, S.STATE] != S.FREE_SLOT
        srv = sim.sim.ji[live, S.JATTR :].ravel()
        counts = np.bincount(srv[srv >= 0], minlength=n)[:n]
        chosen = np.zeros(n)
        d = 1
        if not self._over:
            chosen[self._chosen] = 1.0
            d = self._cls.choose
        obs = np.concatenate(
            [
                cast(_CompatScheduler, sim.policy).busy_servers(sim.pdata, n).astype(np.float64),
                _squash(counts.astype(np.float64)),
                chosen,
                [_squash(float(sim.sim.iv[S.I_NSYS])), len(self._chosen) / d if not self._over else 0.0],
            ]
        )
        return obs.astype(np.float32)

    def _info(self) -> dict[str, Any]:
        sim = self._sim
        assert sim is not None
        info: dict[str, Any] = {
            "time": float(sim.sim.fv[S.F_NOW]),
            "jobs_in_system": int(sim.sim.iv[S.I_NSYS]),
            "action_mask": self.action_masks(),
            "drawn_servers": [] if self._over else list(self._drawn),
            "invalid_actions": self._invalid,
        }
        if self._over:
            res = sim.result()
            info["mean_response_time"] = res.mean_response_time
            info["stable"] = res.stable
        return info

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        if self._sim is None:
            raise RuntimeError("step: call reset() first")
        if self._over:
            raise RuntimeError("step: the episode is over; call reset()")
        try:
            a = int(action)
        except (TypeError, ValueError):
            raise ValueError(f"action: expected an integer server index, got {action!r}") from None
        if not self.action_space.contains(np.int64(a)) or (np.ndim(action) > 0 and np.size(action) != 1):
            raise ValueError(f"action: expected an integer in [0, {self.action_space.n}), got {action!r}")
        mask = self.action_masks()
        if not mask[a]:
            self._invalid += 1
            a = int(np.flatnonzero(mask)[0])
        self._chosen.append(a)
        reward = 0.0
        if len(self._chosen) == self._cls.choose:
            sim = self._sim
            row = np.full(sim.sim.ring_a.shape[1], -1, dtype=np.int64)
            row[: len(self._chosen)] = sorted(self._chosen)
            sim.sim.ring_a[self._job] = row
            self._decided = int(sim.sim.iv[S.I_NGEN])
            before = float(sim.sim.fv[S.F_RUN_AREA])
            self._advance()
            reward = -(float(sim.sim.fv[S.F_RUN_AREA]) - before) * self._reward_scale
        return self._observation(), reward, False, self._over, self._info()

    def render(self) -> np.ndarray | None:
        """``render_mode="rgb_array"``: an ``H x W x 3`` uint8 picture of the state at the current step
        (before ``reset``: an empty system)."""
        if self.render_mode != "rgb_array":
            return None
        if self._renderer is None:
            from .render import CompatFrameRenderer

            self._renderer = CompatFrameRenderer(self.workload)
        sim = self._sim
        if sim is None or self._over:
            return self._renderer.frame(sim)
        job_class = int(sim.sim.ring_c[self._job])
        return self._renderer.frame(sim, job_class, list(self._chosen))

    def result(self) -> SimulationResult:
        if self._sim is None:
            raise RuntimeError("result: call reset() first")
        return self._sim.result()


class DrawnAssignmentAgent:
    """Random assignment (Bonald & Comte (2017), Sec. 5) through the environment: follows the servers the
    workload drew for the job, so the run equals the native :class:`PooledSimulator` run with the same
    seed."""

    def __init__(self, env: Any) -> None:
        self.env = env.unwrapped

    def predict(self, obs: Any, *args: Any, **kwargs: Any) -> tuple[int, None]:
        env = self.env
        nxt = env._drawn[len(env._chosen)]
        return nxt, None


class RandomAssignmentAgent:
    """Uniformly random allowed server at every step (its own seeded generator)."""

    def __init__(self, env: Any, seed: int = 0) -> None:
        self.env = env.unwrapped
        self.rng = np.random.default_rng(seed)

    def predict(self, obs: Any, *args: Any, **kwargs: Any) -> tuple[int, None]:
        allowed = np.flatnonzero(self.env.action_masks())
        return int(self.rng.choice(allowed)), None
