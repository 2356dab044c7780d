"""``size_estimates="requested"``: an MSJ env that tells the agent (its revealed sizes, its
shortest-first starts, its advisors) the jobs' requested times instead of their exact service times,
as a batch scheduler knows them. Checked on hand-made traces: requested times equal to the service
times change nothing, bit for bit; requested times that rank the jobs otherwise change the order of
the starts as worked by hand; the refusals."""

from __future__ import annotations

import numpy as np
import pytest

from msj_gym.env.make import make_msj
from msj_gym.workloads.trace import TraceWorkload


def _trace(requested: list[float]) -> TraceWorkload:
    # k = 1: A holds the server until 10; B (service 1) and C (service 5) wait behind it
    t, n, d = [0.0, 1.0, 2.0], [1, 1, 1], [10.0, 1.0, 5.0]
    return TraceWorkload(1, t, n, d, requested_time=requested, name="hand")


def _shortest_first(estimates: str, requested: list[float]) -> float:
    env = make_msj(_trace(requested), num_arrivals=3, actions="priority-shortest", size_estimates=estimates)
    env.reset(seed=0)
    done = False
    while not done:
        mask = env.action_masks()
        _, _, _, done, _ = env.step(1 if mask[1] else 0)  # serve class 0 (the shortest job) when it can
    return env.result().mean_response_time


def test_the_shortest_first_starts_follow_the_requested_times():
    # exact: B (1) then C (5): responses 10, 10, 14; requested: C (asked 6) before B (asked 50):
    # 10, 13, 15
    assert _shortest_first("exact", [10.0, 50.0, 6.0]) == pytest.approx(34 / 3)
    assert _shortest_first("requested", [10.0, 50.0, 6.0]) == pytest.approx(38 / 3)
    # requested times that rank the jobs as their sizes do: the exact order
    assert _shortest_first("requested", [10.0, 2.0, 6.0]) == pytest.approx(34 / 3)


def _episode(wl: TraceWorkload, estimates: str, seed: int) -> tuple[list[np.ndarray], float]:
    env = make_msj(
        wl,
        num_arrivals=wl.arrival_time.size,
        observation="classes",
        actions="priority-shortest",
        reveal_sizes=True,
        advisor=["easy-backfilling", "first-fit"],
        size_estimates=estimates,
    )
    obs, _ = env.reset(seed=seed)
    rng = np.random.default_rng(seed)
    seen, done = [obs], False
    while not done:
        allowed = np.flatnonzero(env.action_masks())
        obs, _, _, done, _ = env.step(int(rng.choice(allowed)))
        seen.append(obs)
    return seen, env.result().mean_response_time


def _random_trace(rng: np.random.Generator, requested_factor: np.ndarray | float) -> TraceWorkload:
    jobs = 300
    t = np.cumsum(rng.exponential(1.0, jobs))
    n = rng.choice([1, 2, 4, 8], jobs)
    d = rng.exponential(3.0, jobs) + 0.1
    return TraceWorkload(8, t, n, d, requested_time=d * requested_factor, name="random")


def test_requested_times_equal_to_the_sizes_change_nothing():
    rng = np.random.default_rng(5)
    wl = _random_trace(rng, 1.0)
    exact, t_exact = _episode(wl, "exact", 3)
    requested, t_requested = _episode(wl, "requested", 3)
    assert t_exact == t_requested
    assert len(exact) == len(requested) and all(
        np.array_equal(a, b) for a, b in zip(exact, requested, strict=True)
    )


def test_other_requested_times_are_what_the_agent_sees():
    rng = np.random.default_rng(6)
    factor = rng.uniform(1.0, 20.0, 300)  # users ask for more than their jobs take, by various factors
    wl = _random_trace(np.random.default_rng(5), factor)
    exact, _ = _episode(wl, "exact", 3)
    requested, _ = _episode(wl, "requested", 3)
    assert not all(np.array_equal(a, b) for a, b in zip(exact, requested, strict=False))


def test_advisors_estimate_from_the_requested_times():
    wl = _trace([10.0, 50.0, 6.0])
    env = make_msj(
        wl, actions="priority-shortest", advisor=["easy-backfilling", "first-fit"], size_estimates="requested"
    )
    assert env.advisors[0].param_values["estimates"] == "requested"
    assert env.advisors[1].policy_id == "first-fit"
    env = make_msj(wl, actions="priority-shortest", advisor="sjf-easy", size_estimates="requested")
    assert env.advisors[0].param_values["estimates"] == "requested" and not env.advisors[0].reads_sizes()
    from msj_gym.registry import make_policy

    noisy = make_policy("easy-backfilling", estimate_factor=0.5)  # the f-model: estimates from the sizes
    with pytest.raises(ValueError, match="advisor: 'easy-backfilling' with estimates='f-model'"):
        make_msj(wl, actions="priority-shortest", advisor=noisy, size_estimates="requested")


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (
            {"size_estimates": "guessed", "reveal_sizes": True},
            "size_estimates: expected 'exact' or 'requested', got 'guessed'",
        ),
        ({"size_estimates": "requested"}, "size_estimates: 'requested' changes what reveal_sizes=True"),
        (
            {"scenario": "sf-fig2", "size_estimates": "requested", "reveal_sizes": True},
            "size_estimates: 'requested' needs a workload with requested times (an SWF log); "
            "'sf-fig2' has none",
        ),
    ],
)
def test_refusals(kwargs, message):
    kwargs.setdefault("scenario", _trace([10.0, 50.0, 6.0]))
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        make_msj(**kwargs)


def test_the_vector_env_equals_single_envs_on_requested_times():
    """The native vector env steps the same compiled observation and starts: bit for bit the single
    envs, with requested times that rank the jobs otherwise than their sizes."""
    from tests.env.test_vector import _run_pair

    rng = np.random.default_rng(7)
    wl = _random_trace(np.random.default_rng(8), rng.uniform(1.0, 20.0, 300))
    kwargs = {"observation": "classes", "actions": "priority-shortest", "reveal_sizes": True}
    ends = _run_pair(
        "MSJ-v0", "SameStep", 700, scenario=wl, num_arrivals=80, size_estimates="requested", **kwargs
    )
    assert ends >= 3
