"""The keyword checks of the MSJ environments: each bad value a one-line ``ValueError`` naming the
keyword and the value, before any work."""

from __future__ import annotations

import math
from typing import Any, NoReturn

import numpy as np

__all__ = ["check_action", "check_episode", "check_reward", "check_seed", "encode_error", "positive_int"]


def positive_int(name: str, value: Any, minimum: int = 1, maximum: int | None = None) -> int:
    """``value`` as an integer in ``[minimum, maximum]``, else a ``ValueError`` naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < minimum:
        raise ValueError(f"{name}: expected an integer >= {minimum}, got {value!r}")
    if maximum is not None and value > maximum:
        raise ValueError(f"{name}: expected an integer in [{minimum}, {maximum}], got {value!r}")
    return int(value)


def check_seed(seed: Any) -> None:
    """A ``ValueError`` unless ``seed`` (what ``reset`` was given) is a non-negative integer or None."""
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int | np.integer) or seed < 0):
        raise ValueError(f"seed: expected a non-negative integer or None, got {seed!r}")


def check_episode(
    num_arrivals: Any, horizon: Any, warmup: Any, warmup_name: str = "warmup"
) -> tuple[int | None, float | None, int, float]:
    """``(num_arrivals, horizon, warmup arrivals, warmup time)`` of an episode: ``num_arrivals`` and
    ``warmup`` arrivals, or (``horizon`` given) a ``horizon`` and a ``warmup`` time (``warmup_name``:
    the keyword the user gave it as)."""
    if horizon is not None:
        if not isinstance(horizon, int | float) or not math.isfinite(horizon) or horizon <= 0:
            raise ValueError(f"horizon: expected a positive finite time, got {horizon!r}")
        if not isinstance(warmup, int | float) or not 0 <= warmup < horizon:
            raise ValueError(f"{warmup_name}: expected a time in [0, {horizon}), got {warmup!r}")
        return None, horizon, 0, float(warmup)
    if num_arrivals is None:
        raise ValueError("num_arrivals: give num_arrivals or horizon")
    num_arrivals = positive_int("num_arrivals", num_arrivals, 2)
    warmup = positive_int("warmup", warmup, 0)
    if warmup >= num_arrivals - 1:
        raise ValueError(f"warmup: expected an integer in [0, {num_arrivals - 1}), got {warmup!r}")
    return num_arrivals, None, warmup, 0.0


def check_reward(reward: Any, weighted: Any, slowdown_tau: Any, kinds: Any) -> float | None:
    """Check the reward keywords (``kinds``: the known rewards, each the compiled step's code; the
    response-time ones are ``kinds["integral"]``); returns ``slowdown_tau`` as a float or ``None``."""
    if not isinstance(reward, str) or reward not in kinds:
        raise ValueError(f"reward: expected 'integral', 'mean', 'slowdown' or 'waiting', got {reward!r}")
    if slowdown_tau is not None and (
        isinstance(slowdown_tau, bool | np.bool_)
        or not isinstance(slowdown_tau, int | float | np.integer | np.floating)
        or not (math.isfinite(slowdown_tau) and slowdown_tau > 0)
    ):
        raise ValueError(
            f"slowdown_tau: expected a positive finite time (the workload's time unit), got {slowdown_tau!r}"
        )
    if not isinstance(weighted, bool | np.bool_):
        raise ValueError(f"weighted: expected True or False, got {weighted!r}")
    if weighted and kinds[reward] != kinds["integral"]:
        # the results have no weighted slowdown or wait for such a return to equal
        raise ValueError(
            f"weighted: weights the response-time rewards ('integral', 'mean') only; got weighted=True "
            f"with reward={reward!r}"
        )
    return None if slowdown_tau is None else float(slowdown_tau)


def check_action(action: Any, n: int) -> int:
    """``action`` as an int of ``Discrete(n)``, else a one-line ``ValueError`` naming ``action``."""
    expected = f"action: expected an integer in [0, {n}) (Discrete({n}))"
    if isinstance(action, bool | np.bool_):
        raise ValueError(f"{expected}, got the boolean {action!r}")
    if isinstance(action, np.ndarray):
        if action.shape != () or not np.issubdtype(action.dtype, np.integer):
            raise ValueError(f"{expected}, got an array of shape {action.shape} and dtype {action.dtype}")
        action = action.item()
    if not isinstance(action, int | np.integer):
        raise ValueError(f"{expected}, got {action!r} of type {type(action).__name__}")
    if not 0 <= int(action) < n:
        raise ValueError(f"{expected}, got {int(action)}")
    return int(action)


def encode_error(code: int, engine_action: int, queue_window: int, preempt_window: int) -> NoReturn:
    """Raise why ``engine_action`` has no env action (``code``: what the encoder gave, ``-1`` for no
    such job, ``-1 - rank`` for a job outside its window)."""
    if code == -1:
        raise ValueError(f"engine action {engine_action}: no such waiting or running job here")
    window, width = (
        ("queue_window", queue_window) if engine_action >= 0 else ("preempt_window", preempt_window)
    )
    raise ValueError(
        f"engine action {engine_action}: the job is number {-1 - code} of its class in the action order, "
        f"outside {window}={width}; make the env with a larger {window}"
    )
