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
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .base import Track

__all__ = [
    "DEFAULT_MODEL",
    "HEADLINE_MODEL",
    "MODELS",
    "TRACKS",
    "TrackEntry",
    "is_headline",
    "scenario_listing",
    "scenario_model",
    "track",
    "track_of",
]


def _queue_listing() -> list[tuple[str, str]]:
    from ...workloads.scenarios import list_scenarios

    return [(name, sc.description) for name, sc in list_scenarios().items()]


def _moldable_listing() -> list[tuple[str, str]]:
    from ...moldable.systems import MOLDABLE_SYSTEMS, describe_moldable_system

    return [(name, describe_moldable_system(name)) for name in MOLDABLE_SYSTEMS]


def _compat_listing() -> list[tuple[str, str]]:
    from ...workloads.compat import COMPAT_SCENARIOS

    return [(name, desc) for name, (desc, _build) in COMPAT_SCENARIOS.items()]


@dataclass(frozen=True)
class TrackEntry:
    """One model's line: its ``track`` (``"module:attr"`` of a :class:`.base.Track`), the catalogue of
    the scenario names it owns (``"module:attr"`` of a mapping; None for the model of every other
    name, file and trace) and its ``listing``: its named scenarios with a line on each (cheap: the
    track itself is not imported to list them). ``headline``: its points are a report's headline (the
    benchmark's score, ``msj-gym list``'s sections under their bare names); every other model's have
    a section of their own, titled by the model."""

    model: str
    track: str
    scenarios: str | None
    listing: Callable[[], list[tuple[str, str]]]
    headline: bool = False


#: Every model's track, the model of every name no catalogue owns last. Its order is the order in which
#: reports list the models (the MSJ queue first).
TRACKS: tuple[TrackEntry, ...] = (
    TrackEntry("msj", "msj_gym.experiments.tracks.queueing:TRACK", None, _queue_listing, headline=True),
    TrackEntry(
        "moldable",
        "msj_gym.experiments.tracks.moldable:TRACK",
        "msj_gym.moldable.systems:MOLDABLE_SYSTEMS",
        _moldable_listing,
    ),
    TrackEntry(
        "compatibility",
        "msj_gym.experiments.tracks.compatibility:TRACK",
        "msj_gym.workloads.compat:COMPAT_SCENARIOS",
        _compat_listing,
    ),
)
MODELS = tuple(e.model for e in TRACKS)
#: The model of every scenario no catalogue owns (the MSJ queue): a report's first, headline section.
DEFAULT_MODEL = next(e.model for e in TRACKS if e.scenarios is None)
#: The model whose points are a report's headline (the one entry with ``headline``).
HEADLINE_MODEL = next(e.model for e in TRACKS if e.headline)


def _load(entry: str) -> Any:
    module, _, attr = entry.partition(":")
    return getattr(importlib.import_module(module), attr)


def scenario_model(scenario: str) -> str:
    """The model ``scenario`` is of (``NAME``, ``NAME?sizes=LAW``, a scenario file or a trace): the model
    whose catalogue holds its name, else the one that owns every other name (the MSJ queue)."""
    name = scenario.partition("?")[0]
    owner = (e.model for e in TRACKS if e.scenarios is not None and name in _load(e.scenarios))
    return next(owner, DEFAULT_MODEL)


def _entry(model: str) -> TrackEntry:
    found = next((e for e in TRACKS if e.model == model), None)
    if found is None:
        raise ValueError(f"model: expected one of {', '.join(MODELS)}, got {model!r}")
    return found


def track(model: str) -> Track:
    """The track of ``model``."""
    found: Track = _load(_entry(model).track)
    return found


def is_headline(model: str) -> bool:
    """Whether ``model``'s points are a report's headline (:attr:`TrackEntry.headline`)."""
    return _entry(model).headline


def scenario_listing(model: str) -> list[tuple[str, str]]:
    """The named scenarios of ``model``, each with a line on it (``msj-gym list``)."""
    return _entry(model).listing()


def track_of(scenario: str) -> Track:
    """The track that ranks ``scenario``: its model's (:func:`scenario_model`)."""
    return track(scenario_model(scenario))
