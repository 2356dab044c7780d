"""Figure commands at a tiny size: files written, resumable runs, bad input."""

from __future__ import annotations

import csv
import dataclasses
import itertools
import json

import pytest

from msj_gym.cli import main
from msj_gym.experiments import FIGURES, make_figure


def test_figure_writes_csv_and_png_and_resumes(tmp_path) -> None:
    csv_path, png = make_figure("004-fig2", tmp_path, arrivals=2000, progress=False)
    rows = list(csv.DictReader(csv_path.open()))
    sim = [r for r in rows if r["series"] == "MSFQ"]
    analysis = [r for r in rows if r["series"] == "MSFQ (analysis)"]
    assert [float(r["x"]) for r in sim] == list(FIGURES["004-fig2"].xs)
    assert len(analysis) == len(sim) and all(float(r["mean"]) > 0 for r in rows)
    # runs and analysis carry the content hash of the one scenario they were computed on
    runs_content = {json.loads(x)["content"] for x in (tmp_path / "runs.jsonl").read_text().splitlines()}
    assert len(runs_content) == 1 and {r["content"] for r in rows} == runs_content
    pytest.importorskip("matplotlib")
    assert png is not None and png.stat().st_size > 10_000
    runs = (tmp_path / "runs.jsonl").read_text().splitlines()
    assert len(runs) == len(sim)
    make_figure("004-fig2", tmp_path, arrivals=2000, progress=False)  # every run is reused
    assert (tmp_path / "runs.jsonl").read_text().splitlines() == runs
    make_figure("004-fig4", tmp_path, arrivals=3000, progress=False)
    phase = [r for r in csv.DictReader((tmp_path / "004-fig4.csv").open())]
    assert {r["metric"] for r in phase} == {f"policy_metrics.phase{p}_mean_duration" for p in (1, 2, 3, 4)}


def test_seeds_give_replication_intervals(tmp_path) -> None:
    csv_path, _ = make_figure("004-fig5", tmp_path, arrivals=1000, seeds=2, progress=False)
    rows = list(csv.DictReader(csv_path.open()))
    fig = FIGURES["004-fig5"]
    assert len(rows) == len(fig.series) * len(fig.xs) and all(r["seeds"] == "2" for r in rows)
    lines = [json.loads(x) for x in (tmp_path / "runs.jsonl").read_text().splitlines()]
    assert {x["seed"] for x in lines} == {0, 1}


def test_bad_input(tmp_path) -> None:
    with pytest.raises(ValueError, match="unknown figure"):
        make_figure("004-fig99", tmp_path)
    with pytest.raises(ValueError, match="arrivals"):
        make_figure("004-fig2", tmp_path, arrivals=5)
    (tmp_path / "runs.jsonl").write_text("not json\n")
    with pytest.raises(ValueError, match="line 1"):
        make_figure("004-fig2", tmp_path, arrivals=1000, progress=False)


def test_cli_lists_figures(capsys) -> None:
    assert main(["figure", "--list"]) == 0
    out = capsys.readouterr().out
    assert all(name in out for name in FIGURES)


def test_sample_path_figure(tmp_path) -> None:
    csv_path, png = make_figure("004-fig1", tmp_path, arrivals=400)
    rows = list(csv.DictReader(csv_path.open()))
    for series in ("MSF", "MSFQ"):
        times = [float(r["time"]) for r in rows if r["series"] == series]
        counts = [int(r["jobs_in_system"]) for r in rows if r["series"] == series]
        # a point per event: at least one per arrival, clock never going back, counts never negative
        assert len(times) >= 400 and all(b >= a for a, b in itertools.pairwise(times))
        assert min(counts) >= 0 and max(counts) > 0
    pytest.importorskip("matplotlib")
    assert png is not None and png.stat().st_size > 10_000


def test_balanced_fairness_figure(tmp_path) -> None:
    """003 figures: the compatibility-model runs through the same runner, with the analysis curve."""
    csv_path, _ = make_figure("003-fig2b", tmp_path, arrivals=1000, seeds=2, progress=False)
    rows = list(csv.DictReader(csv_path.open()))
    fig = FIGURES["003-fig2b"]
    assert {r["series"] for r in rows} == {*fig.series, "balanced fairness (analysis)"}
    assert {r["metric"] for r in rows} == {m for m, _ in fig.panels}
    sim = [r for r in rows if "analysis" not in r["series"]]
    assert len(sim) == len(fig.series) * len(fig.xs) * len(fig.panels)
    assert all(r["seeds"] == "2" and float(r["ci95"]) >= 0 for r in sim)
    # class 2 may only use one unit server: its balanced-fair mean service rate stays below 1
    rates = [
        float(r["mean"])
        for r in rows
        if r["metric"] == "policy_metrics.service_rate.class2" and "analysis" in r["series"]
    ]
    assert len(rates) == len(fig.xs) and max(rates) < 1.0


def test_balanced_splitting_figures_are_registered_and_run(tmp_path) -> None:
    assert {"000-fig1", "000-fig2a", "000-fig2b", "000-fig3-sdsc-k512", "000-fig3-kit-k1024"} <= set(FIGURES)
    fig = FIGURES["000-fig1"]
    assert set(fig.series) == {
        "BS-FCFS",
        "FCFS",
        "MSF",
        "ServerFilling",
        "ServerFilling-SRPT",
        "First-Fit SRPT",
        "First-Fit",
    }
    small = dataclasses.replace(fig, xs=(64,), series={k: fig.series[k] for k in ("BS-FCFS", "FCFS")})
    FIGURES["000-test"] = small
    try:
        csv_path, png = make_figure("000-test", tmp_path, arrivals=1000, progress=False)
    finally:
        del FIGURES["000-test"]
    rows = list(csv.DictReader(csv_path.open()))
    p_h = {r["series"]: float(r["mean"]) for r in rows if r["metric"] == "policy_metrics.p_helpers"}
    # P_H only for BS (FCFS has none), next to ModifiedBS's Erlang-B value, its upper bound
    assert set(p_h) == {"BS-FCFS", "P_H of ModifiedBS (analysis, eq. 16)"}
    assert 0.0 < p_h["BS-FCFS"] < 1.0 and 0.0 < p_h["P_H of ModifiedBS (analysis, eq. 16)"] < 1.0
    assert {r["series"] for r in rows if r["metric"] == "mean_response_time"} == {"BS-FCFS", "FCFS"}
    pytest.importorskip("matplotlib")
    assert png is not None and png.stat().st_size > 10_000
