"""Command line: ``msj-gym leaderboard``, ``benchmark``, ``simulate``, ``sequences``, ``reproduce``,
``render``, ``score`` and ``list`` (a stable contract other tooling relies on)."""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pathlib import Path

    from .arguments import ArgumentParser
    from .core.policy import Policy
    from .env.render import DecisionFrames, ScheduleRecorder
    from .moldable.model import MoldableSystem
    from .moldable.policy import MoldablePolicy
    from .workloads.compat import CompatWorkload
    from .workloads.trace import TraceWorkload
    from .workloads.workload import Workload

__all__ = ["main"]

DEFAULT_GIF_FRAMES = 300  # `render`: 50 s of animation at 6 frames per second
MAX_GIF_FRAMES = 2000
MAX_GANTT_ARRIVALS = 20_000  # `render` to .png: a bar per service segment, all drawn at once
TRUST_PICKLE_HELP = (
    "load --agent checkpoints in stable-baselines3's own format, whose pickles can run any code: only "
    "for files you trust (msj_gym's own checkpoints hold data only and need no flag)"
)
TRUST_IMPORTS_HELP = (
    "let an --agent checkpoint's .json import the module:attr it names (an advisor or base outside the "
    "registry and msj_gym): only for files you trust"
)
LEADERBOARD_QUICK = {"seeds": 2, "arrivals": 2_000}  # `leaderboard --quick`, as `benchmark --quick`
BARE_AGENTS_HELP = (
    "admit a checkpoint without its .json (the env and keywords it was trained with): it runs on the "
    "env's defaults, its algorithm guessed; by default such a checkpoint is refused"
)


def _policy_params(items: Sequence[str]) -> dict[str, str]:
    params: dict[str, str] = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name:
            raise ValueError(f"--policy-param: expected NAME=VALUE, got {item!r}")
        params[name.strip()] = value.strip()
    return params


def _parser() -> argparse.ArgumentParser:
    from . import __version__
    from .arguments import ArgumentParser

    # one-line refusals (its subcommands' parsers are of its class)
    parser = ArgumentParser(prog="msj-gym", description="Multiserver-job scheduling simulator.")
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    _add_simulate(sub)
    _add_list(sub)
    _add_optimal(sub)
    _add_render(sub)
    _add_leaderboard(sub)
    _add_sequences(sub)
    _add_benchmark(sub)
    _add_reproduce(sub)
    _add_score(sub)
    return parser


def _add_simulate(sub: argparse._SubParsersAction[ArgumentParser]) -> None:
    """The ``simulate`` subcommand's flags."""
    sim = sub.add_parser(
        "simulate",
        help="run one policy on one scenario and print its metrics",
        description="Run POLICY on SCENARIO for one seed and print what the run measured: the mean "
        "response time with its 95% interval, waiting time, bounded slowdown, percentiles, utilisation, "
        "per-class figures, and whether the run is stable (an unstable run leads with a warning).",
    )
    sim.add_argument(
        "--scenario",
        required=True,
        help="a built-in scenario name, a .toml/.json/.yaml file, an SWF log swf:FILE[?options], or a GPU "
        "trace FORMAT:PATH[?options] (FORMAT gpu, philly, helios, acme, pai, openb or gfs); or a "
        "compatibility-model or moldable "
        "system's name (see `msj-gym list`)",
    )
    sim.add_argument(
        "--policy",
        required=True,
        help="policy id, defined on the scenario's model (see `msj-gym list`), or module:Class for a policy "
        "of your own (imported from the current folder or PYTHONPATH)",
    )
    rate = sim.add_mutually_exclusive_group()
    rate.add_argument("--load", type=float, help="offered load rho (default: the scenario's)")
    rate.add_argument("--arrival-rate", type=float, help="arrival rate lambda instead of a load")
    sim.add_argument("--k", type=int, help="number of servers (default: the scenario's)")
    length = sim.add_mutually_exclusive_group()
    length.add_argument(
        "--arrivals",
        type=int,
        help="arrivals to simulate, warm-up included (default 100000; a trace replay: all its jobs)",
    )
    length.add_argument("--horizon", type=float, help="simulate arrivals up to this time instead")
    sim.add_argument(
        "--warmup",
        type=float,
        help="arrivals (or, with --horizon, time) to discard; default 10%% (of a trace's jobs at most)",
    )
    sim.add_argument("--seed", type=int, default=0, help="root seed (default 0)")
    sim.add_argument(
        "--tau",
        type=float,
        default=None,
        help="tau of the bounded slowdown max((wait + run) / max(run, tau), 1), in the scenario's time unit "
        "(default: 10 on a trace, in seconds; a tenth of the mean service time on a synthetic scenario)",
    )
    sim.add_argument(
        "--policy-param",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="policy parameter (repeatable)",
    )
    sim.add_argument("--json", action="store_true", help="print one JSON object instead of a table")


def _add_list(sub: argparse._SubParsersAction[ArgumentParser]) -> None:
    """The ``list`` subcommand's flags."""
    lst = sub.add_parser(
        "list",
        help="list the built-in scenarios and policies of every model",
        description="List the built-in scenarios, each with what it models, and the registered policies, "
        "each preemptive or not, size-aware or not, with its source and its --policy-param parameters, "
        "of every model: the multiserver-job queue, the job-server compatibility model and moldable "
        "loss systems.",
    )
    lst.add_argument(
        "--model",
        choices=("msj", "compatibility", "moldable"),
        help="only this model's scenarios and policies (default: every model)",
    )


def _add_optimal(sub: argparse._SubParsersAction[ArgumentParser]) -> None:
    """The ``optimal`` subcommand's flags."""
    from .analysis.limits import DEFAULT_MAX_STATES, DEFAULT_SOLVE_MINUTES

    opt = sub.add_parser(
        "optimal",
        help="solve the exact optimal policy of a small exponential system (Markov decision process)",
        description="Solve the exact optimal scheduling policy (minimum mean response time) among the "
        "policies that do not know job durations, on a scenario with exponential durations, as a Markov "
        "decision process truncated where the states' probability is negligible; print its mean "
        "response time, the heuristics' ratios to it and the structure of its decisions. Small systems "
        "only: the state count and the solve time are estimated first.",
    )
    opt.add_argument("--scenario", required=True, help="a built-in scenario name or a scenario file")
    orate = opt.add_mutually_exclusive_group()
    orate.add_argument("--load", type=float, help="offered load rho (default: the scenario's)")
    orate.add_argument("--arrival-rate", type=float, help="arrival rate lambda instead of a load")
    opt.add_argument("--k", type=int, help="number of servers (default: the scenario's)")
    opt.add_argument("--preemptive", action="store_true", help="preempt-resume instead of non-preemptive")
    opt.add_argument(
        "--blocking", type=float, default=1e-6, help="largest fraction of arrivals the truncation may lose"
    )
    opt.add_argument(
        "--max-states",
        type=int,
        default=DEFAULT_MAX_STATES,
        help=f"refuse chains larger than this (default {DEFAULT_MAX_STATES:,})",
    )
    opt.add_argument(
        "--max-minutes",
        type=float,
        default=DEFAULT_SOLVE_MINUTES,
        help="refuse at once a solve estimated to take longer than this, from the state count "
        f"(default {DEFAULT_SOLVE_MINUTES:g}; the estimate is good to a factor of about 3)",
    )
    opt.add_argument(
        "--png", help="write a picture of the policy over the state space to this path (two classes)"
    )
    opt.add_argument("--json", action="store_true", help="print one JSON object instead of text")
    opt.add_argument("--quiet", action="store_true", help="no progress lines on stderr while it solves")


def _add_render(sub: argparse._SubParsersAction[ArgumentParser]) -> None:
    """The ``render`` subcommand's flags."""
    ren = sub.add_parser(
        "render",
        help="run a policy through the env and draw its schedule: an animated GIF or a Gantt chart PNG",
        description="Run POLICY through MSJ-v0 (MSJPreemptive-v0 for a preemptive policy) on one "
        "episode and write FILE: .gif, one frame per decision instant (servers as lanes, the queue, the "
        "clock), each once the scheduler has acted at that instant; .png, a Gantt chart "
        "(time on x, servers on y, each job a bar in its class colour).",
    )
    ren.add_argument("--scenario", required=True, help="a built-in scenario name or a scenario file")
    ren.add_argument(
        "--policy",
        required=True,
        help="policy id (see `msj-gym list`), or module:Class for a policy of your own (imported from "
        "the current folder or PYTHONPATH)",
    )
    ren.add_argument("--load", type=float, help="offered load rho (default: the scenario's)")
    ren.add_argument("--k", type=int, help="number of servers (default: the scenario's)")
    ren.add_argument("--seed", type=int, default=0, help="job-stream seed (default 0)")
    ren.add_argument(
        "--arrivals",
        type=int,
        default=100,
        help=f"arrivals in the episode (default 100; at most {MAX_GANTT_ARRIVALS} for a .png)",
    )
    ren.add_argument(
        "--max-frames",
        type=int,
        default=DEFAULT_GIF_FRAMES,
        help=f"a .gif keeps at most this many frames, the episode stops there (default "
        f"{DEFAULT_GIF_FRAMES}, at most {MAX_GIF_FRAMES}: each is a full picture in memory until written)",
    )
    ren.add_argument("--fps", type=float, default=6.0, help="GIF frames per second (default 6)")
    ren.add_argument("--out", required=True, metavar="FILE", help="FILE.gif or FILE.png")


def _add_leaderboard(sub: argparse._SubParsersAction[ArgumentParser]) -> None:
    """The ``leaderboard`` subcommand's flags."""
    lb = sub.add_parser(
        "leaderboard",
        help="rank policies and agents over scenarios x loads x seeds (paired, resumable)",
        description="Rank every policy (and agents) on a load sweep; with no arguments, sf-fig2 at loads "
        "0.5..0.9, 5 seeds of 20000 arrivals, all policies, about a minute on a laptop.",
    )
    lb.add_argument(
        "--scenario",
        action="append",
        default=None,
        help="scenario name, file, SWF log swf:FILE or GPU trace FORMAT:PATH (repeatable; default sf-fig2)",
    )
    lb.add_argument("--loads", default=None, help="'0.5,0.7,0.9' or 'START:STOP:STEP' (default 0.5:0.9:0.1)")
    lb.add_argument(
        "--policies",
        default="all",
        help="comma-separated ids, groups (all / non-preemptive / preemptive) and module:Class policies of "
        "your own (imported from the current folder or PYTHONPATH; default all)",
    )
    lb.add_argument(
        "--agent",
        action="append",
        default=[],
        metavar="PATH",
        help="a shipped agent name, a checkpoint .zip (data only; stable-baselines3's own pickled format "
        "needs --trust-pickle) or module:attr (repeatable); on a moldable or compatibility scenario, an "
        "agent of that model's env (MSJMoldable-v0, CompatAssign-v0)",
    )
    lb.add_argument("--bare-agents", action="store_true", help=BARE_AGENTS_HELP)
    _trust_args(lb)
    lb.add_argument("--seeds", default=None, help="a count, 'LO-HI' or a list (default 5: seeds 0..4)")
    lb.add_argument(
        "--arrivals", type=int, default=None, help="arrivals per run (default 20000; a trace: all its jobs)"
    )
    lb.add_argument(
        "--quick",
        action="store_true",
        help=f"{LEADERBOARD_QUICK['seeds']} seeds x {LEADERBOARD_QUICK['arrivals']} arrivals: a smoke test, "
        "not a ranking",
    )
    lb.add_argument(
        "--warmup", type=int, default=None, help="arrivals discarded per run (default 10%% of those run)"
    )
    lb.add_argument(
        "--reference", default=None, help="normalise to this entrant (default: each load's leader)"
    )
    lb.add_argument(
        "--policy-param",
        action="append",
        default=[],
        metavar="POLICY:NAME=VALUE",
        help="a parameter of one entrant, e.g. easy-backfilling:estimates=requested (repeatable)",
    )
    lb.add_argument(
        "--metric",
        default=None,
        help="rank by this metric (default mean_response_time; also weighted_mean_response_time, "
        "mean_waiting_time, mean_bounded_slowdown, response_time_p50, response_time_p95, "
        "response_time_p99, makespan, p_wait, utilization; a moldable system ranks by its cost per "
        "arrival only)",
    )
    lb.add_argument("--out", default="leaderboard", help="output folder (default ./leaderboard)")
    lb.add_argument(
        "--wide",
        action="store_true",
        help="print every column (kind, weighted T, P(wait), util, theory sources); default: 120 columns",
    )
    _backend_args(lb)


def _add_sequences(sub: argparse._SubParsersAction[ArgumentParser]) -> None:
    """The ``sequences`` subcommand's flags."""
    seq = sub.add_parser(
        "sequences",
        help="rank policies on sequences of jobs sampled from a trace (RLScheduler's protocol; paired)",
        description="Sample COUNT sequences of LENGTH consecutive jobs of a trace (swf:FILE), schedule each "
        "from an empty machine with every policy, and rank the policies by the mean over the sequences of "
        "each sequence's metric (default: the mean bounded slowdown), with 95% intervals over the "
        "sequences and paired ratios to the best.",
    )
    seq.add_argument("--scenario", required=True, help="a trace: swf:FILE[?options] (or a GPU trace)")
    seq.add_argument(
        "--policies",
        default="fcfs,wfp3,unicep,sjf,f1",
        help="comma-separated policy ids or module:Class (default: fcfs,wfp3,unicep,sjf,f1)",
    )
    seq.add_argument("--length", type=int, default=1024, help="jobs per sequence (default 1024)")
    seq.add_argument("--count", type=int, default=10, help="sequences (default 10)")
    seq.add_argument("--seed", type=int, default=1, help="seed of the sampling (default 1)")
    seq.add_argument("--window", type=int, default=None, help="draw the starts from the trace's first W jobs")
    seq.add_argument(
        "--skip",
        type=int,
        default=0,
        help="draw the starts from job S on (e.g. the jobs an agent held out by position trained on)",
    )
    seq.add_argument(
        "--starts",
        default="generator",
        help="how the starts are drawn: generator (msj_gym's seeded Generator, the default) or rlscheduler "
        "(RLScheduler's own starts for the seed, recomputed from its seeding: seed 1 gives its table's)",
    )
    seq.add_argument("--metric", default="mean_bounded_slowdown", help="what each sequence is scored by")
    seq.add_argument("--json", action="store_true", help="print the ranking as one JSON object")
    seq.add_argument(
        "--policy-param",
        action="append",
        default=[],
        metavar="POLICY:NAME=VALUE",
        help="a parameter of one policy, e.g. easy-backfilling:estimates=requested (repeatable)",
    )
    seq.add_argument(
        "--agent",
        action="append",
        default=[],
        metavar="SPEC",
        help="a shipped agent name, a checkpoint .zip (data only; stable-baselines3's own pickled format "
        "needs --trust-pickle) or module:attr, ranked beside the policies (repeatable)",
    )
    seq.add_argument("--bare-agents", action="store_true", help=BARE_AGENTS_HELP)
    _trust_args(seq)
    seq.add_argument("--markdown", action="store_true", help="print the table as Markdown")
    _backend_args(seq)


def _add_benchmark(sub: argparse._SubParsersAction[ArgumentParser]) -> None:
    """The ``benchmark`` subcommand's flags."""
    bench = sub.add_parser(
        "benchmark",
        help="score policies and agents on a fixed suite of scenarios and loads (IQM, bootstrap CIs)",
        description="Score every non-preemptive baseline (and agents) on the fixed benchmark suite: per "
        "point 0 = FCFS (or the lower reference), 100 = the exact optimum (or the best heuristic); the "
        "interquartile mean over seeds x points with stratified-bootstrap 95% CIs, and the probability "
        "of improving on the best heuristic. Default: 5 seeds x 20000 arrivals per point.",
    )
    bench.add_argument(
        "--agent",
        action="append",
        default=[],
        metavar="SPEC",
        help="a shipped agent name, a checkpoint .zip (data only; stable-baselines3's own pickled format "
        "needs --trust-pickle) or module:attr (repeatable)",
    )
    bench.add_argument("--bare-agents", action="store_true", help=BARE_AGENTS_HELP)
    _trust_args(bench)
    bench.add_argument(
        "--policies",
        default="",
        metavar="SPECS",
        help="comma-separated module:Class policies of your own to score beside the baselines (imported "
        "from the current folder or PYTHONPATH)",
    )
    bench.add_argument(
        "--suite",
        default="v1",
        help="the suite version: v1 (8 queueing points, the default), v2 (v1's points, trace points "
        "of the HPC protocol and moldable and compatibility points, with a published train/test split; "
        "its trace points need the Parallel Workloads Archive logs, found as swf: scenarios find them) "
        "or v3 (v2's points and a GPU-cluster point, whose trace you download: see the docs)",
    )
    bench.add_argument(
        "--points",
        default=None,
        metavar="SCENARIO@X,...",
        help="run only these points of the suite (e.g. 002-sub-linear-halfin-whitt@4000,003-random-2@0.7): "
        "a subset, scored over its own points, in a folder of its own",
    )
    bench.add_argument(
        "--preemptive", action="store_true", help="enter the preemptive baselines too (same scale)"
    )
    bench.add_argument(
        "--quick", action="store_true", help="2 seeds x 2000 arrivals: a smoke test, not a score"
    )
    bench.add_argument(
        "--metric",
        default="mean_response_time",
        help="score on this metric, as leaderboard --metric (default mean_response_time, the only one "
        "with an exact optimum: for any other the score's 100 is the best heuristic); the same runs, "
        "rescored, into benchmark-METRIC.md and the like",
    )
    bench.add_argument("--out", default="benchmark", help="output folder (default ./benchmark)")
    _backend_args(bench)


def _add_reproduce(sub: argparse._SubParsersAction[ArgumentParser]) -> None:
    """The ``reproduce`` subcommand's flags."""
    fig = sub.add_parser(
        "reproduce",
        aliases=["figure"],
        help="regenerate a paper figure or table; write NAME.csv and NAME.png",
        description="Regenerate a figure or table of one of the source papers (--list names them) from "
        "fresh simulations and write NAME.csv and NAME.png; runs already in the output folder's "
        "runs.jsonl are reused.",
    )
    fig.add_argument("name", nargs="?", help="figure id, e.g. 004-fig3, or 'all' (see --list)")
    fig.add_argument("--list", action="store_true", help="list the figures")
    fig.add_argument("--out", default="figures", help="output folder (runs.jsonl there is reused)")
    fig.add_argument("--arrivals", type=int, help="arrivals per run (default: the figure's)")
    fig.add_argument("--seeds", type=int, default=1, help="independent runs per point (default 1)")
    _backend_args(fig)


def _add_score(sub: argparse._SubParsersAction[ArgumentParser]) -> None:
    """The ``score`` subcommand's flags."""
    from .scoring import DEFAULT_TIME_LIMIT, SCORE_ARRIVALS, SCORE_SEEDS

    score = sub.add_parser(
        "score",
        help="score policies for policy search: vet each, run the score suite, print JSON",
        description="Vet each policy as check_policy does (in a child process, each step within "
        "--time-limit seconds: a broken policy is refused in one line), run it on the score suite "
        "(sf-fig2, one-or-all and four-class at 8 loads) at seeds no published table uses, paired with "
        "the built-in policies, and print JSON (schema msj-gym-score/1): one combined score (the mean "
        "over points x seeds of the benchmark's scale: 0 = FCFS or the lower reference, 100 = the exact "
        "optimum or the best heuristic; an unstable run scores 0) and the per-point scores, with 95% "
        "intervals. Exit 1 if a policy is refused.",
    )
    score.add_argument(
        "policies",
        nargs="*",
        metavar="SPEC",
        help="FILE.py:Class, module:Class (a Policy class or instance) or a registered id",
    )
    score.add_argument(
        "--builtin",
        action="store_true",
        help="score every built-in policy too (their runs are the references')",
    )
    score.add_argument(
        "--policy-param",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a parameter of the one policy scored (repeatable)",
    )
    score.add_argument(
        "--seeds",
        default=None,
        help=f"seeds: 'LO-HI' or a list, at least 2, none a published table's (default "
        f"{SCORE_SEEDS[0]}-{SCORE_SEEDS[-1]})",
    )
    score.add_argument(
        "--arrivals", type=int, default=None, help=f"arrivals per run (default {SCORE_ARRIVALS})"
    )
    score.add_argument(
        "--points", default=None, metavar="SCENARIO@LOAD,...", help="a subset of the suite (default: all 8)"
    )
    score.add_argument(
        "--time-limit",
        type=float,
        default=DEFAULT_TIME_LIMIT,
        help=f"seconds for each step of a policy's vetting and each of its runs (default "
        f"{DEFAULT_TIME_LIMIT:g})",
    )
    score.add_argument(
        "--workers",
        type=int,
        default=None,
        help="processes making the built-in policies' runs the first time (default all cores)",
    )
    score.add_argument("--compact", action="store_true", help="print the JSON on one line")


def _trust_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--trust-pickle", action="store_true", help=TRUST_PICKLE_HELP)
    p.add_argument("--trust-imports", action="store_true", help=TRUST_IMPORTS_HELP)


def _trusting(command: Callable[[argparse.Namespace], int]) -> Callable[[argparse.Namespace], int]:
    """``command`` run under what its ``--trust-pickle`` and ``--trust-imports`` grant
    (:mod:`msj_gym.trust`), for its duration only."""
    import functools

    @functools.wraps(command)
    def run(args: argparse.Namespace) -> int:
        from .trust import IMPORTS, PICKLE, trusting

        flags = ((PICKLE, "trust_pickle"), (IMPORTS, "trust_imports"))
        with trusting([kind for kind, flag in flags if getattr(args, flag, False)]):
            return command(args)

    return run


def _backend_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--backend", default="local", choices=("local", "ray"), help="local process pool or Ray")
    p.add_argument(
        "--workers", type=int, default=None, help="processes (local) or CPUs (local Ray); default all cores"
    )
    p.add_argument("--address", default=None, help="Ray cluster address (default: start a local Ray)")


def _workers(args: argparse.Namespace) -> int:
    import os

    if args.workers is not None and args.workers < 1:
        raise ValueError(f"--workers: expected a positive integer, got {args.workers}")
    return args.workers if args.workers is not None else (os.cpu_count() or 1)


def _importable_from_here(specs: Sequence[str]) -> None:
    """Let ``module:attr`` specs name modules of the current folder, as ``python -m`` would: the
    ``msj-gym`` script does not have it on ``sys.path``. Appended, so that it shadows no installed
    package; worker processes inherit the path."""
    import os

    if any(":" in spec for spec in specs) and os.getcwd() not in sys.path and "" not in sys.path:
        sys.path.append(os.getcwd())


def _listed(flag: str, text: str) -> tuple[str, ...]:
    """A comma list of ``flag`` (empty items dropped), each item once: one given twice is refused."""
    items = tuple(p.strip() for p in text.split(",") if p.strip())
    twice = next((p for p in items if items.count(p) > 1), None)
    if twice is not None:
        raise ValueError(f"{flag}: {twice!r} is given twice")
    return items


def _positive_finite(flag: str, value: float | None) -> None:
    """Refuse a time or rate flag that is not a positive finite number (argparse accepts nan, inf)."""
    if value is not None and not (math.isfinite(value) and value > 0):
        raise ValueError(f"{flag}: expected a positive finite number, got {value!r}")


def _entrant_params(items: Sequence[str]) -> dict[str, dict[str, str]]:
    """``POLICY:NAME=VALUE`` items as {policy: {name: value}}."""
    out: dict[str, dict[str, str]] = {}
    for item in items:
        head, eq, value = item.partition("=")
        policy, sep, name = head.rpartition(":")  # a module:Class policy has a colon of its own
        if not sep or not policy.strip() or not eq or not name.strip():
            raise ValueError(f"--policy-param: expected POLICY:NAME=VALUE, got {item!r}")
        out.setdefault(policy.strip(), {})[name.strip()] = value.strip()
    return out


@_trusting
def _leaderboard(args: argparse.Namespace) -> int:
    from pathlib import Path

    from .atomic import check_output_folder
    from .experiments.leaderboard import DEFAULT_SCENARIO, LeaderboardConfig, format_tables, run_leaderboard

    workers = _workers(args)  # every flag is checked before anything is written to --out
    _quick_leaderboard(args)
    check_output_folder("--out", args.out, "leaderboard.json")  # before the plan, which may solve optima
    policies = _listed("--policies", args.policies)
    if not policies and not args.agent:
        raise ValueError(f"--policies: expected policy ids or a group, got {args.policies!r}")
    _importable_from_here([*policies, *args.agent])
    config = LeaderboardConfig(
        scenarios=tuple(args.scenario or [DEFAULT_SCENARIO]),
        loads=args.loads,
        policies=policies,
        agents=tuple(args.agent),
        seeds=args.seeds,
        arrivals=args.arrivals,
        warmup=args.warmup,
        reference=args.reference,
        metric=args.metric,
        policy_params=_entrant_params(args.policy_param),
        bare_agents=args.bare_agents,
    )
    report = run_leaderboard(
        config, Path(args.out), backend=args.backend, workers=workers, address=args.address
    )
    print(format_tables(report, wide=args.wide))
    out = Path(args.out)
    names = [str(f.relative_to(out)) if f.is_relative_to(out) else str(f) for f in report["files"]]
    print(f"wrote in {out}/: " + ", ".join([*names, "runs.jsonl"]))
    return 0


def _quick_leaderboard(args: argparse.Namespace) -> None:
    """``--quick``: :data:`LEADERBOARD_QUICK`'s seeds and arrivals, unless the flags say otherwise;
    without it, ``--seeds`` defaults to 5."""
    if not args.quick:
        args.seeds = "5" if args.seeds is None else args.seeds
        return
    for flag in ("seeds", "arrivals"):
        if getattr(args, flag) is not None:
            raise ValueError(f"--quick: sets --{flag} ({LEADERBOARD_QUICK[flag]}); give one or the other")
    args.seeds, args.arrivals = str(LEADERBOARD_QUICK["seeds"]), LEADERBOARD_QUICK["arrivals"]


@_trusting
def _sequences(args: argparse.Namespace) -> int:
    from .experiments.sequences import SequenceProtocol, format_sequences, run_sequences, sequences_json

    workers = _workers(args)
    policies = _listed("--policies", args.policies)
    _importable_from_here([*policies, *args.agent])
    protocol = SequenceProtocol(
        scenario=args.scenario,
        policies=policies,
        length=args.length,
        count=args.count,
        seed=args.seed,
        window=args.window,
        skip=args.skip,
        metric=args.metric,
        policy_params=_entrant_params(args.policy_param),
        agents=tuple(args.agent),
        bare_agents=args.bare_agents,
        starts=args.starts,
    )
    if args.json and args.markdown:
        raise ValueError("--json: prints JSON, not a table; drop --markdown")
    started = time.perf_counter()
    report = run_sequences(protocol, backend=args.backend, workers=workers, address=args.address)
    if args.json:
        print(json.dumps(sequences_json(report)))
        return 0
    print(format_sequences(report, markdown=args.markdown))
    print(f"({time.perf_counter() - started:.1f} s; sequence starts {report['starts']})")
    return 0


def _require_scipy(command: str, module: str) -> None:
    """A one-line error naming the extra when SciPy (``module``) is missing, before any work."""
    import importlib

    try:
        importlib.import_module(module)
    except ImportError:
        raise ValueError(f"{command} needs SciPy: pip install 'scipy>=1.11'") from None


@_trusting
def _benchmark(args: argparse.Namespace) -> int:
    from pathlib import Path

    _require_scipy("benchmark", "scipy.stats")  # the statistics; the exact optima need scipy.sparse too

    from .atomic import check_output_folder
    from .experiments.benchmark import QUICK, BenchmarkConfig, parse_points, run_benchmark
    from .experiments.benchmark_tables import format_benchmark

    workers = _workers(args)  # every flag and agent is checked before anything is written to --out
    check_output_folder("--out", args.out, "benchmark.json")
    extra: dict[str, Any] = dict(QUICK) if args.quick else {}
    policies = tuple(p.strip() for p in args.policies.split(",") if p.strip())
    _importable_from_here([*policies, *args.agent])
    if args.points is not None:  # given: a selection, never empty (leave it out for the whole suite)
        if not args.points.strip(" ,"):
            raise ValueError(
                f"--points {args.points!r}: expected SCENARIO@X,... (leave --points out for the whole suite)"
            )
        extra["points"] = parse_points(args.points, args.suite)
    config = BenchmarkConfig(
        agents=tuple(args.agent),
        policies=policies,
        preemptive=args.preemptive,
        bare_agents=args.bare_agents,
        metric=args.metric,
        suite=args.suite,
        **extra,
    )
    report = run_benchmark(
        config, Path(args.out), backend=args.backend, workers=workers, address=args.address
    )
    print(format_benchmark(report))
    print("wrote " + ", ".join(str(f) for f in report["files"]) + f" and {Path(args.out) / 'runs.jsonl'}")
    return 0


def _score(args: argparse.Namespace) -> int:
    from .scoring import builtin_ids, score

    specs = list(args.policies)
    if not specs and not args.builtin:
        raise ValueError("score: expected SPEC (FILE.py:Class, module:Class or an id) or --builtin")
    if args.policy_param and (len(specs) != 1 or args.builtin):
        raise ValueError("--policy-param: applies to one SPEC, without --builtin")
    _importable_from_here(specs)
    if args.builtin:
        specs += [pid for pid in builtin_ids(args.points) if pid not in specs]
    report = score(
        specs,
        params=_policy_params(args.policy_param),
        seeds=args.seeds,
        arrivals=args.arrivals,
        points=args.points,
        time_limit=args.time_limit,
        workers=args.workers,
        progress=True,
    )
    print(report.to_json(indent=None if args.compact else 2))
    refused = [r for r in report.results if r.status != "scored"]
    for r in refused:
        print(f"msj-gym: error: {r.error}", file=sys.stderr)
    return 1 if refused else 0


def _check_system_flags(args: argparse.Namespace) -> None:
    """``--k``, ``--load`` and ``--arrival-rate``, each error naming its flag."""
    from .workloads.workload import MAX_SERVERS, check_integer, check_load

    if args.k is not None:
        check_integer("--k", args.k, 1, MAX_SERVERS)
    if args.load is not None:
        check_load(args.load, "--load")
    _positive_finite("--arrival-rate", args.arrival_rate)


def _check_policy(policy_id: str, model: str, params: dict[str, str] | None = None) -> None:
    """An error before any work if ``policy_id`` is unknown or not defined on ``model`` (no import of
    a registered policy; a ``module:attr`` policy of the user's own is imported and asked)."""
    from .registry import policy_from_spec, policy_spec

    params = params or {}
    if ":" in policy_id:
        from .guard import vet_policy

        _importable_from_here([policy_id])
        vet_policy(policy_id, "--policy", params=params)  # imported and made in a child process first
        models = tuple(getattr(policy_from_spec(policy_id, "--policy", **params), "models", ("msj",)))
        if model not in models:
            raise ValueError(
                f"--policy: {policy_id!r} is not defined on the {model} model of the scenario "
                f"(it is defined on: {', '.join(models)})"
            )
        return
    spec = policy_spec(policy_id)
    if model not in spec.models:
        raise ValueError(
            f"--policy: {policy_id!r} is not defined on the {model} model of the scenario "
            f"(it is defined on: {', '.join(spec.models)})"
        )


def _run_length(args: argparse.Namespace, jobs: int | None = None) -> dict[str, Any]:
    """Simulator keyword arguments of ``--seed``, ``--arrivals`` / ``--horizon`` and ``--warmup``. A
    trace replay of ``jobs`` jobs runs all of them by default, and its default warm-up is a tenth of
    the jobs it replays (the defaults of an endless stream would discard more jobs than a short trace
    holds)."""
    kwargs: dict[str, Any] = {"seed": args.seed}
    if getattr(args, "tau", None) is not None:
        kwargs["slowdown_tau"] = args.tau
    if args.horizon is not None:
        kwargs["horizon"] = args.horizon
        if args.warmup is not None:
            kwargs["warmup_time"] = args.warmup
        else:
            kwargs["warmup_time"] = 0.1 * args.horizon
    else:
        default = 100_000 if jobs is None else jobs
        kwargs["num_arrivals"] = args.arrivals if args.arrivals is not None else default
        if args.warmup is not None:
            if args.warmup != int(args.warmup):
                raise ValueError(f"--warmup: expected a whole number of arrivals, got {args.warmup}")
            kwargs["warmup"] = int(args.warmup)
        elif jobs is not None:
            kwargs["warmup"] = min(kwargs["num_arrivals"], jobs) // 10
    return kwargs


def _simulate(args: argparse.Namespace) -> int:
    # the flags first (cheap, and each error names its flag), then the policy's model, then the scenario
    _check_system_flags(args)
    _positive_finite("--horizon", args.horizon)
    _positive_finite("--tau", args.tau)
    if args.warmup is not None and not (math.isfinite(args.warmup) and args.warmup >= 0):
        raise ValueError(f"--warmup: expected a finite number >= 0, got {args.warmup!r}")
    from .experiments.tracks import scenario_model

    model = scenario_model(args.scenario)
    _check_policy(args.policy, model, _policy_params(args.policy_param))
    return _SIMULATE.get(model, _simulate_queue)(args)


def _simulate_queue(args: argparse.Namespace) -> int:
    """A scenario of the MSJ queue (a named one, a scenario file or a trace) run by the event engine."""
    from .core.simulator import Simulator
    from .registry import policy_from_spec
    from .workloads.scenarios import load_scenario

    scenario = load_scenario(args.scenario)
    try:
        workload = scenario.build(num_servers=args.k, load=args.load, arrival_rate=args.arrival_rate)
    except ValueError as exc:
        # the rate's usable range depends on the scenario: name the flag in Workload's message
        if args.arrival_rate is not None and str(exc).startswith("arrival_rate:"):
            raise ValueError("--arrival-rate" + str(exc).removeprefix("arrival_rate")) from None
        raise
    from .guard import vet_policy
    from .workloads.trace import replay_length

    # a policy of the user's own: a short bounds-checked run on this workload, in a child process
    vet_policy(args.policy, "--policy", workload, _policy_params(args.policy_param))
    policy = policy_from_spec(args.policy, "--policy", **_policy_params(args.policy_param))
    run = _run_length(args, replay_length(workload))
    _note_short_trace(workload, run.get("num_arrivals"))
    result = Simulator(workload, policy, **run).run()
    return _print_queueing(args, result, scenario.name, workload, policy, f"k={workload.num_servers}")


def _print_queueing(
    args: argparse.Namespace,
    result: Any,
    name: str,
    workload: Workload | TraceWorkload | CompatWorkload,
    policy: Any,
    size: str,
) -> int:
    if result.num_measured == 0:  # stopped (queue limit, arrival cap) before any measured job arrived
        raise ValueError(
            f"no job was measured: {result.stability_note}; use a lower --load or fewer --warmup arrivals"
        )
    return _print_run(args, result, name, workload, policy, size)


def _print_run(
    args: argparse.Namespace,
    result: Any,
    name: str,
    system: Workload | TraceWorkload | CompatWorkload | MoldableSystem,
    policy: Any,
    size: str,
) -> int:
    """A finished run: its JSON (``--json``) or its header line and summary."""
    if args.json:
        out = result.to_dict()
        out["scenario"] = name
        out["policy"] = policy.policy_id
        print(json.dumps(out))
    else:
        print(
            f"scenario {name}  {size}  load={system.load:.4f}  "
            f"lambda={system.arrival_rate:.6g}  policy {policy.policy_id} {policy.param_values or ''}"
        )
        print(result.summary())
    return 0


def _not_for(model: str, args: argparse.Namespace, *flags: str) -> None:
    """A one-line error for a flag the scenario's model does not take."""
    for flag in flags:
        value = getattr(args, flag.removeprefix("--").replace("-", "_"))
        if value is not None:
            raise ValueError(f"{flag}: not used by {model} scenario {args.scenario!r}, got {value!r}")


def _simulate_compat(args: argparse.Namespace) -> int:
    """A job-server compatibility system (Bonald & Comte (2017)) run by the pooled simulator, as the
    experiments run it; ``--load`` is the system's rho."""
    from .pooled import PooledSimulator
    from .registry import policy_from_spec
    from .workloads.compat import build_compat_scenario

    _not_for("compatibility", args, "--k", "--arrival-rate")  # the system fixes its servers and rates
    build = {} if args.load is None else {"load": args.load}
    workload = build_compat_scenario(args.scenario, **build)
    policy = policy_from_spec(args.policy, "--policy", **_policy_params(args.policy_param))
    result = PooledSimulator(workload, policy, **_run_length(args)).run()
    return _print_queueing(args, result, args.scenario, workload, policy, f"servers={workload.num_servers}")


def _simulate_moldable(args: argparse.Namespace) -> int:
    """A moldable loss system (Ghanbarian et al. (2024)): ``--k`` servers (default 100), ``--load`` the
    arrival rate per server (unit-mean sizes) instead of the named traffic regime's."""
    from .moldable.loss import LossSimulator
    from .moldable.systems import build_moldable_system
    from .registry import policy_from_spec

    # a loss system runs a number of arrivals, and its jobs never wait (no slowdown)
    _not_for("moldable", args, "--arrival-rate", "--horizon", "--tau")
    if args.warmup is not None and args.warmup != int(args.warmup):
        raise ValueError(f"--warmup: expected a whole number of arrivals, got {args.warmup}")
    system = build_moldable_system(
        args.scenario, num_servers=100 if args.k is None else args.k, arrival_rate=args.load
    )
    policy = policy_from_spec(args.policy, "--policy", **_policy_params(args.policy_param))
    result = LossSimulator(
        system,
        policy,
        seed=args.seed,
        num_arrivals=args.arrivals if args.arrivals is not None else 100_000,
        warmup=None if args.warmup is None else int(args.warmup),
    ).run()
    return _print_run(args, result, args.scenario, system, policy, f"n={system.num_servers}")


#: ``msj-gym simulate`` of a scenario of a model with a simulator of its own (else the queue's engine).
_SIMULATE = {"compatibility": _simulate_compat, "moldable": _simulate_moldable}


def _check_render_flags(args: argparse.Namespace) -> Path:
    """Every flag of ``msj-gym render`` before any simulation, the output file's folder too (writable,
    not a folder), and the drawing libraries; the output path."""
    from .atomic import check_output_file
    from .registry import ENGINE_MODELS, policy_ids
    from .workloads.workload import check_integer

    out = check_output_file("--out", args.out, (".gif", ".png"))
    kind = out.suffix.lower()
    if ":" not in args.policy and args.policy not in policy_ids(ENGINE_MODELS):
        raise ValueError(f"--policy: unknown policy {args.policy!r}; see `msj-gym list`")
    if kind == ".png":
        check_integer("--arrivals", args.arrivals, 2, MAX_GANTT_ARRIVALS)
    else:
        check_integer("--arrivals", args.arrivals, 2, 10**9)
        check_integer("--max-frames", args.max_frames, 1, MAX_GIF_FRAMES)
    if args.seed < 0:
        raise ValueError(f"--seed: expected a non-negative integer, got {args.seed}")
    if not (math.isfinite(args.fps) and 0 < args.fps <= 100):
        raise ValueError(f"--fps: expected a number in (0, 100], got {args.fps!r}")
    args.arrival_rate = None
    _check_system_flags(args)
    try:
        import PIL  # noqa: F401

        if kind == ".png":
            import matplotlib  # noqa: F401
    except ImportError:
        from .extras import install_hint

        raise ValueError(f"render needs Pillow and matplotlib: {install_hint('plot')}") from None
    return out


def _render(args: argparse.Namespace) -> int:
    import time

    from .registry import policy_from_spec, supports

    out = _check_render_flags(args)
    kind = out.suffix.lower()
    import gymnasium as gym

    from .env import MSJEnv, PolicyAgent
    from .env.render import DecisionFrames, gantt_png, write_gif
    from .workloads.scenarios import load_scenario

    _importable_from_here([args.policy])
    policy = policy_from_spec(args.policy, "--policy")
    workload = load_scenario(args.scenario).build(num_servers=args.k, load=args.load)
    reason = supports(policy, workload)  # refused before it says what it will draw
    if reason is not None:
        raise ValueError(reason)
    _note_short_trace(workload, args.arrivals)
    # what it will produce, before it starts: the frames are kept in memory until the GIF is written
    print(f"msj-gym render: {out}: {_render_plan(args, workload, kind)}", file=sys.stderr, flush=True)
    env = gym.make(
        "MSJPreemptive-v0" if policy.preemptive else "MSJ-v0",
        scenario=workload,
        num_arrivals=args.arrivals,
        # windows wide enough for any baseline's decisions (EASY backfilling skips within a class)
        queue_window=64,
        preempt_window=workload.num_servers,
        disable_env_checker=True,
    )
    agent = PolicyAgent(policy, env)
    start = time.perf_counter()
    recorder, truncated, info = _play_recorded(env, agent, args.seed, kind, args.max_frames)
    names = [c.name or f"class{i}" for i, c in enumerate(workload.classes)]
    head = f"{workload.name}  k={workload.num_servers}  load={workload.load:.3g}  policy {policy.policy_id}  "
    if truncated:
        core = env.unwrapped
        assert isinstance(core, MSJEnv)  # what MSJ-v0 and MSJPreemptive-v0 make
        result = core.result()
        title = (
            head + f"seed {args.seed}, {args.arrivals} arrivals: mean response time "
            f"{result.mean_response_time:.4g}" + ("" if result.stable else " (unstable)")
        )
    else:
        title = head + f"seed {args.seed}: the first {args.max_frames} decision instants (--max-frames)"
    if isinstance(recorder, DecisionFrames):
        frames = recorder.frames
        write_gif(frames, out, ms_per_frame=round(1000 / args.fps))
        per = 1000 * recorder.seconds / max(len(frames), 1)
        print(f"wrote {out}: {len(frames)} frames ({per:.1f} ms per frame to draw); {title}")
    else:
        recorder.close(info["time"])
        gantt_png(recorder.segments, workload.num_servers, names, out, title=title)
        print(f"wrote {out}: {len(recorder.segments)} service segments; {title}")
    print(f"({time.perf_counter() - start:.1f} s)")
    return 0


def _render_plan(args: argparse.Namespace, workload: Workload, kind: str) -> str:
    """What ``msj-gym render`` will write: a GIF's frame budget and memory, or a Gantt chart."""
    from .env.render import FrameRenderer

    if kind == ".gif":
        height, width, depth = FrameRenderer(workload).frame(None).shape
        megabytes = args.max_frames * height * width * depth / 1e6
        return (
            f"a GIF of one frame per decision instant, at most {args.max_frames} (--max-frames) of "
            f"{width}x{height} pixels: up to {megabytes:.0f} MB in memory while drawing"
        )
    return f"a Gantt chart of the {args.arrivals} arrivals' service"


def _play_recorded(
    env: Any, agent: Any, seed: int, kind: str, max_frames: int
) -> tuple[ScheduleRecorder | DecisionFrames, bool, dict]:
    """One episode of ``agent`` in ``env`` from ``seed``, recorded for a Gantt chart (``kind``
    ``.png``) or as at most ``max_frames`` GIF frames: the recorder, whether the episode ran to its
    end, and the last info."""
    from .env.render import DecisionFrames, ScheduleRecorder

    obs, info = env.reset(seed=seed)
    recorder = ScheduleRecorder() if kind == ".png" else DecisionFrames(env, max_frames=max_frames)
    if isinstance(recorder, ScheduleRecorder):
        recorder.after(env)
    truncated = False
    while not truncated:
        action, _ = agent.predict(obs)
        if isinstance(recorder, ScheduleRecorder):
            recorder.before(env)
        else:
            recorder.before(action)
        obs, _, _, truncated, info = env.step(action)
        if isinstance(recorder, ScheduleRecorder):
            recorder.after(env)
        else:
            recorder.after(truncated)
            if recorder.full:
                break  # the frame budget is spent: running on would only cost time
    return recorder, truncated, info


def _note_short_trace(workload: Workload | TraceWorkload, arrivals: int | None) -> None:
    """A one-line note when a trace holds fewer jobs than the run asks for: the run ends with the
    trace, and measures fewer jobs than ``arrivals`` minus the warm-up."""
    jobs = getattr(workload, "arrival_time", None)
    if (
        getattr(workload, "finite", False)
        and jobs is not None
        and arrivals is not None
        and len(jobs) < arrivals
    ):
        print(
            f"msj-gym: note: trace {workload.name!r} holds {len(jobs)} jobs, fewer than --arrivals "
            f"{arrivals}: the run ends with the trace",
            file=sys.stderr,
        )


def _print_policy(pid: str, cls: type[Policy] | type[MoldablePolicy]) -> None:
    preemption = "preemptive" if cls.preemptive else "non-preemptive"
    flags = f"{preemption}, {'size-aware' if cls.size_aware else 'size-oblivious'}"
    print(f"  {pid:<24} {flags:<32} {cls.reference}")
    for pname, spec in cls.params_spec.items():
        choices = f" {list(spec.choices)}" if spec.choices else ""
        usage = f"--policy-param {pname}=<{spec.kind.__name__}>"
        print(f"      {usage} (default {spec.default!r}){choices}: {spec.doc}")


def _list(model: str | None = None) -> int:
    """Every model's scenarios, then its policies (``model``: one model's only). The MSJ part keeps the
    ``scenarios:`` / ``policies:`` sections other tooling parses."""
    from .experiments.tracks import is_headline, scenario_listing
    from .registry import MODELS, list_policies

    sections: list[tuple[str, str, list[tuple[str, str]]]] = []
    for m in MODELS:
        if model in (None, m):
            prefix = "" if is_headline(m) else f"{m} "
            sections.append((m, prefix, scenario_listing(m)))
    for i, (m, prefix, scenarios) in enumerate(sections):
        if i:
            print()
        print(f"{prefix}scenarios:")
        width = max(14, *(len(name) for name, _ in scenarios))
        for name, desc in scenarios:
            print(f"  {name:<{width}} {desc}")
        print(f"\n{prefix}policies:")
        for pid, cls in list_policies(m).items():
            _print_policy(pid, cls)
    return 0


def _figure(args: argparse.Namespace) -> int:
    from pathlib import Path

    from .experiments.figures import all_figures, make_figure

    if args.list or not args.name:
        for name, fig in all_figures().items():
            print(f"  {name:<12} {fig.title}  [{fig.source}]")
        return 0
    # every flag before the first figure writes anything (``all`` runs many)
    workers = _workers(args)
    if args.seeds < 1:
        raise ValueError(f"--seeds: expected a positive integer, got {args.seeds}")
    if args.arrivals is not None and args.arrivals < 100:
        raise ValueError(f"--arrivals: expected an integer >= 100, got {args.arrivals}")
    names = list(all_figures()) if args.name == "all" else [args.name]
    if args.name != "all" and args.name not in all_figures():  # before --out is created
        raise ValueError(f"unknown figure {args.name!r}; known: {', '.join(all_figures())}")
    from .experiments.runner import hold_folder

    with hold_folder(Path(args.out)):  # one writer for the whole command (``all`` runs many figures)
        for name in names:
            csv_path, png = make_figure(
                name,
                Path(args.out),
                arrivals=args.arrivals,
                seeds=args.seeds,
                backend=args.backend,
                workers=workers,
                address=args.address,
            )
            print(f"wrote {csv_path}" + (f" and {png}" if png else " (install matplotlib for the PNG)"))
    return 0


def _check_optimal_flags(args: argparse.Namespace) -> None:
    """Every flag of ``msj-gym optimal``, and ``--png``'s path and library, before the solve, which
    may take minutes."""
    from .atomic import check_output_file
    from .workloads.workload import check_integer

    _check_system_flags(args)
    if not (math.isfinite(args.blocking) and 0 < args.blocking < 1):
        raise ValueError(f"--blocking: expected a number in (0, 1), got {args.blocking!r}")
    check_integer("--max-states", args.max_states, 1, 10**8)
    if not (math.isfinite(args.max_minutes) and args.max_minutes > 0):
        raise ValueError(f"--max-minutes: expected a positive finite number, got {args.max_minutes!r}")
    if args.png:  # the picture's path and library before the solve, which may take minutes
        check_output_file("--png", args.png, (".png",))
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            from .extras import install_hint

            raise ValueError(f"--png needs matplotlib: {install_hint('plot')}") from None


def _optimal(args: argparse.Namespace) -> int:
    import json

    _require_scipy("optimal", "scipy.sparse.linalg")

    from .analysis.optimal import describe_policy, estimate_solve, solve_optimal
    from .workloads.scenarios import load_scenario

    _check_optimal_flags(args)
    workload = load_scenario(args.scenario).build(
        num_servers=args.k, load=args.load, arrival_rate=args.arrival_rate
    )
    names = [c.name or f"class{i}" for i, c in enumerate(workload.classes)]
    if args.png and len(names) != 2:
        raise ValueError(f"--png: the picture is drawn for two classes, {workload.name} has {len(names)}")
    # the cost from the state count, before anything is built: refuse at once what would take hours
    estimate = estimate_solve(workload, max_states=args.max_states)
    if estimate.states > args.max_states:
        raise ValueError(
            f"--max-states {args.max_states}: the first chain already has more states (buffers "
            f"{list(estimate.buffers)}); the system is too large (or too heavily loaded) for the exact "
            "solver (max_states)"
        )
    if estimate.seconds > 60 * args.max_minutes:
        raise ValueError(
            f"--max-minutes {args.max_minutes:g}: {estimate.describe()}; raise --max-minutes to solve it"
        )
    started = time.perf_counter()

    def progress(message: str) -> None:
        # a solve takes seconds to tens of minutes: say where it is
        print(
            f"msj-gym optimal [{time.perf_counter() - started:7.1f} s] {message}", file=sys.stderr, flush=True
        )

    if not args.quiet:
        progress(estimate.describe())
    sol = solve_optimal(
        workload,
        preemptive=args.preemptive,
        blocking_target=args.blocking,
        max_states=args.max_states,
        log=None if args.quiet else progress,
    )
    from .analysis.solutions import remember_solution

    # mdp-optimal and the leaderboard then use this solve, also beyond their own state limit; and a
    # picture that cannot be written below does not lose it
    remember_solution(workload, sol, args.blocking)
    heuristics = _heuristics_beside(args, workload, sol)
    words = describe_policy(sol, names)
    if args.json:
        out = {
            **sol.to_dict(),
            "scenario": workload.name,
            "load": workload.load,
            "arrival_rate": workload.arrival_rate,
            "heuristics": {pid: v.to_dict() for pid, v in heuristics.items()},
            "structure": words,
        }
        print(json.dumps(out, indent=2), flush=True)
    else:
        _print_optimum(args, workload, sol, heuristics, words)
    return _write_policy_png(args, sol, names) if args.png else 0


def _heuristics_beside(args: argparse.Namespace, workload: Workload, sol: Any) -> dict[str, Any]:
    """The exact values of the heuristics of the solve's kind (preemptive or not), by policy id."""
    from .analysis.optimal import HEURISTICS, evaluate_heuristic

    heuristics = {}
    for pid, (preemptive, _order) in HEURISTICS.items():
        if preemptive == args.preemptive:
            # an unstable heuristic would grow its chain to the limit: a tenth is enough to say so
            heuristics[pid] = evaluate_heuristic(
                workload,
                pid,
                blocking_target=args.blocking,
                max_states=min(args.max_states, max(10 * sol.value.states, 200_000)),
            )
    return heuristics


def _write_policy_png(args: argparse.Namespace, sol: Any, names: list[str]) -> int:
    """``--png``: the optimal policy's picture; exit code 1 if it cannot be written."""
    from .analysis.optimal import plot_policy

    try:
        plot_policy(sol, args.png, names)
    except OSError as exc:  # the results are printed and the solve cached: only the picture is lost
        from .atomic import os_error_line

        print(
            f"msj-gym: error: --png: {os_error_line(exc)}; the solve is kept (printed above, and in "
            "the cache mdp-optimal reads)",
            file=sys.stderr,
        )
        return 1
    if not args.json:
        print(f"wrote {args.png}")
    return 0


def _print_optimum(
    args: argparse.Namespace, workload: Workload, sol: Any, heuristics: dict, words: list
) -> None:
    """The text report of ``msj-gym optimal``."""
    kind = "preemptive" if args.preemptive else "non-preemptive"
    v = sol.value
    print(
        f"scenario {workload.name}  k={workload.num_servers}  load={workload.load:.6g}  "
        f"lambda={workload.arrival_rate:.6g}  {kind}"
    )
    print(
        f"optimal mean response time  {v.mean_response_time:.6f}   (mean jobs {v.mean_jobs:.6f}; "
        f"{v.states} states, buffers {list(v.buffers)}, blocked <= {v.max_blocked:.1e}; "
        f"{sol.iterations} policy iterations, {sol.seconds:.1f} s)"
    )
    if sol.lost_arrivals_charged:
        print(
            "  lost arrivals charged the buffers' content: without the charge the truncated problem "
            "profits from losing arrivals"
        )
    if sol.buffer_check:
        print(
            f"  buffers {sol.buffer_check['buffers']}: {sol.buffer_check['mean_response_time']:.6f} "
            f"(relative change {sol.buffer_check['relative_change']:.1e})"
        )
    for pid, hv in heuristics.items():
        note = ""
        if hv.max_blocked > args.blocking:
            note = f"   blocked {hv.max_blocked:.1e}: unstable, or its tail exceeds the chain (a lower bound)"
        ratio = hv.mean_response_time / v.mean_response_time
        print(f"{pid:<22} {hv.mean_response_time:.6f}   ({ratio:.3f}x the optimum){note}")
    print("structure:")
    for line in words:
        print(f"  {line}")
    sys.stdout.flush()


def _one_line(exc: BaseException) -> str:
    """An error message on one line (a message quoting a file's text may hold line breaks)."""
    return " ".join(str(exc).split()) or type(exc).__name__


def main(argv: Sequence[str] | None = None) -> int:
    from .arguments import UsageError

    try:
        args = _parser().parse_args(argv)
    except UsageError as exc:  # an unknown flag, a value of the wrong type, a missing one
        print(f"msj-gym: error: {_one_line(exc)}", file=sys.stderr)
        return 2
    try:
        if args.command == "simulate":
            return _simulate(args)
        if args.command in ("reproduce", "figure"):
            return _figure(args)
        if args.command == "leaderboard":
            return _leaderboard(args)
        if args.command == "benchmark":
            return _benchmark(args)
        if args.command == "sequences":
            return _sequences(args)
        if args.command == "optimal":
            return _optimal(args)
        if args.command == "render":
            return _render(args)
        if args.command == "score":
            return _score(args)
        return _list(args.model)
    except ValueError as exc:
        print(f"msj-gym: error: {_one_line(exc)}", file=sys.stderr)
        return 2
    except OSError as exc:  # a full disk, a folder made read-only meanwhile: what the OS said, in one line
        from .atomic import os_error_line

        line = os_error_line(exc)
        if args.command in ("leaderboard", "benchmark", "reproduce", "figure"):
            line += f"; the finished runs are kept in {args.out}/runs.jsonl: rerun the same command to resume"
        print(f"msj-gym: error: {line}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        if args.command in ("leaderboard", "benchmark", "reproduce", "figure"):
            print(
                "\nmsj-gym: interrupted; the finished runs are kept in "
                f"{args.out}/runs.jsonl: rerun the same command to resume",
                file=sys.stderr,
            )
        return 130
    except Exception as exc:
        from .core.simulator import SimulationError

        if isinstance(exc, SimulationError):
            print(f"msj-gym: simulation failed: {exc}", file=sys.stderr)
            return 1
        raise


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
