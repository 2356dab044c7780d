"""GPU-cluster trace loaders: fixtures written by hand from each trace's published schema (the READMEs
cited in msj_gym/workloads/gpu_traces.py), checked for the exact arrivals, GPU needs and durations,
the rounding rule, classes, load scaling, the one-line errors, and replay through the simulator and
MSJ-v0."""

from __future__ import annotations

import gzip
import json
import pathlib
import pickle

import gymnasium as gym
import numpy as np
import pytest

import msj_gym
from msj_gym import PolicyAgent, Simulator
from msj_gym.baselines import make_policy
from msj_gym.workloads import TraceWorkload, load_scenario
from msj_gym.workloads.gpu_traces import (
    FORMATS,
    GPUTraceScenario,
    acme_workload,
    detect_gpu_trace_format,
    gfs_workload,
    gpu_trace_workload,
    helios_workload,
    openb_workload,
    pai_workload,
    philly_workload,
    read_gpu_trace,
)


def _philly_job(jobid, submitted, attempts, vc="vcA", status="Pass"):
    return {
        "status": status,
        "vc": vc,
        "jobid": jobid,
        "attempts": [
            {
                "start_time": start,
                "end_time": end,
                "detail": [
                    {"ip": f"m{i}", "gpus": [f"gpu{g}" for g in range(n)]} for i, n in enumerate(gpus)
                ],
            }
            for start, end, gpus in attempts
        ],
        "submitted_time": submitted,
        "user": "u1",
    }


PHILLY = [
    # two attempts: the first (2 GPUs, 74 s) is not replayed; the last holds 4 + 4 GPUs for an hour
    _philly_job(
        "application_0",
        "2017-10-07 01:11:39",
        [
            ("2017-10-07 01:12:09", "2017-10-07 01:13:23", [2]),
            ("2017-10-07 01:13:30", "2017-10-07 02:13:30", [4, 4]),
        ],
    ),
    _philly_job("application_1", "2017-10-07 01:12:00", []),  # no attempt
    _philly_job("application_2", "2017-10-07 01:12:30", [("2017-10-07 01:13:00", None, [1])]),  # running
    _philly_job(
        "application_3",
        "2017-10-07 01:19:39",
        [("2017-10-07 01:20:00", "2017-10-07 01:30:00", [1])],
        vc="vcB",
    ),
    _philly_job("application_4", "2017-10-07 01:21:00", [("2017-10-07 01:21:00", "2017-10-07 01:22:00", [])]),
    # submitted first, listed last: arrivals are shifted to the earliest submission
    _philly_job(
        "application_5", "2017-10-07 01:11:00", [("2017-10-07 01:11:10", "2017-10-07 01:11:40", [2])]
    ),
]

# Written by hand from each trace's published schema and example rows (PAI: headerless, as released;
# its plan_gpu is a percentage of one GPU per instance).
FIXTURES = pathlib.Path(__file__).parent / "fixtures" / "gpu_traces"
HELIOS = (FIXTURES / "cluster_log.csv").read_text()

ACME_SEREN = (FIXTURES / "trace_seren.csv").read_text()

ACME_KALOS = (FIXTURES / "trace_kalos.csv").read_text()

PAI = (FIXTURES / "pai_task_table.csv").read_text()

OPENB = (FIXTURES / "openb_pod_list_default.csv").read_text()

GFS = (FIXTURES / "job_info_df.csv").read_text()

# per format: file name, text, and the expected jobs in file order (arrival s, GPUs, duration s)
CASES = {
    "philly": ("cluster_job_log", json.dumps(PHILLY), [39, 519, 0], [8, 1, 2], [3600, 600, 30]),
    "helios": ("cluster_log.csv", HELIOS, [0, 26, 540], [1, 4, 16], [36848, 249, 100]),
    "acme": ("trace_seren.csv", ACME_SEREN, [0, 336, 2498], [8, 8, 16], [117, 2693, 5000]),
    "pai": (
        "pai_task_table.csv",
        PAI,
        [0, 8, 18, 28, 38, 48, 58],
        [1, 1, 2, 8, 1, 3, 2],
        [38, 100, 300, 100, 50, 10, 10],
    ),
    "openb": (
        "openb_pod_list_default.csv",
        OPENB,
        [0, 241678, 529561, 597118],
        [8, 1, 1, 8],
        [1332357, 294651, 1512, 839],
    ),
    "gfs": (
        "job_info_df.csv",
        GFS,
        [0, 0, 9589663, 9589663, 100],
        [1, 1, 16, 94, 16],
        [2764799, 15897599, 41060, 71718, 3600],
    ),
}
SKIPPED = {
    "philly": {"last attempt not finished": 1, "no GPU": 1, "no attempt": 1},
    "helios": {"no GPU": 1, "zero duration": 1},
    "acme": {"no GPU": 1},
    "pai": {"missing start_time or end_time": 1, "no GPU": 1},
    "openb": {"never scheduled": 1, "no GPU": 1},
    "gfs": {},
}
LOADERS = {
    "philly": philly_workload,
    "helios": helios_workload,
    "acme": acme_workload,
    "pai": pai_workload,
    "openb": openb_workload,
    "gfs": gfs_workload,
}


def _write(tmp_path, fmt, text=None, name=None):
    fname, default, *_ = CASES[fmt]
    path = tmp_path / (name or fname)
    text = default if text is None else text
    if path.suffix == ".gz":
        with gzip.open(path, "wt") as fh:
            fh.write(text)
    else:
        path.write_text(text)
    return path


@pytest.mark.parametrize("fmt", FORMATS)
def test_parses_exact_arrivals_gpus_durations_and_skips(tmp_path, fmt):
    _, _, arrivals, gpus, durations = CASES[fmt]
    path = _write(tmp_path, fmt)
    assert detect_gpu_trace_format(path) == fmt
    for given in (None, fmt):
        trace = read_gpu_trace(path, given)
        assert trace.format == fmt and len(trace) == len(arrivals)
        np.testing.assert_array_equal(trace.arrival_time, arrivals)
        np.testing.assert_array_equal(trace.server_need, gpus)
        np.testing.assert_array_equal(trace.service_time, durations)
        assert trace.skipped == SKIPPED[fmt]


@pytest.mark.parametrize("fmt", ["helios", "pai", "philly"])
def test_gzip_files_read_the_same(tmp_path, fmt):
    plain = read_gpu_trace(_write(tmp_path, fmt))
    packed = read_gpu_trace(_write(tmp_path, fmt, name="trace.gz"), fmt)
    np.testing.assert_array_equal(plain.arrival_time, packed.arrival_time)
    np.testing.assert_array_equal(plain.server_need, packed.server_need)


def test_philly_uses_the_last_attempt_only(tmp_path):
    trace = read_gpu_trace(_write(tmp_path, "philly"))
    # job 0: last attempt 8 GPUs for 3600 s, not the first attempt's 2 GPUs for 74 s
    assert (trace.row[0], trace.server_need[0], trace.service_time[0]) == (0, 8, 3600)


def test_acme_kalos_extra_columns_and_time_zones(tmp_path):
    path = _write(tmp_path, "acme", ACME_KALOS, name="trace_kalos.csv")
    trace = read_gpu_trace(path)
    assert trace.format == "acme"
    np.testing.assert_array_equal(trace.arrival_time, [0, 1664])
    np.testing.assert_array_equal(trace.server_need, [64, 64])
    np.testing.assert_array_equal(trace.service_time, [18, 82])
    # seren: 17:00 UTC is 01:00 +08:00, 2498 s after the first submission at 00:18:22 +08:00
    assert read_gpu_trace(_write(tmp_path, "acme")).arrival_time[2] == 2498


def test_pai_rounding_rule(tmp_path):
    """GPUs = ceil(inst_num * plan_gpu / 100), at least 1."""
    trace = read_gpu_trace(_write(tmp_path, "pai"))
    plan = {  # row: (inst_num, plan_gpu) -> GPUs
        1: (1, 50, 1),  # half a GPU holds one
        2: (2, 50, 1),  # two halves pack into one
        4: (3, 50, 2),  # 1.5 rounds up
        5: (8, 100, 8),
        7: (1, 25, 1),
        8: (2, 150, 3),  # exactly 3: no rounding up past an integer
        9: (1, 120, 2),  # 1.2 rounds up, not to the nearest
    }
    got = dict(zip(trace.row.tolist(), trace.server_need.tolist(), strict=True))
    assert got == {row: n for row, (_, _, n) in plan.items()}
    # a header line with the published names is accepted too
    header = "job_name,task_name,inst_num,status,start_time,end_time,plan_cpu,plan_mem,plan_gpu,gpu_type\n"
    again = read_gpu_trace(_write(tmp_path, "pai", header + PAI, name="with_header.csv"))
    np.testing.assert_array_equal(again.server_need, trace.server_need)


def test_openb_gpu_sharing_pod_holds_one_gpu_and_pending_pods_are_skipped(tmp_path):
    trace = read_gpu_trace(_write(tmp_path, "openb"))
    assert trace.server_need[1] == 1  # gpu_milli 220: a shared GPU, held whole
    assert trace.skipped["never scheduled"] == 1
    assert trace.service_time[2] == 9968575 - 9967063  # deletion - scheduled, not - creation


def test_gfs_classes_are_priority_and_need(tmp_path):
    wl = gfs_workload(_write(tmp_path, "gfs"))
    assert wl.num_servers == 128  # largest need 94 rounded up to a power of two
    names = [c.name for c in wl.classes]
    assert names == ["HP/need-1", "HP/need-16", "Spot/need-16", "Spot/need-94"]
    assert [c.server_need for c in wl.classes] == [1, 16, 16, 94]
    np.testing.assert_allclose(wl.probabilities, [2 / 5, 1 / 5, 1 / 5, 1 / 5])
    # the same need in two priorities stays two classes; class_by=None merges them
    assert [c.name for c in gfs_workload(_write(tmp_path, "gfs"), class_by=None).classes] == [
        "need-1",
        "need-16",
        "need-94",
    ]


@pytest.mark.parametrize(
    ("fmt", "class_by", "names"),
    [
        ("philly", "vc", ["vcA/need-2", "vcA/need-8", "vcB/need-1"]),
        ("helios", "vc", ["vcJkd/need-1", "vchbv/need-4", "vchbv/need-16"]),
        ("acme", "type", ["Other/need-8", "Pretrain/need-16"]),
        (
            "pai",
            "gpu_type",
            [
                "MISC/need-1",
                "P100/need-8",
                "T4/need-1",
                "T4/need-2",
                "T4/need-3",
                "V100/need-1",
                "V100/need-2",
            ],
        ),
        ("openb", "qos", ["BE/need-1", "Burstable/need-8", "LS/need-1"]),
    ],
)
def test_class_by_a_trace_column(tmp_path, fmt, class_by, names):
    wl = LOADERS[fmt](_write(tmp_path, fmt), class_by=class_by)
    got = [c.name for c in wl.classes]
    assert sorted(got) == sorted(names)
    for c in wl.classes:
        assert c.name.endswith(f"/need-{c.server_need}")
    assert wl.meta["class_by"] == class_by
    assert [c.name for c in LOADERS[fmt](_write(tmp_path, fmt)).classes] == [
        f"need-{n}" for n in sorted(set(CASES[fmt][3]))
    ]


@pytest.mark.parametrize("fmt", FORMATS)
def test_load_scaling_by_time_dilation(tmp_path, fmt):
    path = _write(tmp_path, fmt)
    k = 128
    base = LOADERS[fmt](path, k)
    scaled = LOADERS[fmt](path, k, load=0.6)
    assert scaled.load == pytest.approx(0.6, rel=1e-12)
    factor = base.load / 0.6
    assert scaled.meta["time_scale"] == pytest.approx(factor, rel=1e-12)
    np.testing.assert_allclose(np.diff(scaled.arrival_time), np.diff(base.arrival_time) * factor, rtol=1e-12)
    np.testing.assert_array_equal(scaled.service_time_per_job, base.service_time_per_job)
    np.testing.assert_array_equal(scaled.server_need_per_job, base.server_need_per_job)
    # time_scale directly, and the workload's own with_load, agree with load=
    direct = LOADERS[fmt](path, k, time_scale=factor)
    np.testing.assert_allclose(direct.arrival_time, scaled.arrival_time, rtol=1e-12)
    np.testing.assert_allclose(base.with_load(0.6).arrival_time, scaled.arrival_time, rtol=1e-12)


def test_trace_load_by_hand(tmp_path):
    wl = helios_workload(_write(tmp_path, "helios"), 16)
    work = 1 * 36848 + 4 * 249 + 16 * 100
    assert wl.load == pytest.approx(work / (16 * 540), rel=1e-12)
    assert wl.arrival_rate == pytest.approx(2 / 540, rel=1e-12)
    assert wl.with_arrival_rate(0.01).arrival_rate == pytest.approx(0.01, rel=1e-12)
    at_once = TraceWorkload(4, [5.0, 5.0], [1, 2], [1.0, 2.0])
    with pytest.raises(ValueError, match="all jobs arrive at one instant"):
        at_once.with_load(0.5)


def test_first_and_default_cluster_size(tmp_path):
    wl = philly_workload(_write(tmp_path, "philly"), first=2)
    # the first two by arrival: application_5 (2 GPUs) at 0 and application_0 (8 GPUs) at 39
    np.testing.assert_array_equal(wl.arrival_time, [0, 39])
    np.testing.assert_array_equal(wl.server_need_per_job, [2, 8])
    assert wl.num_servers == 8
    assert helios_workload(_write(tmp_path, "helios")).num_servers == 16
    assert pai_workload(_write(tmp_path, "pai")).num_servers == 8


@pytest.mark.parametrize(
    ("fmt", "text", "match"),
    [
        # a file of another format
        ("philly", HELIOS, "given as format 'philly'.*looks like 'helios'"),
        ("helios", json.dumps(PHILLY), "given as format 'helios'.*looks like 'philly'"),
        ("acme", HELIOS, "looks like 'helios'.*pass format='helios'"),
        ("pai", GFS, "looks like 'gfs'"),
        ("gfs", OPENB, "looks like 'openb'"),
        # missing columns, empty file
        ("helios", HELIOS.replace(",duration,", ",runtime,"), r"missing column\(s\) duration"),
        ("openb", OPENB.replace("scheduled_time", "sched"), r"missing column\(s\) scheduled_time"),
        ("gfs", "", "the file is empty"),
        ("philly", "\n  \n", "the file is empty"),
        # bad rows: named by line and column
        ("helios", HELIOS.replace(",249,0", ",-249,0"), r"line 3, column 'duration'.*>= 0.*-249"),
        ("helios", HELIOS.replace("vchbv,4,", "vchbv,four,"), r"line 3, column 'gpu_num'.*number.*'four'"),
        ("helios", HELIOS.replace("2020-06-09 18:50:01", "yesterday"), r"line 5, column 'submit_time'"),
        ("helios", HELIOS.replace(",FAILED,", ",FAILED,x,"), r"line 3: expected 12 fields.*got 13"),
        ("acme", ACME_SEREN.replace(",2693,", ",-1,"), r"line 3, column 'duration'"),
        ("pai", PAI.replace("1739250.0", "1739150.0"), r"line 7, column 'end_time'.*negative duration -50"),
        ("pai", PAI.replace(",3.0,", ",three,"), r"line 4, column 'inst_num'.*'three'"),
        ("openb", OPENB.replace("10035454", "10034000"), r"line 7, column 'deletion_time'.*negative"),
        ("gfs", GFS.replace(",41060,", ",-4,"), r"line 4, column 'duration'"),
        ("gfs", GFS.replace(",1,16,", ",1,x16,"), r"line 4, column 'worker_num'"),
        (
            "philly",
            json.dumps(
                [
                    _philly_job(
                        "app_9", "2017-10-07 01:00:00", [("2017-10-07 02:00:00", "2017-10-07 01:00:00", [1])]
                    )
                ]
            ),
            r"job 0 \(app_9\), column 'attempts\[-1\]': negative duration -3600",
        ),
        (
            "philly",
            json.dumps([{"jobid": "a", "submitted_time": "2017-10-07 01:00:00"}]),
            "job 0: expected an object with 'submitted_time' and 'attempts'",
        ),
        (
            "philly",
            json.dumps([_philly_job("app_9", "7 Oct 2017", [])]),
            r"job 0 \(app_9\), column 'submitted_time'.*'7 Oct 2017'",
        ),
        ("philly", "[{]", "not JSON"),
    ],
)
def test_one_line_errors(tmp_path, fmt, text, match):
    path = _write(tmp_path, fmt, text)
    with pytest.raises(ValueError, match=match) as exc:
        LOADERS[fmt](path)
    assert "\n" not in str(exc.value) and str(path) in str(exc.value)


def test_detection_errors_and_argument_checks(tmp_path):
    odd = tmp_path / "odd.csv"
    odd.write_text("a,b,c\n1,2,3\n")
    with pytest.raises(ValueError, match=r"cannot tell its format.*'a,b,c'.*philly"):
        gpu_trace_workload(odd)
    with pytest.raises(ValueError, match="format: expected one of philly"):
        gpu_trace_workload(odd, "swf")
    path = _write(tmp_path, "helios")
    with pytest.raises(ValueError, match=r"num_servers: 8 GPUs is below the largest job's need 16.*line 5"):
        helios_workload(path, 8)
    with pytest.raises(ValueError, match="at most one of load, time_scale"):
        helios_workload(path, load=0.5, time_scale=2.0)
    with pytest.raises(ValueError, match=r"load: expected a positive finite number in \[1e-06, 1e\+06\]"):
        helios_workload(path, load=-1.0)
    with pytest.raises(ValueError, match="class_by column 'queue_name' not in"):
        helios_workload(path, class_by="queue_name")
    with pytest.raises(ValueError, match=r"fewer than 2 replayable jobs \(1; skipped no GPU: 1\)"):
        lines = HELIOS.splitlines()
        helios_workload(_write(tmp_path, "helios", "\n".join([lines[0], lines[1], lines[3]]) + "\n"))
    with pytest.raises(ValueError, match="no key 'queue'"):
        philly_workload(_write(tmp_path, "philly"), class_by="queue")


def test_scenario_specs(tmp_path, monkeypatch):
    path = _write(tmp_path, "gfs")
    sc = load_scenario(f"gfs:{path}?num_servers=256&load=0.5&first=4")
    assert isinstance(sc, GPUTraceScenario) and sc.format == "gfs"
    wl = sc.build()
    assert (wl.num_servers, wl.arrival_time.size) == (256, 4) and wl.load == pytest.approx(0.5)
    assert sc.build(num_servers=128, load=0.8).load == pytest.approx(0.8)
    assert sc.build(load=0.8).num_servers == 256
    # gpu: detects the format; class_by=none drops the priority labels
    auto = load_scenario(f"gpu:{path}?class_by=none").build()
    assert [c.name for c in auto.classes] == ["need-1", "need-16", "need-94"]
    # a bare file name is looked up in $MSJ_GYM_TRACE_DIR
    monkeypatch.setenv("MSJ_GYM_TRACE_DIR", str(tmp_path))
    assert load_scenario("gfs:job_info_df.csv").build().num_servers == 128
    # start and length: those jobs of the replay, cut after its time dilation (a protocol's sequence)
    whole = load_scenario(f"gfs:{path}?num_servers=256&load=0.5").build()
    cut = load_scenario(f"gfs:{path}?num_servers=256&load=0.5&start=1&length=3").build()
    assert np.array_equal(cut.arrival_time, whole.arrival_time[1:4])
    assert np.array_equal(cut.server_need_per_job, whole.server_need_per_job[1:4])
    assert np.array_equal(cut.service_time_per_job, whole.service_time_per_job[1:4])
    with pytest.raises(ValueError, match=r"jobs 3\.\.6 run past its 5 jobs"):
        load_scenario(f"gfs:{path}?start=3&length=4").build()
    for spec, match in [
        (f"helios:{path}", "looks like 'gfs'.*write gfs:"),
        (
            "gfs:nowhere.csv",
            "no such file 'nowhere.csv'.*published at https://github.com/alibaba/clusterdata",
        ),
        (f"gfs:{path}?k=3", "unknown option 'k'"),
        (f"gfs:{path}?start=2", "start and length go together"),
        (f"gfs:{path}?start=-1&length=2", "start: expected"),
        (f"gfs:{path}?start=0&length=0", "length: expected a positive integer, got 0"),
        (f"gfs:{path}?load=high", "load expects a number, got 'high'"),
        (f"gfs:{path}?num_servers=0", "num_servers: expected a positive integer"),
    ]:
        with pytest.raises(ValueError, match=match):
            load_scenario(spec)


def _dozens_of_jobs(rng: np.random.Generator, n: int = 40) -> str:
    """A Helios-format trace of ``n`` jobs (1-8 GPUs), Poisson-ish submissions, lognormal run times."""
    lines = [HELIOS.splitlines()[0]]
    t = np.cumsum(rng.exponential(60.0, n)).astype(int)
    for i in range(n):
        gpus = int(rng.choice([1, 2, 4, 8]))
        duration = int(rng.lognormal(5.0, 1.0)) + 1
        submit = f"2020-06-09 {10 + t[i] // 3600:02d}:{t[i] // 60 % 60:02d}:{t[i] % 60:02d}"
        lines.append(f"{i},u1,vcA,{gpus},4,1,COMPLETED,{submit},{submit},{submit},{duration},0")
    return "\n".join(lines) + "\n"


def test_fcfs_replays_the_trace_in_the_simulator(tmp_path):
    path = _write(tmp_path, "helios", _dozens_of_jobs(np.random.default_rng(7)))
    wl = load_scenario(f"helios:{path}?num_servers=8").build(load=0.8)
    n = wl.arrival_time.size
    assert n == 40 and wl.load == pytest.approx(0.8)
    sim = Simulator(wl, make_policy("fcfs"), seed=0, num_arrivals=n, warmup=0, record_jobs=True)
    res = sim.run()
    rec = sim.records()
    assert res.num_measured == n
    np.testing.assert_allclose(rec["arrival_time"], wl.arrival_time)
    np.testing.assert_allclose(rec["service_time"], wl.service_time_per_job)
    # FCFS: starts in arrival order, none before its arrival; runs uninterrupted
    assert np.all(np.diff(rec["first_start"]) >= 0)
    assert np.all(rec["first_start"] >= rec["arrival_time"])
    np.testing.assert_allclose(rec["departure_time"], rec["first_start"] + rec["service_time"])
    assert res.p_wait > 0  # at load 0.8 on 8 GPUs some job waits
    # the one-call API on the spec gives the same run
    again = msj_gym.simulate(
        f"helios:{path}?num_servers=8", "fcfs", load=0.8, num_arrivals=n, warmup=0, seed=0
    )
    assert again.mean_response_time == pytest.approx(res.mean_response_time, rel=1e-12)


def test_gfs_at_its_own_timing_nobody_waits(tmp_path):
    # k = 128: at most 1 + 1 + 16 + 94 = 112 GPUs are ever busy, so FCFS response = service time
    wl = gfs_workload(_write(tmp_path, "gfs"))
    res = msj_gym.simulate(wl, "fcfs", num_arrivals=5, warmup=0, seed=0)
    assert res.p_wait == 0
    assert res.mean_response_time == pytest.approx(np.mean(CASES["gfs"][4]), rel=1e-12)


def test_gym_episode_on_a_trace_spec(tmp_path):
    path = _write(tmp_path, "helios", _dozens_of_jobs(np.random.default_rng(3), 30))
    env = gym.make(
        "MSJ-v0",
        scenario=f"helios:{path}?num_servers=8",
        load=0.7,
        num_arrivals=30,
        warmup=0,
        weighted=False,
        reward="integral",
    )
    wl = env.unwrapped.workload
    assert isinstance(wl, TraceWorkload) and wl.num_servers == 8 and wl.load == pytest.approx(0.7)
    agent = PolicyAgent("fcfs", env)
    obs, _ = env.reset(seed=0)
    total, steps, done = 0.0, 0, False
    while not done:
        obs, reward, term, trunc, _ = env.step(agent.predict(obs)[0])
        total += reward
        steps += 1
        assert not term
        done = trunc
    assert steps >= 30 and total < 0  # every job is started once; time in system is a cost
    res = msj_gym.simulate(wl, "fcfs", num_arrivals=30, warmup=0, seed=0)
    # the env's summed reward is minus the total time in system: FCFS through the env = native FCFS
    assert -total == pytest.approx(res.mean_response_time * 30, rel=1e-9)


def test_a_scenario_sent_to_a_worker_process_keeps_the_format_default(tmp_path):
    # the leaderboard pickles the scenario to its workers; class_by not given must stay "not given"
    # there (it was refused as "class_by: expected a column name or None, got <format default>")
    scenario = load_scenario(f"helios:{_write(tmp_path, 'helios')}?num_servers=16")
    sent = pickle.loads(pickle.dumps(scenario))
    there = sent.build(load=0.5)  # first: a trace read in this process is reused
    here = scenario.build(load=0.5)
    np.testing.assert_array_equal(here.arrival_time, there.arrival_time)
    np.testing.assert_array_equal(here.server_need_per_job, there.server_need_per_job)
