import numpy as np
import pytest

from msj_gym.workloads import Exponential, JobClass, TraceWorkload, Workload, load_scenario


def _wl(**kw):
    classes = [JobClass(1, Exponential(1.0), 0.75, "small"), JobClass(4, Exponential(2.0), 0.25, "big")]
    return Workload(8, classes, **kw)


def test_load_and_rate_are_consistent():
    wl = _wl(load=0.6)
    demand = 0.75 * 1 * 1 + 0.25 * 2 * 4
    assert wl.arrival_rate == pytest.approx(0.6 * 8 / demand)
    assert wl.class_loads.sum() == pytest.approx(0.6)
    assert wl.load_weights == pytest.approx([0.75 / demand, 2.0 / demand])
    assert _wl(arrival_rate=wl.arrival_rate).load == pytest.approx(0.6)


def test_stream_does_not_depend_on_chunking():
    wl = load_scenario("bs-fig1").build(num_servers=256)
    a = wl.arrivals(42)
    whole = a.next_chunk(5000)
    b = wl.arrivals(42)
    parts = [b.next_chunk(n) for n in (1, 999, 3000, 1000)]
    for field in ("arrival_time", "job_class", "service_time", "estimate_noise"):
        joined = np.concatenate([getattr(p, field) for p in parts])
        assert np.array_equal(joined, getattr(whole, field)), field


def test_service_times_depend_only_on_the_class_stream():
    # Changing another class's distribution leaves a class's draws untouched (per-class streams).
    base = _wl(load=0.5)
    other = Workload(
        8, [base.classes[0], JobClass(4, Exponential(5.0), 0.25, "big")], arrival_rate=base.arrival_rate
    )
    c1, c2 = base.arrivals(3).next_chunk(2000), other.arrivals(3).next_chunk(2000)
    small = c1.job_class == 0
    assert np.array_equal(c1.job_class, c2.job_class)
    assert np.array_equal(c1.service_time[small], c2.service_time[small])
    assert not np.array_equal(c1.service_time[~small], c2.service_time[~small])


def test_class_frequencies_and_rate():
    wl = _wl(arrival_rate=2.0)
    chunk = wl.arrivals(1).next_chunk(200_000)
    assert np.mean(chunk.job_class == 1) == pytest.approx(0.25, abs=0.005)
    assert chunk.arrival_time[-1] / chunk.arrival_time.size == pytest.approx(0.5, rel=0.01)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"num_servers": 0}, "num_servers: expected a positive integer, got 0"),
        ({"num_servers": 3}, "server_need: 4 exceeds num_servers = 3"),
        ({"load": 0.5, "arrival_rate": 1.0}, "exactly one of arrival_rate and load"),
        ({"arrival_rate": -1.0}, "arrival_rate: expected a positive finite number, got -1.0"),
        ({"arrival_rate": float("inf")}, "arrival_rate: expected a positive finite number"),
    ],
)
def test_bad_workloads(kwargs, message):
    args = {"num_servers": 8, "load": None, "arrival_rate": None, **kwargs}
    if args["load"] is None and args["arrival_rate"] is None:
        args["load"] = 0.5
    classes = [JobClass(1, Exponential(1.0), 0.75, "small"), JobClass(4, Exponential(2.0), 0.25, "big")]
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        Workload(args["num_servers"], classes, load=args["load"], arrival_rate=args["arrival_rate"])


def test_bad_job_classes():
    with pytest.raises(ValueError, match="probability: expected a number in"):
        JobClass(1, Exponential(1.0), 1.5)
    with pytest.raises(ValueError, match="must sum to 1"):
        Workload(4, [JobClass(1, Exponential(1.0), 0.5)], load=0.5)


def test_trace_workload_classes_and_validation():
    tr = TraceWorkload(8, [0.0, 1.0, 1.0, 3.0], [1, 4, 1, 8], [2.0, 1.0, 3.0, 1.0])
    assert list(tr.server_needs) == [1, 4, 8]
    assert tr.load == pytest.approx((2 + 4 + 3 + 8) / (8 * 3.0))
    with pytest.raises(ValueError, match=r"service_time: invalid value -1\.0 for job 1"):
        TraceWorkload(8, [0.0, 1.0], [1, 1], [1.0, -1.0])
    with pytest.raises(ValueError, match=r"server_need: invalid value 9 for job 0"):
        TraceWorkload(8, [0.0], [9], [1.0])


def test_every_models_workload_declares_its_model() -> None:
    """The registry and the policies read a workload's model off ``WorkloadLike.model``: each of the
    three models' workloads declares it, and one that declares nothing is refused in one line."""
    from msj_gym import Simulator
    from msj_gym.core.workload import WorkloadLike, is_workload
    from msj_gym.moldable.systems import MOLDABLE_SYSTEMS, build_moldable_system
    from msj_gym.registry import make_policy, supports
    from msj_gym.workloads.compat import COMPAT_SCENARIOS, build_compat_scenario
    from msj_gym.workloads.scenarios import load_scenario
    from msj_gym.workloads.trace import TraceWorkload

    queue = load_scenario("sf-fig2").build(load=0.5)
    trace = TraceWorkload(4, [0.0, 1.0], [1, 2], [1.0, 2.0])
    compat = build_compat_scenario(next(iter(COMPAT_SCENARIOS)))
    moldable = build_moldable_system(next(iter(MOLDABLE_SYSTEMS)), num_servers=100)
    for wl, model in ((queue, "msj"), (trace, "msj"), (compat, "compatibility"), (moldable, "moldable")):
        assert isinstance(wl, WorkloadLike) and is_workload(wl) and wl.model == model
    assert supports("fcfs", compat) is not None and supports("fcfs", queue) is None

    class NotAWorkload:
        num_servers = 4

    assert not is_workload(NotAWorkload())
    why = supports("fcfs", NotAWorkload())
    assert why is not None and "NotAWorkload is not a workload" in why and "\n" not in why
    with pytest.raises(TypeError, match=r"workload: expected a workload .* got NotAWorkload"):
        Simulator(NotAWorkload(), make_policy("fcfs"))
