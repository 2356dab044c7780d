"""SWF logs as scenarios (``swf:FILE``): the cleaning rules on a hand-made log, the machine's k from
the header, requested times carried into the simulator (EASY driven by them), bad logs, and the
Parallel Workloads Archive logs of ../shared/data (skipped when absent)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from msj_gym import Simulator
from msj_gym.baselines import make_policy
from msj_gym.cli import main
from msj_gym.workloads.scenarios import load_scenario
from msj_gym.workloads.swf import swf_replay, swf_source

TRACES = Path(__file__).resolve().parents[3] / "shared" / "data" / "traces"

HEADER = "; Version: 2.2\n; Computer: test machine\n; MaxNodes: 4\n; MaxProcs: 4\n"


def _swf(tmp_path: Path, rows: list[str], header: str = HEADER, name: str = "log.swf") -> Path:
    path = tmp_path / name
    path.write_text(header + "\n".join(rows) + "\n")
    return path


def _row(
    job: int, submit: float, run: float, alloc: int, req_procs: int, req_time: float, status: int = 1
) -> str:
    # job, submit, wait, run, allocated, cpu, memory, requested processors, requested time, ..., status, ...
    return f"{job} {submit:g} -1 {run:g} {alloc} -1 -1 {req_procs} {req_time:g} -1 {status} 1 1 -1 1 -1 -1 -1"


# One job per cleaning rule, and the jobs that are kept (k = 4 from the header).
CLEANING_ROWS = [
    _row(1, 0, 100, 2, 2, 200),  # kept
    _row(2, -1, 50, 1, 1, 60),  # missing submit time
    _row(3, 10, -1, 1, 1, 60),  # missing run time
    _row(4, 20, 0, 1, 1, 60),  # zero run time
    _row(5, 30, 50, -1, -1, 60),  # no processor count
    _row(6, 40, 50, 8, 8, 60),  # more processors than k
    _row(7, 50, 30, 3, -1, -1),  # kept: allocated stands in for the request, the run time for the time
    _row(8, 60, 40, 4, 2, 100, status=5),  # kept (cancelled after running): requested 2 < allocated 4
]


def test_the_cleaning_rules_on_a_hand_made_log(tmp_path: Path) -> None:
    wl = load_scenario(f"swf:{_swf(tmp_path, CLEANING_ROWS)}").build()
    assert wl.num_servers == 4  # the header's MaxProcs
    assert wl.arrival_time.tolist() == [0.0, 50.0, 60.0]
    assert wl.server_need_per_job.tolist() == [2, 3, 2]  # need = requested, else allocated
    assert wl.service_time_per_job.tolist() == [100.0, 30.0, 40.0]
    assert wl.requested_time_per_job.tolist() == [200.0, 30.0, 100.0]
    assert wl.meta["cleaning"] == {
        "missing submit time": 1,
        "missing run time": 1,
        "zero run time": 1,
        "no processor count": 1,
        "more processors than k = 4": 1,
        "requested time from the run time": 1,
    }
    assert wl.slowdown_tau == 10.0 and wl.job_attribute_names == ("requested_time",)
    by_alloc = load_scenario(f"swf:{_swf(tmp_path, CLEANING_ROWS)}?need=allocated").build()
    assert by_alloc.server_need_per_job.tolist() == [2, 3, 4]
    assert load_scenario(f"swf:{_swf(tmp_path, CLEANING_ROWS)}?need=max").build().server_need_per_job[-1] == 4
    # RLScheduler's loader: processors the larger count, a missing run time 10 s, no check against k
    with pytest.raises(ValueError, match="num_servers: 4 is below job 6's 8 processors"):
        load_scenario(f"swf:{_swf(tmp_path, CLEANING_ROWS)}?cleaning=rlscheduler").build()
    rl = swf_replay(
        _swf(tmp_path, [r for r in CLEANING_ROWS if not r.startswith("6 ")]), cleaning="rlscheduler"
    )
    assert rl.service_time_per_job.tolist() == [100.0, 10.0, 30.0, 40.0]  # job 3's missing run time: 10 s
    assert rl.server_need_per_job.tolist() == [2, 1, 3, 4]  # the larger of requested and allocated
    assert rl.meta["cleaning"] == {
        "missing submit time": 1,
        "zero run time": 1,
        "no processor count": 1,
        "requested time from the run time": 1,
    }


def test_options_k_load_first_and_tau(tmp_path: Path) -> None:
    path = _swf(tmp_path, CLEANING_ROWS)
    wl = load_scenario(f"swf:{path}?num_servers=16&first=2&tau=60").build()
    assert wl.num_servers == 16 and wl.arrival_time.size == 2 and wl.slowdown_tau == 60.0
    res = Simulator(wl, make_policy("fcfs"), num_arrivals=2, warmup=0).run()
    assert res.slowdown_tau == 60.0
    scaled = load_scenario(f"swf:{path}").build(load=0.5)
    assert scaled.load == pytest.approx(0.5) and scaled.requested_time_per_job.tolist() == [
        200.0,
        30.0,
        100.0,
    ]
    assert load_scenario(f"swf:{path}").build(num_servers=8).num_servers == 8


# k = 4 (hand-made log). A holds 2 processors until 10; H needs all 4 from 1; X (2 processors) arrives at
# 2 and runs 3 s, but its user requested 20: by its run time it would end (5) before H's reservation
# (10), by its request (22) it would not, and no processor is spare at 10.
EASY_ROWS = [_row(1, 0, 10, 2, 2, 10), _row(2, 1, 5, 4, 4, 5), _row(3, 2, 3, 2, 2, 20)]


def test_requested_time_easy_on_a_hand_made_log(tmp_path: Path, capsys) -> None:
    spec = f"swf:{_swf(tmp_path, EASY_ROWS)}"
    wl = load_scenario(spec).build()

    def starts(**params) -> list[float]:
        sim = Simulator(wl, make_policy("easy-backfilling", **params), num_arrivals=3, warmup=0)
        sim.run()
        return sim.records()["first_start"].tolist()

    assert starts(estimates="requested") == [0.0, 10.0, 15.0]  # X waits for H
    assert starts(estimates="exact") == [0.0, 10.0, 2.0]  # X backfilled at once
    # through the command line: responses 10, 14, 16 (requested) and 10, 14, 3 (exact)
    for estimates, mean in (("requested", 40 / 3), ("exact", 27 / 3)):
        argv = ["simulate", "--scenario", spec, "--policy", "easy-backfilling", "--warmup", "0", "--json"]
        assert main([*argv, "--policy-param", f"estimates={estimates}"]) == 0
        out = json.loads(capsys.readouterr().out)
        assert out["mean_response_time"] == pytest.approx(mean)
        assert out["makespan"] == (18.0 if estimates == "requested" else 15.0)


def test_the_binned_replay_of_paper_000_is_the_old_trace_source(tmp_path: Path) -> None:
    rows = [_row(i, 10 * i, 50 + i, 1 + i % 3, 1 + i % 3, 100) for i in range(1, 40)]
    path = _swf(tmp_path, rows, header="; MaxProcs: 8\n")
    old = swf_source(f"swf:{path}", num_servers=8, load=0.5)
    new = load_scenario(f"swf:{path}?binning=round-down&max_need=64").build(num_servers=8, load=0.5)
    for name in ("arrival_time", "server_need_per_job", "service_time_per_job", "job_class"):
        assert np.array_equal(getattr(old, name), getattr(new, name)), name
    assert old.name == new.name and old.load == new.load


BAD = [
    (
        "negative run time",
        [_row(1, 0, -5, 1, 1, 10), _row(2, 1, 5, 1, 1, 10)],
        "",
        ["line 5", "'run_time'", "-5"],
    ),
    (
        "negative request",
        [_row(1, 0, 5, 1, -3, 10), _row(2, 1, 5, 1, 1, 10)],
        "",
        ["'requested_processors'", "-3", "-1 marks a missing value"],
    ),
    ("one usable job", [_row(1, 0, 5, 1, 1, 10), _row(2, 1, -1, 1, 1, 10)], "", ["fewer than 2 usable jobs"]),
    ("unknown option", [_row(1, 0, 5, 1, 1, 10)], "?procs=3", ["unknown option 'procs'"]),
    ("bad need", [_row(1, 0, 5, 1, 1, 10)], "?need=most", ["need expects one of", "'most'"]),
    ("tau 0", [_row(1, 0, 5, 1, 1, 10)], "?tau=0", ["tau expects a positive", "'0'"]),
    ("bad k", [_row(1, 0, 5, 1, 1, 10)], "?num_servers=two", ["num_servers expects an integer", "'two'"]),
]


@pytest.mark.parametrize(("rows", "query", "needles"), [c[1:] for c in BAD], ids=[c[0] for c in BAD])
def test_a_bad_log_is_one_line(rows, query, needles, tmp_path: Path, capsys) -> None:
    spec = f"swf:{_swf(tmp_path, rows)}{query}"
    assert main(["simulate", "--scenario", spec, "--policy", "fcfs"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and all(n in err[0] for n in needles), err


def test_no_k_in_the_header_needs_num_servers(tmp_path: Path, capsys) -> None:
    path = _swf(tmp_path, [_row(1, 0, 5, 1, 1, 10), _row(2, 1, 5, 2, 2, 10)], header="; Version: 2\n")
    assert main(["simulate", "--scenario", f"swf:{path}", "--policy", "fcfs"]) == 2
    assert "no MaxProcs or MaxNodes" in capsys.readouterr().err
    assert (
        main(["simulate", "--scenario", f"swf:{path}", "--policy", "fcfs", "--k", "4", "--warmup", "0"]) == 0
    )
    assert main(["simulate", "--scenario", f"swf:{tmp_path / 'none.swf'}", "--policy", "fcfs"]) == 2
    assert "no such file" in capsys.readouterr().err


def test_a_leaderboard_of_heuristics_on_a_log(tmp_path: Path, capsys) -> None:
    rng = np.random.default_rng(5)
    rows = []
    t = 0.0
    for i in range(1, 301):
        t += float(rng.exponential(20.0))
        run = float(np.ceil(rng.lognormal(3, 1)))
        rows.append(
            _row(
                i,
                round(t),
                run,
                int(rng.choice([1, 2, 4, 8])),
                -1,
                float(np.ceil(run * (1 + 2 * rng.random()))),
            )
        )
    header = "; MaxProcs: 16\n"
    spec = f"swf:{_swf(tmp_path, rows, header=header)}"
    argv = [
        "leaderboard",
        "--scenario",
        spec,
        "--policies",
        "fcfs,sjf,sjf-easy,easy-backfilling",
        "--seeds",
        "1",
    ]
    argv += [
        "--loads",
        "0.7",
        "--metric",
        "mean_bounded_slowdown",
        "--workers",
        "1",
        "--out",
        str(tmp_path / "lb"),
    ]
    argv += ["--policy-param", "easy-backfilling:estimates=requested", "--wide"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "bounded slowdown ± 95% CI" in out and "estimates: requested" in out
    rows_csv = (tmp_path / "lb" / "leaderboard.csv").read_text().splitlines()
    assert (
        len(rows_csv) == 5 and "estimates: requested" in rows_csv[1] + rows_csv[2] + rows_csv[3] + rows_csv[4]
    )
    runs = [json.loads(x) for x in (tmp_path / "lb" / "runs.jsonl").read_text().splitlines()]
    assert {r["num_arrivals"] for r in runs} == {300}  # a trace replays all its jobs
    assert all(r["mean_bounded_slowdown"] >= 1 and math.isfinite(r["response_time_p99"]) for r in runs)


@pytest.mark.skipif(
    not (TRACES / "SDSC-SP2-1998-4.2-cln.swf.gz").exists(), reason="needs ../shared/data/traces"
)
def test_sdsc_sp2_replay() -> None:
    wl = load_scenario("swf:SDSC-SP2-1998-4.2-cln.swf.gz").build()
    # 59,715 records: 5,671 never ran (no run time), 10 ran for 0 s; 35 lack a requested time
    assert wl.num_servers == 128 and wl.arrival_time.size == 59_715 - 5_671 - 10
    assert wl.meta["cleaning"] == {
        "missing run time": 5671,
        "zero run time": 10,
        "requested time from the run time": 35,
    }
    assert wl.server_need_per_job.max() <= 128 and (wl.requested_time_per_job > 0).all()


def test_start_and_length_select_a_sequence_of_the_replay(tmp_path: Path) -> None:
    """``start=S&length=N``: jobs S .. S + N - 1 of the cleaned replay, their submit and requested
    times kept, as ``TraceWorkload.jobs`` gives them (one sequence of the HPC protocol)."""
    rows = [_row(i, 10 * i, 5 + i, 1 + i % 4, 1 + i % 4, 20 + i) for i in range(1, 13)]
    path = _swf(tmp_path, rows)
    whole = load_scenario(f"swf:{path}?tau=30").build()
    part = load_scenario(f"swf:{path}?tau=30&start=3&length=5").build()
    assert part.arrival_time.tolist() == whole.arrival_time[3:8].tolist() == [40.0, 50.0, 60.0, 70.0, 80.0]
    assert part.service_time_per_job.tolist() == whole.service_time_per_job[3:8].tolist()
    assert part.requested_time_per_job.tolist() == whole.requested_time_per_job[3:8].tolist()
    assert part.server_need_per_job.tolist() == whole.server_need_per_job[3:8].tolist()
    assert part.slowdown_tau == 30.0 and part.num_servers == whole.num_servers
    same = whole.jobs(3, 5)
    assert same.arrival_time.tolist() == part.arrival_time.tolist()
    assert [c.server_need for c in same.classes] == [c.server_need for c in part.classes]
    # every job of the sequence is run and measured, from an empty machine
    res = Simulator(part, make_policy("fcfs"), num_arrivals=5, warmup=0).run()
    assert res.num_measured == 5
    # with a load, the log is dilated first and the sequence cut from it, as the protocol cuts them
    slow = load_scenario(f"swf:{path}?tau=30&load=0.5&start=3&length=5").build()
    at_load = load_scenario(f"swf:{path}?tau=30&load=0.5").build()
    assert at_load.load == pytest.approx(0.5)
    assert slow.arrival_time.tolist() == at_load.arrival_time[3:8].tolist()
    assert slow.arrival_time.tolist() != part.arrival_time.tolist()


def test_find_trace_looks_in_the_trace_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """One lookup for every trace format: a file as given, else the first trace folder holding it."""
    from msj_gym.workloads.swf import find_trace, trace_dirs

    folder = tmp_path / "traces"
    folder.mkdir()
    (folder / "a.swf").write_text("; x\n")
    monkeypatch.setenv("MSJ_GYM_TRACE_DIR", str(folder))
    monkeypatch.chdir(tmp_path)
    assert trace_dirs()[0] == folder
    assert find_trace("a.swf") == folder / "a.swf"
    (tmp_path / "a.swf").write_text("; here\n")
    assert find_trace("a.swf") == Path("a.swf")  # the file as given comes first
    assert find_trace("missing.swf") == Path("missing.swf")  # not a file: the caller refuses it
    assert find_trace(tmp_path / "b.swf") == tmp_path / "b.swf"  # absolute: never looked up
