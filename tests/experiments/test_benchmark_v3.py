"""Suite v3: v2's points and a GPU-cluster point (sequences of a GPU trace, time-dilated to a load,
scored on the mean job completion time), its trace downloaded by the user: a tiny suite on a generated
Alibaba-2023-format file, and the refusal without the file."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from msj_gym import Simulator
from msj_gym.experiments import benchmark as bm
from msj_gym.experiments.sequences import sequence_starts, sequence_workload, trace_replay
from msj_gym.registry import make_policy
from tests.test_bad_inputs import _empty, _refused

POLICIES = ["fcfs", "first-fit", "msf", "static-quickswap", "easy-backfilling"]
SEEDS = (0, 1, 2)
LENGTH = 60


def _openb(folder: Path, pods: int = 300) -> Path:
    """An Alibaba GPU 2023 pod list (``openb_pod_list_*.csv``) of ``pods`` pods: 1 to 8 GPUs (some a
    share of one), some CPU-only, bursty creation times, lognormal lifetimes."""
    rng = np.random.default_rng(7)
    lines = [
        "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,"
        "scheduled_time"
    ]
    t = np.cumsum(rng.exponential(40.0, pods) * rng.choice([0.1, 1.0, 5.0], pods)).astype(int)
    for i in range(pods):
        gpus = int(rng.choice([0, 1, 1, 1, 2, 4, 8]))
        milli = 1000 if gpus != 1 else int(rng.choice([250, 500, 1000]))
        life = int(rng.lognormal(5.0, 1.2)) + 1
        lines.append(f"openb-pod-{i:04d},4000,8192,{gpus},{milli},,LS,Succeeded,{t[i]},{t[i] + life},{t[i]}")
    path = folder / "openb_pod_list_default.csv"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_v3_is_v2_and_the_gpu_point() -> None:
    v2, v3 = bm.suite_points("v2"), bm.suite_points("v3")
    assert bm.GPU_POINTS_V3 == (("gpu-alibaba-2023", 1024.0),)
    assert set(v3) - set(v2) == set(bm.GPU_POINTS_V3) and set(v2) < set(v3)
    assert [p for p in v3 if p in v2] == list(v2)  # v2's points in v2's order
    assert bm.point_split("v3", ("gpu-alibaba-2023", 1024.0)) == "test"
    assert bm.point_split("v3", ("swf-sdsc-sp2", 1024.0)) == "train"  # v2's split
    config = bm.BenchmarkConfig(suite="v3")
    assert ("gpu-alibaba-2023", 1024.0) in config.test_points
    assert config.metric_at("gpu-alibaba-2023") == "mean_response_time"
    assert bm.point_model(("gpu-alibaba-2023", 1024.0)) == "msj"


def test_without_its_trace_v3_is_refused_in_one_line(tmp_path, monkeypatch, capsys) -> None:
    monkeypatch.setenv("MSJ_GYM_TRACE_DIR", str(tmp_path))  # no trace there
    out = tmp_path / "out"
    argv = ["benchmark", "--suite", "v3", "--points", "gpu-alibaba-2023@1024", "--quick", "--out", str(out)]
    needles = [
        "benchmark point gpu-alibaba-2023@1024",
        "no such file 'openb_pod_list_default.csv'",
        "https://github.com/alibaba/clusterdata/tree/master/cluster-trace-gpu-v2023",
    ]
    _refused(argv, needles, capsys)
    assert _empty(out)


@pytest.fixture(scope="module")
def v3(tmp_path_factory):
    folder = tmp_path_factory.mktemp("v3")
    spec = f"openb:{_openb(folder)}?num_servers=8&load=0.9"
    point = bm.SequencePoint(spec, length=LENGTH, window=None, metric="mean_response_time")
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(bm, "BENCHMARK_SUITE", (("sf-fig2", 0.5),))
        mp.setattr(bm, "SEQUENCE_POINTS", {"gpu-x": point})
        mp.setattr(bm, "TRACE_POINTS_V2", ())
        mp.setattr(bm, "GPU_POINTS_V3", (("gpu-x", float(LENGTH)),))
        mp.setattr(bm, "MODEL_POINTS_V2", ())
        mp.setattr(bm, "_policy_ids", lambda preemptive: list(POLICIES))
        mp.setattr(bm, "exact_optima", lambda scenario, load: {})
        config = bm.BenchmarkConfig(suite="v3", seeds=SEEDS, arrivals=2000)
        report = bm.run_benchmark(config, folder / "out", workers=1, progress=False)
        yield spec, point, report


def test_a_gpu_run_is_the_protocols_sequence_of_the_dilated_trace(v3) -> None:
    """Run s of the GPU point schedules the sequence ``msj-gym sequences`` draws with seed s, cut from
    the trace at the point's load (the whole trace dilated, then cut), to its last job."""
    spec, point, report = v3
    trace = trace_replay(spec)
    assert trace.load == pytest.approx(0.9)
    for entrant in ("fcfs", "first-fit"):
        values = []
        for seed in SEEDS:
            start = int(sequence_starts(int(trace.arrival_time.size), LENGTH, 1, seed)[0])
            assert point.start(seed) == start
            wl = sequence_workload(trace, start, LENGTH)
            run = Simulator(wl, make_policy(entrant), num_arrivals=LENGTH, warmup=0).run()
            values.append(run.mean_response_time)
        row = next(r for r in report["points"] if r.scenario == "gpu-x" and r.entrant == entrant)
        assert row.value == pytest.approx(np.mean(values), rel=1e-12)


def test_the_gpu_point_is_scored_on_job_completion_time_per_sequence(v3) -> None:
    _, _, report = v3
    scale = next(s for s in report["scales"] if s.scenario == "gpu-x")
    assert scale.metric == "mean_response_time"
    assert scale.low_ref == "fcfs" and scale.high_ref == "best heuristic per sequence"
    rows = [r for r in report["points"] if r.scenario == "gpu-x"]
    refs = [r for r in rows if r.kind == "non-preemptive"]
    for i in range(len(SEEDS)):
        assert max(r.scores[i] for r in refs) == pytest.approx(100.0)
    assert next(r for r in rows if r.entrant == "fcfs").scores == [0.0] * len(SEEDS)
    # the 1-GPU share of a GPU is a whole GPU: every need is 1, 2, 4 or 8
    assert set(trace_replay(v3[0]).server_needs) <= {1, 2, 4, 8}
