"""The SWF reader, the power-of-two binning, and Table 2 of paper 000 rebuilt from the SDSC SP2 log
with the recipe of spec bs_traces.md."""

from __future__ import annotations

import gzip

import numpy as np
import pytest

from msj_gym.workloads.swf import (
    SWF_FIELDS,
    bin_server_needs,
    class_table,
    read_swf,
    swf_jobs,
    swf_source,
    swf_workload,
)

HEADER = """; Version: 2.2
; Computer: test machine
; MaxProcs: 8
; Queue:  0  interactive
; Queue:  1  batch
;
"""
# job, submit, wait, run, procs, then 13 more fields (some missing: -1)
JOBS = [
    "1 0 5 100 1 -1 -1 1 200 -1 1 3 1 -1 0 -1 -1 -1",
    "2 10 0 50 3 -1 -1 4 100 -1 1 3 1 -1 0 -1 -1 -1",  # 3 processors: literal drops it, round-down -> 2
    "3 20 0 -1 2 -1 -1 2 100 -1 0 3 1 -1 0 -1 -1 -1",  # run time missing: dropped
    "4 30 1 70 -1 -1 -1 2 100 -1 1 3 1 -1 0 -1 -1 -1",  # processors missing: dropped
    "5 40 1 30 8 -1 -1 8 100 -1 1 3 1 -1 0 -1 -1 -1",
    "6 55 1 20 2 -1 -1 2 100 -1 1 3 1 -1 0 -1 -1 -1",
]


def _write(tmp_path, lines, name="log.swf", header=HEADER):
    path = tmp_path / name
    text = header + "\n".join(lines) + "\n"
    if name.endswith(".gz"):
        with gzip.open(path, "wt") as fh:
            fh.write(text)
    else:
        path.write_text(text)
    return path


@pytest.mark.parametrize("name", ["log.swf", "log.swf.gz"])
def test_reads_header_records_and_missing_values(tmp_path, name):
    log = read_swf(_write(tmp_path, JOBS, name))
    assert len(log) == 6 and log.records.shape == (6, len(SWF_FIELDS)) == (6, 18)
    assert log.header["MaxProcs"] == "8" and log.header["Queue"] == ["0  interactive", "1  batch"]
    assert list(log.line) == [7, 8, 9, 10, 11, 12]
    run = log.column("run_time", missing=np.nan)
    assert np.isnan(run[2]) and log.column("run_time")[2] == -1
    with pytest.raises(ValueError, match="SWF field"):
        log.column("size")


@pytest.mark.parametrize(
    ("line", "match"),
    [
        ("7 60 0 10 1 -1 -1 1 100 -1 1 3 1 -1 0 -1 -1", "line 13: expected 18 fields, got 17"),
        ("7 60 0 ten 1 -1 -1 1 100 -1 1 3 1 -1 0 -1 -1 -1", "line 13: field 'run_time' is not a number"),
        ("7 60 0 nan 1 -1 -1 1 100 -1 1 3 1 -1 0 -1 -1 -1", "line 13: non-finite"),
    ],
)
def test_malformed_lines_are_reported_with_their_number(tmp_path, line, match):
    with pytest.raises(ValueError, match=match):
        read_swf(_write(tmp_path, [*JOBS, line]))


def test_missing_file_and_bad_options(tmp_path):
    with pytest.raises(ValueError, match="cannot read"):
        read_swf(tmp_path / "none.swf")
    with pytest.raises(ValueError, match="binning"):
        bin_server_needs(np.array([1]), "nearest", 64)
    with pytest.raises(ValueError, match="max_need"):
        bin_server_needs(np.array([1]), "literal", 48)
    log = read_swf(_write(tmp_path, JOBS))
    with pytest.raises(ValueError, match="num_servers: 4 is below the largest binned server need 8"):
        swf_workload(log, 4)
    with pytest.raises(ValueError, match="at most one"):
        swf_workload(log, 8, load=0.5, time_scale=2.0)


def test_binning_rules():
    needs = np.array([1, 2, 3, 4, 5, 64, 65, 127, 128, 0, -1, 2.5])
    assert list(bin_server_needs(needs, "literal", 64)) == [1, 2, 0, 4, 0, 64, 0, 0, 0, 0, 0, 0]
    assert list(bin_server_needs(needs, "round-down", 64)) == [1, 2, 2, 4, 4, 64, 64, 64, 0, 0, 0, 0]


def test_jobs_workload_and_time_scaling(tmp_path):
    log = read_swf(_write(tmp_path, JOBS))
    jobs = swf_jobs(log, binning="round-down", max_need=8)
    assert list(jobs["server_need"]) == [1, 2, 8, 2] and list(jobs["line"]) == [7, 8, 11, 12]
    assert list(swf_jobs(log, binning="literal", max_need=8)["server_need"]) == [1, 8, 2]
    wl = swf_workload(log, 8, max_need=8)
    work = 1 * 100 + 2 * 50 + 8 * 30 + 2 * 20
    assert wl.load == pytest.approx(work / (8 * 55))
    half = swf_workload(log, 8, max_need=8, load=0.5 * wl.load)
    assert half.load == pytest.approx(0.5 * wl.load)
    np.testing.assert_allclose(half.arrival_time, 2 * wl.arrival_time)
    assert [c.server_need for c in half.classes] == [1, 2, 8]


def test_table2_from_the_sdsc_sp2_log(shared_dir):
    """Spec bs_traces.md: round-down binning; shares over the whole cleaned log (53,904 jobs) match
    Table 2 to +-0.0001; moments over the first 19,993 jobs match for n = 1, 2, 16, 64 to the cent, 8 and
    32 within 0.1 %, while n = 4 stays 4.8 % low in mean and 6.7 % low in std (no recipe found for it)."""
    path = shared_dir / "data" / "traces" / "SDSC-SP2-1998-4.2-cln.swf.gz"
    if not path.exists():
        pytest.skip(f"{path} not found")
    table2 = {  # n: (E[D], std(D), alpha)
        1: (10519.71, 18267.03, 0.2321),
        2: (1436.82, 6250.19, 0.1496),
        4: (5643.69, 18123.7, 0.1624),
        8: (9248.53, 18468.51, 0.1652),
        16: (10601.46, 17050.63, 0.156),
        32: (12139.59, 22654.86, 0.0807),
        64: (8302.33, 19074.81, 0.054),
    }
    log = read_swf(path)
    assert len(log) == 59715 == int(log.header["MaxRecords"])
    whole = swf_jobs(log)
    assert whole["run_time"].size == 53904
    for row in class_table(whole["server_need"], whole["run_time"]):
        assert row["alpha"] == pytest.approx(table2[row["server_need"]][2], abs=1.5e-4)
    first = swf_jobs(log, first=19993)
    for row in class_table(first["server_need"], first["run_time"]):
        n = row["server_need"]
        mean, std, _ = table2[n]
        if n in (1, 2, 16, 64):
            assert row["mean"] == pytest.approx(mean, abs=0.006) and row["std"] == pytest.approx(
                std, abs=0.006
            )
        elif n in (8, 32):
            assert row["mean"] == pytest.approx(mean, rel=1e-3) and row["std"] == pytest.approx(std, rel=1e-3)
        else:  # the one class the recipe misses, by the amount the spec records
            assert row["mean"] / mean - 1 == pytest.approx(-0.048, abs=0.001)
            assert row["std"] / std - 1 == pytest.approx(-0.067, abs=0.001)
    # The literal recipe of the paper's text does not reproduce Table 2 (shares off by up to 0.04).
    literal = swf_jobs(log, binning="literal")
    assert literal["run_time"].size == 45581
    shares = {r["server_need"]: r["alpha"] for r in class_table(literal["server_need"], literal["run_time"])}
    assert max(abs(shares[n] - table2[n][2]) for n in table2) > 0.03


def test_trace_source_spec(tmp_path, monkeypatch):
    path = _write(tmp_path, JOBS)
    monkeypatch.setenv("MSJ_GYM_TRACE_DIR", str(tmp_path))
    wl = swf_source("swf:log.swf?max_need=8&binning=literal", num_servers=8, load=0.5)
    assert wl.load == pytest.approx(0.5) and [c.server_need for c in wl.classes] == [1, 2, 8]
    assert swf_source(f"swf:{path}?max_need=8&first=2", num_servers=8).arrival_time.size == 2
    for spec, match in (
        ("log.swf", "expected 'swf:FILE"),
        ("swf:none.swf", "not found"),
        ("swf:log.swf?max_need=x", "max_need expects an integer"),
        ("swf:log.swf?speed=2", "unknown option 'speed'"),
    ):
        with pytest.raises(ValueError, match=match):
            swf_source(spec, num_servers=8)


def test_balanced_splitting_replays_the_sdsc_log(shared_dir):
    """The paper's real-trace experiment in miniature: the first 5,000 jobs of the SDSC SP2 log on k = 128
    at load 0.7; BS-FCFS and FCFS see the same jobs; every measured job is served."""
    if not (shared_dir / "data" / "traces" / "SDSC-SP2-1998-4.2-cln.swf.gz").exists():
        pytest.skip("SDSC SP2 log not found")
    from msj_gym import Simulator
    from msj_gym.baselines import make_policy

    wl = swf_source("swf:SDSC-SP2-1998-4.2-cln.swf.gz?first=5000", num_servers=128, load=0.7)
    assert wl.load == pytest.approx(0.7) and wl.num_classes == 7
    runs = {p: Simulator(wl, make_policy(p), seed=0, num_arrivals=5000).run() for p in ("bs", "fcfs")}
    for r in runs.values():
        assert r.num_measured == 4500
    assert 0.0 < runs["bs"].policy_metrics["p_helpers"] < 1.0
