"""What an agent may read of an MSJ environment's state beyond its observation, read-only and public:
per-class job counts and what a decision (engine words, as :func:`msj_gym.env.planning.decision_now`
gives a baseline's) would start. Scripts that compare an agent with a baseline decision by decision
use these instead of the simulator's arrays, so the env's state layout stays its own.

The functions take the env or any wrapper of it (``env.unwrapped`` is used) and refuse an env that
has not been reset.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..core import state as S

__all__ = ["jobs_by_class", "starts_by_class_of"]


def _sim(env: Any) -> S.Sim:
    env = getattr(env, "unwrapped", env)
    if env.core is None:
        raise RuntimeError("MSJ env: call reset() first")
    return env.core.sim


def jobs_by_class(env: Any) -> tuple[np.ndarray, np.ndarray]:
    """``(waiting, running)``: per class of the workload, the jobs waiting and the jobs in service now
    (copies)."""
    sim = _sim(env)
    return sim.ci[S.C_NWAIT].copy(), sim.ci[S.C_NRUN].copy()


def starts_by_class_of(env: Any, words: np.ndarray) -> np.ndarray:
    """Per class, the jobs that the engine ``words`` (a decision: starts ``s >= 0``, preemptions
    ``-s-1``) start now."""
    sim = _sim(env)
    out = np.zeros(sim.ci.shape[1], dtype=np.int64)
    for w in np.asarray(words).tolist():
        if w >= 0:
            out[sim.ji[w, S.CLS]] += 1
    return out
