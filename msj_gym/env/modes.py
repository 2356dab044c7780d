"""The observation and action modes of the MSJ environments, each a small registered piece: its name
(the env keyword's value), the code the compiled step branches on, and its space. The single env and
the native vector env look modes up here, so a new mode is one entry here plus its compiled encoder
(:mod:`msj_gym.env.observe`) or decoder (:mod:`msj_gym.env.act`), and runs in both.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from gymnasium import spaces

from .layout import (
    ACT_JOBS,
    ACT_PRIORITY,
    ACT_SHORTEST,
    CLASS_FEATURES,
    OBS_CLASSES,
    OBS_FLAT,
    QUEUE_FEATURES,
    RUNNING_FEATURES,
    SET_SYSTEM_FEATURES,
    SYSTEM_FEATURES,
    class_features,
    class_set_size,
    num_actions,
    num_priority_actions,
    observation_size,
)

__all__ = ["ACTION_MODES", "OBSERVATION_MODES", "ActionMode", "ObservationMode", "Shape", "mode_named"]


@dataclass(frozen=True)
class Shape:
    """What the spaces depend on: the class slots and the windows (see :mod:`msj_gym.env.layout`)."""

    slots: int
    queue_window: int
    preempt_window: int
    obs_jobs: int
    preemptive: bool
    reveal_sizes: bool
    advisor: bool


def _box(n: int) -> spaces.Box:
    return spaces.Box(0.0, 1.0, (n,), np.float32)


def _flat_parts(shape: Shape) -> list[tuple[str, int]]:
    """The named parts of the flat vector, in its order (1-D, row-major where two axes meet)."""
    parts = [
        ("system", SYSTEM_FEATURES),
        ("classes", shape.slots * CLASS_FEATURES),
        ("queue", shape.obs_jobs * (QUEUE_FEATURES + shape.reveal_sizes)),
    ]
    if shape.preemptive:
        width = RUNNING_FEATURES + shape.reveal_sizes
        parts.append(("running", shape.slots * shape.preempt_window * width))
    return parts


@dataclass(frozen=True)
class ObservationMode:
    """An observation encoding: ``size`` of the flat buffer the compiled step writes, the user-facing
    ``space``, and ``present``, which turns buffers (a leading batch axis allowed) into observations."""

    name: str
    code: int
    size: Callable[[Shape], int]
    space: Callable[[Shape], spaces.Space]
    present: Callable[[np.ndarray, Shape], Any]
    uses_obs_jobs: bool


def _split(flat: np.ndarray, shape: Shape) -> dict[str, np.ndarray]:
    out, pos = {}, 0
    for key, width in _flat_parts(shape):
        out[key] = flat[..., pos : pos + width]
        pos += width
    return out


def _flat_size(shape: Shape) -> int:
    return observation_size(
        shape.slots, shape.obs_jobs, shape.preempt_window, shape.preemptive, shape.reveal_sizes
    )


def _class_set_size(shape: Shape) -> int:
    return class_set_size(shape.slots, shape.reveal_sizes)


OBSERVATION_MODES: dict[str, ObservationMode] = {
    "flat": ObservationMode(
        "flat", OBS_FLAT, _flat_size, lambda sh: _box(_flat_size(sh)), lambda flat, sh: flat, True
    ),
    "dict": ObservationMode(
        "dict",
        OBS_FLAT,
        _flat_size,
        lambda sh: spaces.Dict({key: _box(n) for key, n in _flat_parts(sh)}),
        _split,
        True,
    ),
    "classes": ObservationMode(
        "classes",
        OBS_CLASSES,
        _class_set_size,
        lambda sh: _box(_class_set_size(sh)),
        lambda flat, sh: flat,
        False,
    ),
}


@dataclass(frozen=True)
class ActionMode:
    """An action mode: the ``size`` of its ``Discrete`` space; whether an action names one job
    (``names_jobs``: job-by-job agents such as :class:`~msj_gym.PolicyAgent` need it) and whether the
    env reads job sizes to carry it out (``reads_sizes``: an agent acting with it is size-aware)."""

    name: str
    code: int
    size: Callable[[Shape], int]
    names_jobs: bool
    reads_sizes: bool


def _priority_size(shape: Shape) -> int:
    return num_priority_actions(shape.slots, shape.advisor)


ACTION_MODES: dict[str, ActionMode] = {
    "jobs": ActionMode(
        "jobs",
        ACT_JOBS,
        lambda sh: num_actions(sh.slots, sh.queue_window, sh.preempt_window, sh.preemptive),
        True,
        False,
    ),
    "priority": ActionMode("priority", ACT_PRIORITY, _priority_size, False, False),
    "priority-shortest": ActionMode("priority-shortest", ACT_SHORTEST, _priority_size, False, True),
}


def mode_named(field: str, name: Any, modes: dict[str, Any]) -> Any:
    """The mode called ``name``, or a one-line ``ValueError`` naming ``field`` and the known modes."""
    mode = modes.get(name) if isinstance(name, str) else None
    if mode is None:
        known = ", ".join(repr(m) for m in modes)
        raise ValueError(f"{field}: expected one of {known}, got {name!r}")
    return mode


def class_set_columns(reveal_sizes: bool) -> tuple[int, int]:
    """``(system features, features per class row)`` of the class-set observation."""
    return SET_SYSTEM_FEATURES, class_features(reveal_sizes)
