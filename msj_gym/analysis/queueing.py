"""Classical queueing formulas."""

from __future__ import annotations

import math

__all__ = ["erlang_b", "erlang_c", "mg1_mean_response_time", "mmk_mean_response_time"]


def erlang_b(servers: int, offered: float) -> float:
    """Erlang's loss formula E_s(a) by the recursion E_0 = 1, E_n = a E_{n-1} / (n + a E_{n-1}): stable
    for any s and a (no factorials, no powers)."""
    if int(servers) != servers or servers < 0:
        raise ValueError(f"servers: expected a non-negative integer, got {servers!r}")
    if not math.isfinite(offered) or offered < 0:
        raise ValueError(f"offered: expected a non-negative finite load, got {offered!r}")
    b = 1.0
    for n in range(1, int(servers) + 1):
        b = offered * b / (n + offered * b)
    return b


def erlang_c(servers: int, offered: float) -> float:
    """Probability of waiting in M/M/k with offered load a = lambda / mu < k (Erlang C)."""
    if offered >= servers:
        raise ValueError(f"offered: Erlang C needs offered load < servers, got {offered!r} >= {servers}")
    b = erlang_b(servers, offered)
    rho = offered / servers
    return b / (1.0 - rho + rho * b)


def mmk_mean_response_time(arrival_rate: float, service_rate: float, servers: int) -> float:
    """E[T] of M/M/k/FCFS: 1/mu + C(k, a) / (k mu - lambda)."""
    a = arrival_rate / service_rate
    return 1.0 / service_rate + erlang_c(servers, a) / (servers * service_rate - arrival_rate)


def mg1_mean_response_time(arrival_rate: float, mean: float, second_moment: float) -> float:
    """E[T] of M/G/1/FCFS (Pollaczek-Khinchine): E[S] + lambda E[S^2] / (2 (1 - rho))."""
    rho = arrival_rate * mean
    if rho >= 1.0:
        raise ValueError(f"load {rho!r} >= 1: the M/G/1 queue is unstable")
    return mean + arrival_rate * second_moment / (2.0 * (1.0 - rho))
