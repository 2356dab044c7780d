"""002 Fig. 2 and Table 1 at a tiny size: files, layout, limits, paper values, resumable runs."""

from __future__ import annotations

import csv

import pytest

from msj_gym.cli import main
from msj_gym.experiments import MOLDABLE_FIGURES, make_figure
from msj_gym.experiments.moldable import PAPER_TABLE1, limits


def test_fig2_writes_csv_png_and_resumes(tmp_path) -> None:
    csv_path, png = make_figure("002-fig2", tmp_path, arrivals=1000, progress=False)
    rows = list(csv.DictReader(csv_path.open()))
    fig = MOLDABLE_FIGURES["002-fig2"]
    assert len(rows) == 2 * len(fig.num_servers) * len(fig.regimes) * len(fig.speed_ups) * len(fig.policies)
    hw = next(
        r
        for r in rows
        if (r["regime"], r["speed_up"], r["policy"], r["num_servers"], r["metric"])
        == ("Halfin-Whitt", "sub-linear", "moldable-p-scheme", "4000", "mean_execution_time")
    )
    assert float(hw["limit"]) == pytest.approx(0.993665, abs=1e-6)  # T* at lam_4000, spec 6.1
    runs = (tmp_path / "runs.jsonl").read_text().splitlines()
    make_figure("002-fig2", tmp_path, arrivals=1000, progress=False)
    assert (tmp_path / "runs.jsonl").read_text().splitlines() == runs
    pytest.importorskip("matplotlib")
    assert png is not None and png.stat().st_size > 10_000


def test_table1_carries_the_paper_values(tmp_path) -> None:
    csv_path, _ = make_figure("002-table1", tmp_path, arrivals=1000, seeds=2, progress=False)
    rows = list(csv.DictReader(csv_path.open()))
    assert len(rows) == 6 * 4 * 2 and all(r["seeds"] == "2" for r in rows)
    for r in rows:
        paper = PAPER_TABLE1[(r["speed_up"], r["regime"])][r["size_law"]]
        assert float(r["paper"]) == paper[1 if r["metric"] == "blocking" else 0]


def test_limits() -> None:
    assert limits("sub-linear", "moldable-greedy", 0.8) == pytest.approx(
        {"blocking": 0.15, "mean_execution_time": 1 / 3.4}
    )
    assert limits("sub-linear", "moldable-p-scheme", 0.8)["mean_execution_time"] == pytest.approx(0.375)
    assert limits("linear", "moldable-greedy", 0.8) == pytest.approx(
        {"blocking": 0.0, "mean_execution_time": 0.2}
    )


def test_cli_lists_and_rejects(tmp_path, capsys) -> None:
    assert main(["figure", "--list"]) == 0
    out = capsys.readouterr().out
    assert all(name in out for name in MOLDABLE_FIGURES)
    assert main(["figure", "002-fig2", "--out", str(tmp_path), "--seeds", "0"]) == 2
    assert "seeds" in capsys.readouterr().err
