"""The evaluation protocol of RLScheduler (Zhang et al. (2020); its repository's ``compare-pick-jobs.py``
and ``make_table_script.py``): sequences of N consecutive jobs sampled from a trace, each scheduled from
an empty machine at its own timing, scored by the mean bounded slowdown of its N jobs; a policy's score
is the mean over the sequences.

* **Sampling.** Sequence i starts at job ``start_i``, drawn uniformly from [N, M - N - 1) (the range
  RLScheduler draws from), M the trace's jobs or, with ``window=W``, its first W (RLScheduler samples
  SDSC-SP2 and HPC2N from their first 10,000 jobs); with ``skip=S``, from [max(N, S), M - N - 1): the
  jobs a learned scheduler held out by position (trained on jobs S and later) was trained on. The starts
  come from a numpy Generator seeded by ``seed`` alone, so every process and every policy draws the same
  sequences; or, with ``starts="rlscheduler"``, they are RLScheduler's own for that seed, recomputed
  from its seeding (:func:`rlscheduler_starts`): seed 1 gives the sequences of its published table.
* **A sequence** is jobs start_i .. start_i + N - 1 of the cleaned trace (see :mod:`msj_gym.workloads.swf`),
  with their own submit times (the machine is empty when the first arrives), every job measured.
* **Paired.** Every policy schedules the same sequences, so the comparisons are per sequence: each
  policy's ratio (and difference) to the best policy's score, with a Student-t 95 % interval over the
  sequences, beside each policy's own mean and interval.
* **Agents** (``agents``: a shipped agent's name, an SB3 checkpoint ``.zip`` or ``module:attr``, as in
  the leaderboard) schedule the same sequences through the environment they were trained with
  (``MSJ-v0`` and its keywords), ranked beside the policies as ``agent:NAME``. An agent must fit every
  sequence (a class-set observation has room for a fixed number of classes, the distinct server needs
  of a sequence): one that does not is refused before any run, naming the sequence. A metric the env
  does not measure (the percentiles: it keeps no per-job records) is refused for agents too.

:func:`run_sequences` runs it (in worker processes, or on Ray, as the leaderboard does), and
``msj-gym sequences`` is its command line.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence as Seq
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from ..metrics.stats import replication_ci
from .report import fmt, render_table

if TYPE_CHECKING:
    from ..workloads.trace import TraceWorkload

__all__ = [
    "STARTS",
    "SequenceProtocol",
    "check_starts",
    "format_sequences",
    "rlscheduler_starts",
    "run_sequences",
    "sequence_metric",
    "sequence_starts",
    "sequence_workload",
    "sequences_json",
    "trace_replay",
]


#: How the starts are drawn: msj_gym's own seeded Generator, or RLScheduler's own draws (see
#: :func:`rlscheduler_starts`).
STARTS = ("generator", "rlscheduler")


def sequence_starts(
    num_jobs: int,
    length: int,
    count: int,
    seed: int,
    window: int | None = None,
    skip: int = 0,
    starts: str = "generator",
) -> np.ndarray:
    """The first job of each of ``count`` sequences of ``length`` jobs: uniform integers in
    [max(length, ``skip``), M - length - 1), M = min(``window``, ``num_jobs``). With ``starts=
    "generator"`` (the default) they come from a Generator seeded by ``seed``; ``skip`` 0 (or any value
    up to ``length``) draws RLScheduler's range, start for start. With ``starts="rlscheduler"`` they are
    RLScheduler's own starts for ``seed`` (:func:`rlscheduler_starts`), which its range alone defines (no
    ``skip``)."""
    checks = (("length", length, 2), ("count", count, 1), ("seed", seed, 0), ("skip", skip, 0))
    for name, value, least in checks:
        if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < least:
            raise ValueError(f"--{name}: expected an integer >= {least}, got {value!r}")
    if window is not None and (isinstance(window, bool) or not isinstance(window, int) or window < 1):
        raise ValueError(f"--window: expected a positive integer, got {window!r}")
    if window is not None and window > num_jobs:  # a window past the log's end is no window: said
        raise ValueError(f"--window {window}: the trace holds {num_jobs} jobs; give at most {num_jobs}")
    check_starts(starts, skip, length)
    m = num_jobs if window is None else min(window, num_jobs)
    within = f"the first {m} of its jobs" if window is not None and window < num_jobs else f"its {m} jobs"
    if m - length - 1 <= length:
        raise ValueError(
            f"--length: sequences of {length} jobs do not fit in {within} (the starts are drawn from "
            f"[length, M - length - 1): M must exceed 2 x {length} + 1)"
        )
    low = max(int(length), int(skip))
    if m - length - 1 <= low:
        raise ValueError(
            f"--skip {skip}: no sequence of {length} jobs starts at that job or later and ends within "
            f"{within}"
        )
    if starts == "rlscheduler":
        return rlscheduler_starts(int(seed), low, m - length - 1, count)
    rng = np.random.Generator(np.random.PCG64(np.random.SeedSequence(int(seed))))
    return rng.integers(low, m - length - 1, size=count)


def check_starts(starts: str, skip: int = 0, length: int = 0) -> None:
    """A one-line ValueError for ``starts`` not of :data:`STARTS`, or RLScheduler's starts with a
    ``skip`` that would move them."""
    if starts not in STARTS:
        raise ValueError(f"--starts: expected one of {', '.join(STARTS)}, got {starts!r}")
    if starts == "rlscheduler" and skip > length:
        raise ValueError(
            f"--skip {skip}: RLScheduler's starts are drawn from [length, M - length - 1) only; "
            "use --starts generator to start at a later job"
        )


def rlscheduler_starts(seed: int, low: int, high: int, count: int) -> np.ndarray:
    """RLScheduler's sequence starts for ``seed``, recomputed: ``count`` draws of ``randint(low, high)``
    from the generator its environment holds after ``env.seed(seed)``.

    Its test scripts (``compare-pick-jobs.py``, ``compare-make-table.py`` of DIR-LAB/deep-batch-scheduler)
    seed the environment once and draw one start per sequence with ``np_random.randint(N, M - N - 1)``
    (``HPCEnv.reset_for_test``), nothing else drawing from that generator in between. The generator is
    gym's ``seeding.np_random(seed)`` of the version its requirements pin (openai/gym, 2019,
    ``gym/utils/seeding.py``): the seed taken modulo 2**64, its decimal digits hashed with SHA-512, the
    hash's first 8 bytes read as a little-endian integer, and that integer, split into 32-bit words
    (least significant first), seeds NumPy's legacy ``RandomState`` (its Mersenne Twister's
    ``init_by_array``). Seed 1 gives 1981, 2756, 4299, 8850, 3316, 2714, 5228, 7762, 4022, 7085 for
    N = 1024, M = 10,000: the ten sequences of its published table, for each of its three traces.

    The legacy ``RandomState`` (and not a ``numpy.random.Generator``, which every other draw of msj_gym
    uses) is here only because it reproduces a published protocol: NumPy keeps its stream fixed for
    exactly this purpose."""
    digest = hashlib.sha512(str(int(seed) % 2**64).encode("utf8")).digest()
    whole = int.from_bytes(digest[:8], "little")
    words: list[int] = []
    while whole > 0:
        whole, word = divmod(whole, 2**32)
        words.append(word)
    legacy = np.random.RandomState(words or [0])
    return np.array([legacy.randint(low, high, dtype=np.int64) for _ in range(count)], dtype=np.int64)


def sequence_workload(trace: TraceWorkload, start: int, length: int) -> TraceWorkload:
    """Jobs ``start .. start + length - 1`` of a trace replay (a
    :class:`~msj_gym.workloads.trace.TraceWorkload`), their times kept, as a workload of their own."""
    return trace.jobs(int(start), int(length))


@dataclass(frozen=True)
class SequenceProtocol:
    """One evaluation: ``count`` sequences of ``length`` jobs of ``scenario`` (a trace: ``swf:FILE``),
    drawn with ``seed`` (from the first ``window`` jobs, if given; starting at job ``skip`` or later),
    every policy of ``policies`` (ids or ``module:Class``; ``policy_params`` per policy) and every agent
    of ``agents`` (``bare_agents``: admit checkpoints without their ``.json``) ranked by ``metric`` of
    each sequence's result (the mean bounded slowdown by default; smaller is better). ``starts``: the
    starts of msj_gym's own Generator (``"generator"``) or RLScheduler's (``"rlscheduler"``, see
    :func:`rlscheduler_starts`)."""

    scenario: str
    policies: tuple[str, ...]
    length: int = 1024
    count: int = 10
    seed: int = 1
    window: int | None = None
    skip: int = 0
    metric: str = "mean_bounded_slowdown"
    policy_params: dict[str, dict[str, Any]] = field(default_factory=dict)
    agents: tuple[str, ...] = ()
    bare_agents: bool = False
    starts: str = "generator"

    def __post_init__(self) -> None:
        from .tracks.queueing import check_metric

        check_metric(self.metric)
        check_starts(self.starts, self.skip, self.length)
        if not self.policies and not self.agents:
            raise ValueError("--policies: no policy or agent to rank")
        if self.agents and self.metric in _NOT_IN_ENV:
            raise ValueError(
                f"--metric {self.metric!r}: an agent's run through the env keeps no per-job records "
                f"(no percentiles); rank agents by another metric"
            )
        if len(set(self.agents)) != len(self.agents):
            raise ValueError(f"--agent: named twice: {', '.join(self.agents)}")
        for key in self.policy_params:
            if key not in self.policies:
                raise ValueError(
                    f"--policy-param: {key!r} is not one of the policies ({', '.join(self.policies)})"
                )


# what an episode's result through the env does not hold (it keeps no per-job records)
_NOT_IN_ENV = frozenset({"response_time_p50", "response_time_p95", "response_time_p99"})

_TRACES: dict[str, TraceWorkload] = {}


def trace_replay(scenario: str) -> TraceWorkload:
    """The scenario's replay, built once per process."""
    if scenario not in _TRACES:
        from ..workloads.scenarios import load_scenario
        from ..workloads.trace import replay_length

        wl = load_scenario(scenario).build()
        if replay_length(wl) is None:
            raise ValueError(f"--scenario {scenario!r}: the protocol samples sequences of a trace (swf:FILE)")
        _TRACES[scenario] = wl
    return _TRACES[scenario]


def _run_one(task: tuple[str, str, str, dict[str, Any], int, int, str, bool]) -> float:
    """One policy or agent on one sequence: the metric of its result (module level, for worker
    processes)."""
    scenario, kind, spec, params, start, length, metric, bare = task
    seed = 0
    if kind == "agent":
        from .agents import load_agent, play_agent

        native = load_agent(spec, bare).native
        if native is None:
            where = f"the sequence of jobs {start}..{start + length - 1}"
            wl = sequence_workload(trace_replay(scenario), start, length)
            result = play_agent(spec, wl, {}, length, 0, start, where, bare=bare)
            return float(getattr(result, metric))
        # its episodes through its env (seeded by the sequence's start) are this policy's native runs,
        # run for run (tested)
        (spec, params), seed = native, start
    return sequence_metric(scenario, spec, start, length, metric, params, seed=seed)


def sequence_metric(
    scenario: str,
    policy: str,
    start: int,
    length: int,
    metric: str = "mean_bounded_slowdown",
    params: dict[str, Any] | None = None,
    seed: int = 0,
) -> float:
    """``metric`` of one policy (an id or ``module:Class``, with ``params``) on one sequence of a trace:
    jobs ``start .. start + length - 1`` of ``scenario``'s replay, scheduled from an empty machine to its
    last job (a run of :func:`run_sequences`)."""
    from ..core.simulator import Simulator
    from ..registry import policy_from_spec

    wl = sequence_workload(trace_replay(scenario), start, length)
    chosen = policy_from_spec(policy, "--policies", **(params or {}))
    result = Simulator(wl, chosen, num_arrivals=length, warmup=0, seed=seed).run()
    return float(getattr(result, metric))


def _check_agent(protocol: SequenceProtocol, spec: str, starts: np.ndarray) -> None:
    """Refuse, before any run, an agent that does not load or does not fit some sequence's env."""
    from .agents import check_agent

    for i, start in enumerate(starts):
        wl = sequence_workload(trace_replay(protocol.scenario), int(start), protocol.length)
        stop = int(start) + protocol.length - 1
        where = f"sequence {i + 1} (jobs {int(start)}..{stop}, {wl.num_classes} classes)"
        check_agent(spec, wl, {}, protocol.bare_agents, num_arrivals=protocol.length, where=where)


def run_sequences(
    protocol: SequenceProtocol, *, backend: str = "local", workers: int = 1, address: str | None = None
) -> dict[str, Any]:
    """Run every policy and agent on every sequence; returns ``{"protocol", "starts", "scores": {entrant:
    [score per sequence]}, "rows": [...]}``, the rows ranked by mean score (see
    :func:`format_sequences`). Every policy is checked on the trace, and every agent on every sequence,
    before any run."""
    from ..registry import policy_from_spec, supports
    from .agents import agent_label
    from .runner import map_unordered

    trace = trace_replay(protocol.scenario)
    starts = sequence_starts(
        int(trace.arrival_time.size),
        protocol.length,
        protocol.count,
        protocol.seed,
        protocol.window,
        protocol.skip,
        protocol.starts,
    )
    from ..guard import vet_policy

    for pid in protocol.policies:
        # a policy of the user's own: vetted in a child process on the first sequence before it runs
        first = sequence_workload(trace, int(starts[0]), protocol.length) if ":" in pid else None
        vet_policy(pid, "--policies", first, protocol.policy_params.get(pid, {}))
        policy = policy_from_spec(pid, "--policies", **protocol.policy_params.get(pid, {}))
        reason = supports(policy, trace)
        if reason is not None:
            raise ValueError(f"--policies: {pid!r} is not defined on {protocol.scenario!r}: {reason}")
    entrants = [("policy", pid, pid) for pid in protocol.policies]
    entrants += [("agent", spec, agent_label(spec)) for spec in protocol.agents]
    labels = [label for *_, label in entrants]
    for label in labels:
        if labels.count(label) > 1:
            same = [spec for _, spec, other in entrants if other == label]
            raise ValueError(f"--agent: {' and '.join(map(repr, same))} would share the row {label!r}")
    for spec in protocol.agents:
        _check_agent(protocol, spec, starts)
    tasks = [
        (
            protocol.scenario,
            kind,
            spec,
            dict(protocol.policy_params.get(spec, {})) if kind == "policy" else {},
            int(s),
            protocol.length,
            protocol.metric,
            protocol.bare_agents,
        )
        for kind, spec, _ in entrants
        for s in starts
    ]
    name = {(kind, spec): label for kind, spec, label in entrants}
    scores: dict[str, list[float]] = {label: [math.nan] * len(starts) for *_, label in entrants}
    index = {int(s): i for i, s in enumerate(starts)}
    for task, value in map_unordered(_run_one, tasks, backend=backend, workers=workers, address=address):
        scores[name[task[1], task[2]]][index[task[4]]] = value
    return {
        "protocol": protocol,
        "starts": starts.tolist(),
        "scores": scores,
        "rows": _rank(protocol, scores),
    }


def _rank(protocol: SequenceProtocol, scores: dict[str, list[float]]) -> list[dict[str, Any]]:
    from .tracks.queueing import METRICS

    higher = METRICS[protocol.metric].higher_better
    rows: list[dict[str, Any]] = []
    for pid, values in scores.items():
        est = replication_ci(values)
        rows.append({"policy": pid, "mean": est.mean, "ci95": est.ci95_half_width})
    rows.sort(key=lambda r: -r["mean"] if higher else r["mean"])
    best = scores[rows[0]["policy"]]
    for rank, row in enumerate(rows, 1):
        mine = scores[row["policy"]]
        ratio = replication_ci([a / b for a, b in zip(mine, best, strict=True) if b > 0])
        diff = replication_ci([a - b for a, b in zip(mine, best, strict=True)])
        row.update(rank=rank, ratio=ratio.mean, ratio_ci95=ratio.ci95_half_width, diff=diff.mean)
        row["diff_ci95"] = diff.ci95_half_width
    return rows


def sequences_json(report: dict[str, Any]) -> dict[str, Any]:
    """The report of :func:`run_sequences` as JSON-ready data: the protocol, the starts, and a row per
    entrant (ranked) with its mean metric over the sequences and 95 % half-width, its paired ratio and
    difference to the best with theirs, and its score on each sequence (in the order of the starts).
    A non-finite number (the half-width over one sequence) is null."""
    from ..metrics.result import json_clean

    p: SequenceProtocol = report["protocol"]
    rows = [
        {
            "rank": r["rank"],
            "entrant": r["policy"],
            "metric": p.metric,
            "mean": r["mean"],
            "ci95_half_width": r["ci95"],
            "ratio_to_best": r["ratio"],
            "ratio_ci95_half_width": r["ratio_ci95"],
            "difference_to_best": r["diff"],
            "difference_ci95_half_width": r["diff_ci95"],
            "per_sequence": list(report["scores"][r["policy"]]),
        }
        for r in report["rows"]
    ]
    protocol = {
        "scenario": p.scenario,
        "length": p.length,
        "count": p.count,
        "seed": p.seed,
        "window": p.window,
        "skip": p.skip,
        "starts": p.starts,
        "metric": p.metric,
        "policies": list(p.policies),
        "policy_params": p.policy_params,
        "agents": list(p.agents),
    }
    return json_clean({"protocol": protocol, "starts": list(report["starts"]), "rows": rows})


def format_sequences(report: dict[str, Any], markdown: bool = False, columns: Seq[str] = ()) -> str:
    """The ranked table: each policy's mean score over the sequences with its 95 % interval, and its
    paired ratio and difference to the best, with theirs."""
    p: SequenceProtocol = report["protocol"]
    window = f", starts from its first {p.window} jobs" if p.window else ""
    window += f", starts at job {p.skip} or later" if p.skip > p.length else ""
    window += ", RLScheduler's starts" if p.starts == "rlscheduler" else ""
    title = (
        f"{p.scenario}: {p.count} sequences of {p.length} jobs (seed {p.seed}{window}), ranked by {p.metric}"
    )
    head = ["rank", "policy", f"{p.metric} ± 95% CI", "ratio to best (paired)", "difference (paired)"]
    table = [
        [
            str(r["rank"]),
            r["policy"],
            fmt(r["mean"], r["ci95"]),
            fmt(r["ratio"], r["ratio_ci95"]),
            fmt(r["diff"], r["diff_ci95"]),
        ]
        for r in report["rows"]
    ]
    lines = render_table(title, head, table, markdown)[:-1]
    return "\n".join([f"**{title}**", "", *lines[1:]] if markdown else lines)  # a bold title, not a heading
