"""The leaderboard's tracks, one per model, found by the scenario's own model.

The pipeline (:mod:`msj_gym.experiments.leaderboard`: plan, run, table, standings, format, write) is
written once; what differs per model is declared by its track (:class:`.base.Track`): its entrants,
how one point runs, its reference rows, its metrics and their direction, its columns. This module is
the one place that says which model a scenario is of (:func:`scenario_model`) and which track ranks
it (:func:`track_of`). As Gymnasium registers its environments, each entry names its track and the
catalogue of scenario names its model owns by ``"module:attr"`` strings, imported when first asked
for: a fourth model is one module and one line of :data:`TRACKS`.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .base import Track

__all__ = ["DEFAULT_MODEL", "MODELS", "TRACKS", "TrackEntry", "scenario_model", "track", "track_of"]


@dataclass(frozen=True)
class TrackEntry:
    """One model's line: its ``track`` (``"module:attr"`` of a :class:`.base.Track`) and the catalogue of
    the scenario names it owns (``"module:attr"`` of a mapping; None for the model of every other
    name, file and trace)."""

    model: str
    track: str
    scenarios: str | None


#: Every model's track, the model of every name no catalogue owns last. Its order is the order in which
#: reports list the models (the MSJ queue first).
TRACKS: tuple[TrackEntry, ...] = (
    TrackEntry("msj", "msj_gym.experiments.tracks.queueing:TRACK", None),
    TrackEntry(
        "moldable", "msj_gym.experiments.tracks.moldable:TRACK", "msj_gym.moldable.systems:MOLDABLE_SYSTEMS"
    ),
    TrackEntry(
        "compatibility",
        "msj_gym.experiments.tracks.compatibility:TRACK",
        "msj_gym.workloads.compat:COMPAT_SCENARIOS",
    ),
)
MODELS = tuple(e.model for e in TRACKS)
#: The model of every scenario no catalogue owns (the MSJ queue): a report's first, headline section.
DEFAULT_MODEL = next(e.model for e in TRACKS if e.scenarios is None)


def _load(entry: str) -> Any:
    module, _, attr = entry.partition(":")
    return getattr(importlib.import_module(module), attr)


def scenario_model(scenario: str) -> str:
    """The model ``scenario`` is of (``NAME``, ``NAME?sizes=LAW``, a scenario file or a trace): the model
    whose catalogue holds its name, else the one that owns every other name (the MSJ queue)."""
    name = scenario.partition("?")[0]
    owner = (e.model for e in TRACKS if e.scenarios is not None and name in _load(e.scenarios))
    return next(owner, DEFAULT_MODEL)


def track(model: str) -> Track:
    """The track of ``model``."""
    for e in TRACKS:
        if e.model == model:
            found: Track = _load(e.track)
            return found
    raise ValueError(f"model: expected one of {', '.join(MODELS)}, got {model!r}")


def track_of(scenario: str) -> Track:
    """The track that ranks ``scenario``: its model's (:func:`scenario_model`)."""
    return track(scenario_model(scenario))
