"""The generalists on systems and loads they never trained on (``docs/generalist.md``):
each agent's mean response time as a paired ratio to the best heuristic
of its kind that is stable on every seed, per point, and the mean over the points that have one:

    python benchmarks/generalist_off_distribution.py [--workers 2] [--seeds 9000-9009]

The kind: a size-oblivious agent is compared with the size-oblivious heuristics, a size-aware one with
every heuristic (EASY backfilling included); the exact optima are not heuristics. The intervals are
95 % t-intervals over the seeds of the per-seed ratios. Every point is a leaderboard
(``msj-gym leaderboard --policies non-preemptive --agent ...``) kept in ``--out``/POINT, so a run
resumes where it stopped. A point with another k is the built-in scenario with ``num_servers``
changed, written as a JSON scenario file beside its leaderboard. ``--point SCENARIO:LOAD[:K]`` adds points
of your own (a built-in scenario or a scenario file).
"""

from __future__ import annotations

import argparse
import json
import math
import time
import tomllib
from importlib import resources
from pathlib import Path

import numpy as np

from msj_gym.arguments import ArgumentParser
from msj_gym.atomic import atomic_write_text
from msj_gym.experiments.agents import load_agent
from msj_gym.experiments.benchmark import EXCLUDED
from msj_gym.experiments.leaderboard import LeaderboardConfig, plan, run_leaderboard
from msj_gym.metrics.stats import replication_ci
from msj_gym.workloads.scenarios import load_scenario

# (label, built-in scenario, num_servers (None: its own), load, arrivals per run, what lies outside
# the training distribution)
POINTS = (
    ("sf-fig2-0.6", "sf-fig2", None, 0.6, 20_000, "its load"),
    ("sf-fig2-0.8", "sf-fig2", None, 0.8, 20_000, "its load"),
    ("one-or-all-0.6", "one-or-all", None, 0.6, 20_000, "its load"),
    ("one-or-all-0.8", "one-or-all", None, 0.8, 20_000, "its load"),
    ("bs-fig1-k32-0.876", "bs-fig1", 32, 0.876, 10_000, "durations 40 times apart"),
    ("one-or-all-k512-0.8", "one-or-all", 512, 0.8, 10_000, "k above 256"),
    ("borg-cellb-0.8", "borg-cellb", None, 0.8, 10_000, "26 classes on 2,048 servers"),
    ("kit-fh2-0.6", "kit-fh2", None, 0.6, 10_000, "k = 512, an HPC log's classes, lognormal"),
    ("kit-fh2-0.85", "kit-fh2", None, 0.85, 10_000, "k = 512, an HPC log's classes, lognormal"),
    ("sdsc-sp2-0.6", "sdsc-sp2", None, 0.6, 10_000, "k = 512, an HPC log's classes, lognormal"),
    ("sdsc-sp2-0.85", "sdsc-sp2", None, 0.85, 10_000, "k = 512, an HPC log's classes, lognormal"),
)


def scenario_copy(name: str, num_servers: int, load: float) -> tuple[str, str]:
    """The file name and JSON text of scenario ``name`` (built-in, or a ``.toml`` file) with
    ``num_servers`` changed, checked by building it at ``load`` (nothing is written here)."""
    own = Path(name)
    if own.suffix == ".toml" and own.is_file():
        text, stem = own.read_text(encoding="utf-8"), own.stem
    else:
        builtin = resources.files("msj_gym.workloads") / "scenarios" / f"{name}.toml"
        if not builtin.is_file():
            raise ValueError(f"--point: another k needs a built-in scenario or a .toml file, got {name!r}")
        text, stem = builtin.read_text(encoding="utf-8"), name
    try:
        data = tomllib.loads(text)
        data["num_servers"] = num_servers
        data["name"] = f"{data.get('name', stem)}-k{num_servers}"
        load_scenario(data).build(load=load)
    except (ValueError, tomllib.TOMLDecodeError) as exc:
        raise ValueError(
            f"--point: {stem} with num_servers = {num_servers} at load {load:g}: {exc}"
        ) from None
    return f"{stem}-k{num_servers}.json", json.dumps(data, indent=2) + "\n"


def ratios(
    runs: list[dict], agent: str, agent_aware: bool, aware: dict[str, bool]
) -> tuple[str, np.ndarray, bool] | None:
    """The paired per-seed ratios of the runs of series ``agent`` to the best heuristic of its kind
    stable on every seed (its label, the ratios, whether the agent is stable on every seed), or None
    without one. ``aware``: whether each heuristic (by its series label) reads job sizes."""
    by: dict[str, dict[int, tuple[float, bool]]] = {}
    for r in runs:
        by.setdefault(r["series"], {})[r["seed"]] = (r["mean_response_time"], bool(r["stable"]))
    seeds = sorted(by[agent])
    best: tuple[float, str] | None = None
    for label, got in by.items():
        if label not in aware or label in EXCLUDED or (aware[label] and not agent_aware):
            continue
        if sorted(got) == seeds and all(got[s][1] for s in seeds):
            mean = float(np.mean([got[s][0] for s in seeds]))
            if best is None or mean < best[0]:
                best = (mean, label)
    if best is None:
        return None
    ref = by[best[1]]
    r = np.array([by[agent][s][0] / ref[s][0] for s in seeds])
    return best[1], r, all(by[agent][s][1] for s in seeds)


def parse_point(text: str) -> tuple[str, str, int | None, float, int, str]:
    """A point of ``--point SCENARIO:LOAD[:K]`` (a built-in scenario or a scenario file, the load, and
    optionally another number of servers), as a row of :data:`POINTS`."""
    parts = text.rsplit(":", 2) if text.count(":") >= 2 else text.rsplit(":", 1)
    if len(parts) < 2 or not parts[0]:
        raise ValueError(f"--point: expected SCENARIO:LOAD or SCENARIO:LOAD:K, got {text!r}")
    try:
        load = float(parts[1])
        k = int(parts[2]) if len(parts) == 3 else None
    except ValueError:
        raise ValueError(f"--point: expected SCENARIO:LOAD or SCENARIO:LOAD:K, got {text!r}") from None
    # at a load of 1 or more no policy is stable, so the point could have no reference to compare with
    if not (math.isfinite(load) and 0 < load < 1) or (k is not None and k < 1):
        raise ValueError(f"--point: expected a load in (0, 1) and a positive k, got {text!r}")
    stem = Path(parts[0]).stem if parts[0].endswith(".toml") else parts[0]
    label = f"{stem}{'' if k is None else f'-k{k}'}-{load:g}"
    return label, parts[0], k, load, 20_000, "given with --point"


def main(argv: list[str] | None = None) -> int:
    ap = ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--agent", action="append", default=None, help="repeatable (default: both generalists)")
    ap.add_argument("--seeds", default="9000-9009")
    ap.add_argument(
        "--points", default=None, help="comma-separated labels (default: all of them, or none with --point)"
    )
    ap.add_argument(
        "--point",
        action="append",
        default=[],
        help="a point of your own, SCENARIO:LOAD or SCENARIO:LOAD:K (another k; 20,000 arrivals; repeatable)",
    )
    ap.add_argument("--arrivals", type=int, default=None, help="every point's arrivals (default: its own)")
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--out", type=Path, default=Path("off-distribution"))
    args = ap.parse_args(argv)
    agents = tuple(args.agent or ("generalist", "generalist-sizes"))
    known = {p[0]: p for p in POINTS}
    if args.points is None:
        args.points = "" if args.point else ",".join(known)
    chosen = [x.strip() for x in args.points.split(",") if x.strip()]
    unknown = [x for x in chosen if x not in known]
    if unknown or not (chosen or args.point):
        ap.error(f"--points: expected labels among {', '.join(known)}, got {args.points!r}")
    if args.workers < 1:
        ap.error(f"--workers: expected a positive integer, got {args.workers}")
    points = [known[x] for x in chosen] + [parse_point(x) for x in args.point]

    def config(spec: str, load: float, arrivals: int) -> LeaderboardConfig:
        return LeaderboardConfig(
            scenarios=(spec,),
            loads=(load,),
            policies=("non-preemptive",),
            agents=agents,
            seeds=args.seeds,
            arrivals=args.arrivals if args.arrivals is not None else arrivals,
        )

    # every input checked before anything is written or run: the agents, the run settings and each
    # point's scenario at its load (with another k: the copy that will be written)
    for agent in agents:
        load_agent(agent)
    copies = {}
    for label, name, k, load, arrivals, _ in points:
        config(name, load, arrivals)
        if k is None:
            try:
                load_scenario(name).build(load=load)
            except ValueError as exc:
                raise ValueError(f"--point: {name!r} at load {load:g}: {exc}") from None
        else:
            copies[label] = scenario_copy(name, k, load)
    resolved = []
    for label, name, _, load, arrivals, outside in points:
        spec = name
        if label in copies:
            file, text = copies[label]
            path = args.out / label / file
            path.parent.mkdir(parents=True, exist_ok=True)
            if not path.is_file() or path.read_text(encoding="utf-8") != text:
                atomic_write_text(path, text)
            spec = str(path)
        point = config(spec, load, arrivals)
        planned = plan(point, args.workers).entrants
        resolved.append((label, outside, point, planned[spec]))
    started = time.perf_counter()
    table: dict[str, list[float]] = {a: [] for a in agents}
    lines = ["| point | outside the training distribution by | " + " | ".join(agents) + " |"]
    lines.append("|---|---|" + "---|" * len(agents))
    for label, outside, config, entrants in resolved:
        aware = {e.label: e.size_aware for e in entrants if e.agent is None}
        run_leaderboard(config, args.out / label, workers=args.workers, progress=True)
        runs = [
            json.loads(x) for x in (args.out / label / "runs.jsonl").read_text().splitlines() if x.strip()
        ]
        cells = []
        for agent in agents:
            entrant = next(e for e in entrants if e.agent == agent)
            got = ratios(runs, entrant.label, entrant.size_aware, aware)
            if got is None:
                flagged = sum(not r["stable"] for r in runs if r["series"] == entrant.label)
                cells.append(
                    f"no stable reference (the agent flagged on {flagged} of {len(config.seeds)} seeds)"
                )
                continue
            ref, r, stable = got
            est = replication_ci(r)  # the leaderboard's own paired interval
            cells.append(
                f"{est.mean:.3f} ± {est.ci95_half_width:.3f} ({ref}){'' if stable else ', UNSTABLE'}"
            )
            table[agent].append(est.mean)
        lines.append(f"| {label} | {outside} | " + " | ".join(cells) + " |")
    print("\n".join(lines))
    for agent, values in table.items():
        mean = f"{np.mean(values):.3f}" if values else "n/a"
        print(f"{agent}: mean ratio {mean} over {len(values)} points with a stable reference")
    print(f"{time.perf_counter() - started:.0f} s")
    return 0


if __name__ == "__main__":
    from msj_gym.agents._cli import run_script

    # a refusal is one line (exit 2), before any run; a full disk or an interruption is one line too
    raise SystemExit(run_script("generalist_off_distribution.py", main))
