"""Plot learning curves (the ``<out stem>-curve.jsonl`` files of ``msj_gym.agents.train --eval-every``)
against the heuristics and the exact optimum, on the curves' own held-out episodes.

    python -m msj_gym.agents.plot_curves ppo-sf-fig2-0.7-seed*-curve.jsonl --out curve.png

Every curve must have been evaluated on the same episodes (systems, seeds, arrivals: the first line of
each file says which). The heuristics (``--policies``, default First-Fit, MSF, Adaptive Quickswap and
EASY backfilling) are simulated natively on exactly those episodes (the same job streams as the
agent's; a tenth of the arrivals as warm-up, as in the curve), and drawn as horizontal lines with their
mean response time over the episodes; on a single system whose exact optimum is solvable (Poisson
arrivals, exponential durations), the optimum of ``msj-gym optimal`` is drawn too, as the long-run
value it is. Each curve is a thin line, their mean a thick one. The values are also printed.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path
from typing import Any

__all__ = ["heuristic_lines", "main", "plot_curves"]

PROG = "python -m msj_gym.agents.plot_curves"
DEFAULT_POLICIES = ("first-fit", "msf", "adaptive-quickswap", "easy-backfilling")


def _system(meta_system: dict[str, Any]) -> Any:
    """The workload of a curve's system (a scenario with its load and k; a generated system is named
    ``generated-<seed>-<i>`` and rebuilt by the training command's own draw)."""
    from msj_gym.env.msj_env import resolve_workload

    scenario = meta_system["scenario"]
    return resolve_workload(scenario, meta_system.get("num_servers"), meta_system.get("load"), None)


def heuristic_lines(meta: dict[str, Any], policies: list[str], workloads: list[Any]) -> dict[str, float]:
    """Each policy's mean response time over the curve's episodes (``inf`` where a run is unstable;
    policies not defined on some system are left out)."""
    import numpy as np

    from msj_gym import Simulator
    from msj_gym.registry import make_policy, supports

    arrivals = int(meta["eval_arrivals"])
    out: dict[str, float] = {}
    for policy_id in policies:
        values: list[float] = []
        for workload in workloads:
            policy = make_policy(policy_id)
            if supports(policy, workload) is not None:
                values = []
                break
            for seed in meta["eval_seeds"]:
                result = Simulator(
                    workload, make_policy(policy_id), seed=seed, num_arrivals=arrivals, warmup=arrivals // 10
                ).run()
                values.append(result.mean_response_time if result.stable else math.inf)
        if values:
            out[policy_id] = float(np.mean(values))
    return out


def exact_optimum(workloads: list[Any]) -> float | None:
    """The exact non-preemptive optimum of a single solvable system (None otherwise)."""
    if len(workloads) != 1:
        return None
    from msj_gym.analysis.solutions import solved_table

    try:
        return float(solved_table(workloads[0], False)["value"]["mean_response_time"])
    except ValueError:
        return None


def plot_curves(
    curves: list[Path], out: Path, policies: list[str], title: str | None = None
) -> dict[str, Any]:
    """Draw ``curves`` with the heuristics and the optimum to ``out`` (a PNG); returns what was drawn."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    from msj_gym.agents.learning_curve import read_curve

    read = [read_curve(path) for path in curves]
    meta = read[0][0]
    for path, (other, _) in zip(curves, read, strict=True):
        same = all(other.get(k) == meta.get(k) for k in ("systems", "eval_seeds", "eval_arrivals"))
        if not same:
            raise ValueError(f"{str(path)!r}: evaluated on other episodes than {str(curves[0])!r}")
    if any(
        isinstance(s.get("scenario"), str) and s["scenario"].startswith("generated") for s in meta["systems"]
    ):
        workloads = _generated(meta)
    else:
        workloads = [_system(s) for s in meta["systems"]]
    lines = heuristic_lines(meta, policies, workloads)
    optimum = exact_optimum(workloads)

    fig, ax = plt.subplots(figsize=(7.5, 4.5))
    finite = []
    steps_grid = sorted({p["steps"] for _, points in read for p in points})
    for m, points in read:
        xs = [p["steps"] for p in points]
        ys = [p["mean_response_time"] for p in points]
        finite += [y for y in ys if math.isfinite(y)]
        ax.plot(xs, [y if math.isfinite(y) else np.nan for y in ys], lw=0.8, alpha=0.6,
                label=f"seed {m.get('seed')}")  # fmt: skip
    mean_curve = []
    for s in steps_grid:
        at = [p["mean_response_time"] for _, pts in read for p in pts if p["steps"] == s]
        mean_curve.append(
            float(np.mean(at)) if len(at) == len(read) and all(map(math.isfinite, at)) else np.nan
        )
    ax.plot(steps_grid, mean_curve, lw=2.2, color="black", label=f"mean of {len(read)} seeds")
    colours = ["tab:red", "tab:orange", "tab:purple", "tab:brown", "tab:pink"]
    for (name, value), colour in zip(sorted(lines.items(), key=lambda kv: kv[1]), colours, strict=False):
        if math.isfinite(value):
            ax.axhline(value, ls="--", lw=1, color=colour, label=f"{name} {value:.3f}")
            finite.append(value)
    if optimum is not None:
        ax.axhline(optimum, ls=":", lw=1.5, color="tab:green", label=f"exact optimum {optimum:.3f}")
        finite.append(optimum)
    if finite:
        lo, hi = min(finite), max(finite)
        ax.set_ylim(
            lo - 0.1 * (hi - lo) - 0.05, min(hi, 3 * max(lines.values(), default=hi)) + 0.15 * (hi - lo)
        )
    ax.set_xlabel("environment steps")
    ax.set_ylabel("mean response time (held-out seeds)")
    where = ", ".join(_label(s) for s in meta["systems"][:2]) + (" ..." if len(meta["systems"]) > 2 else "")
    ax.set_title(title or f"{meta.get('recipe') or 'PPO'}: {where}, seeds {_seeds(meta['eval_seeds'])}")
    ax.legend(fontsize=7, ncol=2)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return {
        "heuristics": lines,
        "optimum": optimum,
        "final": [pts[-1]["mean_response_time"] for _, pts in read],
    }


def _generated(meta: dict[str, Any]) -> list[Any]:
    """The held-out generated systems of a curve across systems (drawn again from the training seed)."""
    from msj_gym.agents.train import HELD_OUT_SYSTEMS_SEED
    from msj_gym.workloads.generator import sample_systems

    return sample_systems(HELD_OUT_SYSTEMS_SEED + int(meta["seed"]), len(meta["systems"]))


def _label(system: dict[str, Any]) -> str:
    load = system.get("load")
    return f"{system['scenario']}" + (f" at {load:g}" if isinstance(load, int | float) else "")


def _seeds(seeds: list[int]) -> str:
    if seeds == list(range(seeds[0], seeds[0] + len(seeds))):
        return f"{seeds[0]}-{seeds[-1]}"
    return ",".join(map(str, seeds))


def main(argv: list[str] | None = None) -> None:
    from msj_gym.agents._cli import ArgumentParser, check_output

    ap = ArgumentParser(prog=PROG, description=__doc__.splitlines()[0])
    ap.add_argument("curves", nargs="+", type=Path, help="curve files (<out stem>-curve.jsonl)")
    ap.add_argument("--out", type=Path, required=True, help="the picture (.png)")
    ap.add_argument(
        "--policies",
        default=",".join(DEFAULT_POLICIES),
        help="comma-separated heuristics drawn as lines (default: %(default)s)",
    )
    ap.add_argument(
        "--title", default=None, help="the picture's title (default: the recipe, the system and the seeds)"
    )
    args = ap.parse_args(argv)
    check_output("--out", args.out, ".png")
    for path in args.curves:
        if not path.is_file():
            ap.error(f"curve {str(path)!r}: no such file")
    from msj_gym.registry import make_policy

    policies = [p.strip() for p in args.policies.split(",") if p.strip()]
    for policy in policies:
        try:
            make_policy(policy)
        except (KeyError, ValueError):
            ap.error(f"--policies: unknown policy {policy!r}")
    drawn = plot_curves(args.curves, args.out, policies, args.title)
    for name, value in sorted(drawn["heuristics"].items(), key=lambda kv: kv[1]):
        print(f"{name:<22} {value:.3f}")
    if drawn["optimum"] is not None:
        print(f"{'exact optimum':<22} {drawn['optimum']:.4f}")
    finals = drawn["final"]
    print("final points: " + ", ".join(f"{v:.3f}" for v in finals))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    from msj_gym.agents._cli import run_script

    sys.exit(run_script(PROG, main))
