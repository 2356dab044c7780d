"""Rank a trained agent against every baseline its environment allows on held-out seeds (the
non-preemptive ones for ``MSJ-v0``, every one for ``MSJPreemptive-v0``).

    python -m msj_gym.agents.evaluate maskable-ppo-sf-fig2-0.7.zip \\
        --seeds 1000-1019 --arrivals 20000 --out maskable-ppo-sf-fig2-0.7-eval.jsonl

The agent runs through the environment it was trained on (keywords from the checkpoint's ``.json``),
the baselines natively (their run through the env is identical, see ``PolicyAgent``); every policy sees
the same job streams for a seed (common random numbers). For each policy: the mean over seeds of the
per-seed mean response time with a Student-t 95 % CI, and the paired difference to the agent. A policy
that is unstable on some seed is ranked after the stable ones and marked: its finite-run mean is not a
steady-state value. Rules outside the registry are ranked too: ``--also module:attr`` (repeatable),
and the base the agent was learned from when it is one (``msj_gym.agents.improve --base module:attr``, e.g.
the size-aware ``msj_gym.agents.rules:LsfShortest``). Per-seed results are appended to ``--out`` as they
finish (JSON lines) with a stamp of the checkpoint and the code; a rerun with the same ``--out``
skips what is there, and refuses a file whose stamp differs.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import numpy as np

if TYPE_CHECKING:
    from msj_gym.core import Policy
    from msj_gym.env.msj_env import MSJEnv


def parse_seeds(text: str) -> list[int]:
    """``"1000-1019"`` or ``"1,2,5"``."""
    try:
        if "-" in text:
            lo, hi = (int(x) for x in text.split("-", 1))
            seeds = list(range(lo, hi + 1))
        else:
            seeds = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise ValueError(f"--seeds: expected 'LO-HI' or a comma-separated list, got {text!r}") from None
    if not seeds or min(seeds) < 0:
        raise ValueError(f"--seeds: expected non-negative seeds, got {text!r}")
    if len(seeds) > 10_000 or max(seeds) >= 2**63:
        raise ValueError(f"--seeds {text!r}: expected at most 10000 seeds below 2**63")
    return seeds


def load_agent(path: Path) -> tuple[Any, dict[str, Any]]:
    """The loaded agent (an :class:`~msj_gym.experiments.agents.AgentSpec`: an SB3 model, or a factory
    of agents for a checkpoint of another algorithm) and its training metadata (see
    :mod:`msj_gym.experiments.agents`)."""
    from msj_gym.experiments.agents import load_agent as load

    loaded = load(str(path))
    meta_path = path.with_suffix(".json")
    meta = json.loads(meta_path.read_text()) if meta_path.exists() else {"algo": "sb3"}
    meta.update(env_id=loaded.env_id, env_kwargs=loaded.env_kwargs)
    return loaded, meta


def code_stamp(*files: Path) -> str:
    """The key of what an agent's data or results come from: the simulator's code (core, workloads,
    metrics), the environments, the baselines and ``files`` (the runs' own key function,
    :func:`msj_gym.experiments.runner.files_key`)."""
    import msj_gym.baselines
    import msj_gym.env
    from msj_gym.experiments.runner import files_key

    packages = [Path(init).parent for init in (msj_gym.baselines.__file__, msj_gym.env.__file__)]
    sources = [str(f) for folder in packages for f in folder.glob("*.py")]
    return files_key([*sources, *(str(Path(f).resolve()) for f in files)], simulator=True)


def run_stamp(checkpoint: Path) -> str:
    """What every row of an evaluation depends on besides its policy and seed: the checkpoint's bytes,
    the simulator's code, the environments, the baselines and ``msj_gym.agents.rules`` (a hash)."""
    from msj_gym.agents import rules

    return code_stamp(Path(checkpoint), Path(rules.__file__))


def _resumed_rows(out: Path, arrivals: int, warmup: int, stamp: str) -> list[dict[str, Any]]:
    """The rows an earlier run of the same evaluation (the same ``stamp``, ``arrivals`` and ``warmup``)
    wrote to ``out``; a row cut short by a killed run is cut from the file, and that run redone."""
    text = out.read_text()
    if text and not text.endswith("\n"):
        text = text[: text.rfind("\n") + 1]
        with out.open("r+") as fh:
            fh.truncate(len(text.encode()))
    rows = []
    for n, line in enumerate(text.splitlines(), 1):
        if line.strip():
            try:
                row = json.loads(line)
                row["arrivals"], row["warmup"], row["policy"], row["seed"]
            except (ValueError, KeyError, TypeError):
                raise ValueError(
                    f"--out {str(out)!r}: line {n} is not a result row; give a new --out"
                ) from None
            if row["arrivals"] != arrivals or row["warmup"] != warmup:
                raise ValueError(f"--out {str(out)!r} holds runs with other --arrivals/--warmup")
            if row.get("stamp") != stamp:  # a result is never reused for an input that changed
                raise ValueError(
                    f"--out {str(out)!r} holds runs made from another checkpoint or code "
                    f"(stamp {row.get('stamp')!r}, now {stamp!r}); give a new --out"
                )
            rows.append(row)
    return rows


def _append_row(out: Path, row: dict[str, Any]) -> None:
    """``row`` appended to ``out`` as its run finishes: an interrupted evaluation loses nothing."""
    try:
        with out.open("a") as fh:
            fh.write(json.dumps(row) + "\n")
    except OSError as exc:  # a full disk: the torn row is dropped, and rerun, on resume
        from msj_gym.atomic import OutputError

        raise OutputError(exc.errno or 5, exc.strerror or str(exc), str(out)) from None


def _rules_beside(checkpoint: Path, meta: dict[str, Any], also: tuple[str, ...]) -> dict[str, Policy]:
    """Rules outside the registry ranked beside the agent, by policy id: ``--also``, and the base the
    agent was learned from if it is one (imported only as :mod:`msj_gym.trust` allows)."""
    from msj_gym.registry import policy_from_spec
    from msj_gym.trust import check_imports

    base = meta.get("base")
    check_imports(f"checkpoint {str(checkpoint)!r}: its .json", "base", base)  # imported to be ranked
    extra: dict[str, Policy] = {}
    for spec in (*also, *([base] if isinstance(base, str) and ":" in base else [])):
        policy = policy_from_spec(spec, "--also")
        extra.setdefault(policy.policy_id, policy)
    return extra


def evaluate(
    checkpoint: Path,
    seeds: list[int],
    arrivals: int,
    warmup: int,
    out: Path | None,
    label: str,
    also: tuple[str, ...] = (),
) -> list[dict[str, Any]]:
    """The agent in ``checkpoint`` (as ``label``) and every baseline its env allows on its workload
    (with ``also``), each run on every seed of ``seeds`` for ``arrivals`` arrivals after ``warmup``:
    one row per run, appended to ``out`` as it finishes (a rerun resumes from the rows there)."""
    import gymnasium as gym

    from msj_gym import Simulator, rollout
    from msj_gym.baselines import POLICIES, make_policy, non_preemptive, supports

    loaded, meta = load_agent(checkpoint)
    env_kwargs = dict(meta.get("env_kwargs", {}))
    env_kwargs.update(num_arrivals=arrivals, warmup=warmup)
    if env_kwargs.get("max_arrivals") is None:  # held to the cap of the heuristics' runs beside it
        from msj_gym.env.msj_env import heuristic_cap

        env_kwargs["max_arrivals"] = heuristic_cap(env_kwargs, arrivals)
    env = gym.make(meta.get("env_id", "MSJ-v0"), **env_kwargs)
    try:  # an agent that cannot act on this env's workload is refused before any run
        loaded.agent_for(env)
    except ValueError as exc:
        raise ValueError(f"checkpoint {str(checkpoint)!r}: {' '.join(str(exc).split())}") from None
    # what is read here is an MSJ env's (MSJ-v0, MSJPreemptive-v0): the envs of the baselines' model
    msj_env = cast("MSJEnv", env.unwrapped)
    workload = msj_env.workload
    stamp = run_stamp(checkpoint)
    rows = _resumed_rows(out, arrivals, warmup, stamp) if out is not None and out.exists() else []
    done = {(row["policy"], row["seed"]) for row in rows}
    # every baseline the env allows that is defined on this workload (MSFQ, e.g., needs a one-or-all
    # one); an agent that may preempt meets the preemptive policies too
    pool = list(POLICIES) if msj_env.preemptive else non_preemptive()
    policies = [label, *(p for p in pool if supports(p, workload) is None)]
    extra = _rules_beside(checkpoint, meta, also)
    policies += [p for p in extra if p not in policies]
    for seed in seeds:
        for pid in policies:
            if (pid, seed) in done:
                continue
            if pid == label:
                res = rollout(env, loaded.agent_for(env, seed), seed=seed)
            else:
                policy = extra[pid] if pid in extra else make_policy(pid)
                res = Simulator(workload, policy, seed=seed, num_arrivals=arrivals, warmup=warmup).run()
            row = {
                "policy": pid,
                "seed": seed,
                "arrivals": arrivals,
                "warmup": warmup,
                "mean_response_time": res.mean_response_time,
                "weighted_mean_response_time": res.weighted_mean_response_time,
                "stable": bool(res.stable),
                "stamp": stamp,
            }
            rows.append(row)
            if out is not None:
                _append_row(out, row)
    return [r for r in rows if r["seed"] in set(seeds)]


def rank(rows: list[dict[str, Any]], label: str) -> list[dict[str, Any]]:
    from msj_gym.metrics.stats import replication_ci

    by: dict[str, dict[int, dict[str, Any]]] = {}
    for r in rows:
        by.setdefault(r["policy"], {})[r["seed"]] = r
    agent = by[label]
    table: list[dict[str, Any]] = []
    for pid, runs in by.items():
        seeds = sorted(runs)
        est = replication_ci([runs[s]["mean_response_time"] for s in seeds])
        common = [s for s in seeds if s in agent]
        diff = replication_ci(
            [runs[s]["mean_response_time"] - agent[s]["mean_response_time"] for s in common]
        )
        table.append(
            {
                "policy": pid,
                "mean_response_time": est.mean,
                "ci95": est.ci95_half_width,
                "minus_agent": diff.mean if pid != label else 0.0,
                "minus_agent_ci95": diff.ci95_half_width if pid != label else 0.0,
                "stable": all(runs[s]["stable"] for s in seeds),
                "seeds": len(seeds),
            }
        )
    table.sort(
        key=lambda t: (
            not t["stable"],
            t["mean_response_time"] if math.isfinite(t["mean_response_time"]) else math.inf,
        )
    )
    for i, t in enumerate(table, 1):
        t["rank"] = i
    return table


def format_table(table: list[dict[str, Any]], label: str) -> str:
    lines = [
        "| rank | policy | mean response time ± 95% CI | minus agent (paired) ± 95% CI | stable |",
        "|---:|---|---:|---:|:---:|",
    ]
    for t in table:
        name = f"**{t['policy']}**" if t["policy"] == label else t["policy"]
        diff = "" if t["policy"] == label else f"{t['minus_agent']:+.3f} ± {t['minus_agent_ci95']:.3f}"
        mean = f"{t['mean_response_time']:.3f} ± {t['ci95']:.3f}" if math.isfinite(t["ci95"]) else "n/a"
        lines.append(f"| {t['rank']} | {name} | {mean} | {diff} | {'yes' if t['stable'] else 'NO'} |")
    return "\n".join(lines)


PROG = "python -m msj_gym.agents.evaluate"


def main(argv: list[str] | None = None) -> list[dict[str, Any]]:
    from msj_gym.agents._cli import ArgumentParser

    ap = ArgumentParser(prog=PROG, description=" ".join(__doc__.split("\n\n")[0].split()))
    ap.add_argument("checkpoint", type=Path)
    ap.add_argument("--seeds", default="1000-1019", help="held-out seeds: 'LO-HI' or a list")
    ap.add_argument("--arrivals", type=int, default=20_000, help="arrivals per run")
    ap.add_argument("--warmup", type=int, default=None, help="default: arrivals // 10")
    ap.add_argument("--label", default=None, help="the agent's name in the table (default: agent:<stem>)")
    ap.add_argument("--out", type=Path, default=None, help="JSON lines of per-seed results (resumable)")
    ap.add_argument(
        "--also",
        action="append",
        default=[],
        metavar="SPEC",
        help="one more policy to rank: module:attr naming a Policy (repeatable; a base of that form is"
        " ranked anyway)",
    )
    ap.add_argument(
        "--trust-pickle",
        action="store_true",
        help="load a checkpoint in stable-baselines3's own format, whose pickles can run any code (only a "
        "file you trust)",
    )
    ap.add_argument(
        "--trust-imports",
        action="store_true",
        help="let the checkpoint's .json import the module:attr it names (a base or an advisor outside "
        "the registry and msj_gym)",
    )
    args = ap.parse_args(argv)
    from msj_gym.trust import IMPORTS, PICKLE, trusting

    with trusting([k for k, on in ((PICKLE, args.trust_pickle), (IMPORTS, args.trust_imports)) if on]):
        return _main(args)


def _main(args: Any) -> list[dict[str, Any]]:
    from msj_gym.agents._cli import check_count, check_output

    seeds = parse_seeds(args.seeds)
    # a run shorter than this measures next to nothing (the leaderboard's floor too)
    check_count("--arrivals", args.arrivals, 100, 10**9)
    if args.warmup is not None:
        check_count("--warmup", args.warmup, 0, args.arrivals - 2)
    check_output("--out", args.out)
    if not args.checkpoint.exists():
        from msj_gym.experiments.agents import shipped_agents

        # a shipped agent's name; anything else fails in load_agent with its one-line reason
        args.checkpoint = shipped_agents().get(str(args.checkpoint), args.checkpoint)
    warmup = args.warmup if args.warmup is not None else args.arrivals // 10
    _, meta = load_agent(args.checkpoint)  # a checkpoint that does not load fails here, before any run
    if meta["env_id"] not in ("MSJ-v0", "MSJPreemptive-v0"):
        # this script replays the MSJ queue; the other models' agents run in their model's leaderboard
        raise ValueError(
            f"checkpoint {str(args.checkpoint)!r}: an agent of {meta['env_id']}; this script evaluates "
            "MSJ-v0 and MSJPreemptive-v0 agents (rank it with msj-gym leaderboard --scenario SYSTEM "
            "--agent ...)"
        )
    from msj_gym.registry import policy_from_spec

    for spec in args.also:
        policy_from_spec(spec, "--also")  # likewise
    label = args.label or f"agent:{args.checkpoint.stem}"
    rows = evaluate(args.checkpoint, seeds, args.arrivals, warmup, args.out, label, tuple(args.also))
    table = rank(rows, label)
    print(f"{len(seeds)} held-out seeds, {args.arrivals} arrivals each ({warmup} warm-up)")
    print(format_table(table, label))
    return table


if __name__ == "__main__":
    import sys

    from msj_gym.agents._cli import run_script

    np.seterr(all="ignore")
    sys.exit(run_script(PROG, main))
