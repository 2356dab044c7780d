"""The one arrival feeder: whatever the write sizes, the same jobs in the same order, with their
per-job attributes; a finite stream ends the run, an unending one hits the cap."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest

from msj_gym.core import state as S
from msj_gym.core.feed import ArrivalError, ArrivalFeed


@dataclass(frozen=True)
class _Chunk:
    arrival_time: np.ndarray
    job_class: np.ndarray
    service_time: np.ndarray
    estimate_noise: np.ndarray
    job_attributes: np.ndarray

    def __len__(self) -> int:
        return int(self.arrival_time.size)


class _Stream:
    """Jobs 0, 1, 2, ... at times 0, 1, 2, ...; job j has attributes (j, -j); ``length`` jobs if finite."""

    def __init__(self, length: int | None = None) -> None:
        self.next_id, self.length = 0, length
        self.finite = length is not None
        self.requests: list[int] = []

    def next_chunk(self, n: int) -> _Chunk:
        self.requests.append(n)
        end = self.next_id + n if self.length is None else min(self.next_id + n, self.length)
        ids = np.arange(self.next_id, end)
        self.next_id = end
        return _Chunk(ids * 1.0, ids % 2, ids + 1.0, np.zeros(ids.size), np.stack([ids, -ids], axis=1))


def _sim(ring: int) -> S.Sim:
    return S.allocate(
        4, np.array([1, 2]), slots=8, ring=ring, num_batches=2, num_checkpoints=2, job_attributes=2
    )


def _drain(feed: ArrivalFeed, sim: S.Sim, limit: int | None, total: int) -> list[tuple]:
    """Feed and consume (as the engine would: job by job) until ``total`` jobs came or the stream ended."""
    seen = []
    while len(seen) < total and not sim.iv[S.I_EXHAUSTED]:
        feed.feed(sim, limit)
        while sim.iv[S.I_NARR] < sim.iv[S.I_NGEN]:
            r = int(sim.iv[S.I_NARR]) & (sim.ring_t.size - 1)
            seen.append((sim.ring_t[r], sim.ring_c[r], sim.ring_s[r], *sim.ring_a[r]))
            sim.iv[S.I_NARR] += 1
    return seen


def test_write_sizes_do_not_change_the_jobs_and_attributes_are_written() -> None:
    whole = _drain(ArrivalFeed(_Stream(), 100, chunk=16), _sim(32), None, 100)
    one_by_one = _drain(ArrivalFeed(_Stream(), 100, chunk=16), _sim(32), 1, 100)
    assert whole == one_by_one
    assert [j[0] for j in whole] == list(range(100))
    assert all(a == j[0] and b == -j[0] for j in whole for a, b in [j[3:]])


def test_one_by_one_still_draws_whole_chunks() -> None:
    stream = _Stream()
    _drain(ArrivalFeed(stream, 40, chunk=16), _sim(32), 1, 40)
    assert stream.requests == [16, 16, 8]


def test_a_finite_stream_ends_and_an_unending_one_is_capped() -> None:
    sim, feed = _sim(32), ArrivalFeed(_Stream(length=20), 100, chunk=16)
    assert len(_drain(feed, sim, None, 100)) == 20
    assert sim.iv[S.I_EXHAUSTED] == 1 and not feed.capped
    sim, feed = _sim(32), ArrivalFeed(_Stream(), 30, chunk=16)
    assert len(_drain(feed, sim, None, 100)) == 30
    feed.feed(sim)
    assert sim.iv[S.I_EXHAUSTED] == 1 and feed.capped


def test_a_bad_job_is_refused_before_it_is_written() -> None:
    class Bad(_Stream):
        def next_chunk(self, n: int) -> _Chunk:
            c = super().next_chunk(n)
            c.service_time[3] = -1.0
            return c

    sim = _sim(32)
    with pytest.raises(ArrivalError, match="service_time: job 3"):
        ArrivalFeed(Bad(), 100, chunk=16).feed(sim)
    assert sim.iv[S.I_NGEN] == 0
