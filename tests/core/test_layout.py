"""A policy's scratch as a Layout: sizes from expressions, offsets in the arrays' headers, regions read
from compiled code and from Python, re-laid out on growth, and one-line errors for bad declarations."""

from __future__ import annotations

import numpy as np
import pytest

from msj_gym.core import Policy
from msj_gym.core.access import region
from msj_gym.core.jit import kernel_jit
from msj_gym.core.layout import Layout
from msj_gym.core.record import Record

PARAMS = Record("kept", "table")
WORK = Layout(
    ints={"cursor": "classes", "marks": "servers", "order": "2 * slots + kept"},
    floats={"keys": "servers * (1 + classes)", "none": "0"},
    params=PARAMS,
)
CURSOR, MARKS, ORDER, KEYS, NONE = WORK.ids
MORE = WORK.extend(floats={"extra": "slots // 2"})


@kernel_jit
def _fill(iwork, fwork):
    region(iwork, CURSOR)[:] = 1
    region(iwork, MARKS)[:] = 2
    region(iwork, ORDER)[:] = 3
    region(fwork, KEYS)[:] = 4.0
    return region(iwork, ORDER).size, region(fwork, KEYS).size, region(fwork, NONE).size


class _Laid(Policy):
    policy_id = "laid-out"
    work = WORK


def _pdata(kept: int = 5):
    rng = np.random.default_rng(0)
    return _Laid().prepare(None, rng)._replace(params=PARAMS.pack(kept=kept, table=[1, 2]))


def test_ids_sizes_and_regions() -> None:
    assert WORK.ids == (0, 1, 2, 0, 1)
    assert MORE.ids == (0, 1, 2, 0, 1, 2)
    policy = _Laid()
    pdata = policy.with_work(_pdata(), 10, 4, 3)
    # headers: 4 int offsets then 3 + 4 + 25 ints; 3 float offsets then 16 floats
    assert policy.work_sizes(10, 4, 3, pdata.params) == (4 + 32, 3 + 16)
    assert (pdata.iwork.size, pdata.fwork.size) == (36, 19)
    assert _fill(pdata.iwork, pdata.fwork) == (25, 16, 0)
    assert WORK.get(pdata, "cursor").tolist() == [1, 1, 1]
    assert WORK.get(pdata, "marks").tolist() == [2] * 4
    assert (WORK.get(pdata, "order") == 3).all() and (WORK.get(pdata, "keys") == 4.0).all()
    assert WORK.sizes(10, 4, 3, pdata.params) == {"cursor": 3, "marks": 4, "order": 25, "keys": 16, "none": 0}


def test_resize_recomputes_offsets() -> None:
    policy = _Laid()
    pdata = policy.with_work(_pdata(), 10, 4, 3)
    assert policy.with_work(pdata, 10, 4, 3) is pdata  # same layout: kept, content and all
    grown = policy.with_work(pdata, 20, 4, 3)
    assert grown.iwork.size == 4 + 3 + 4 + 45
    assert _fill(grown.iwork, grown.fwork) == (45, 16, 0)
    assert WORK.get(grown, "marks").tolist() == [2] * 4


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"ints": {"a": "slots + widgets"}}, "unknown size name 'widgets'"),
        ({"ints": {"a": "servers"}, "floats": {"a": "servers"}}, r"region name\(s\) \['a'\] given twice"),
        ({"ints": {"a": "servers ** 2"}}, "only integers, names"),
        ({"ints": {"a": "servers +"}}, "expected a size expression"),
        ({"ints": {"a": "1.5"}}, "only integers, names"),
        ({"ints": {"not a name": "1"}}, "must be identifiers"),
        ({}, "at least one region"),
    ],
)
def test_bad_declarations(kwargs: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Layout(**kwargs)


def test_bad_uses() -> None:
    with pytest.raises(ValueError, match=r"Layout.extend: region name\(s\) \['marks'\] given twice"):
        WORK.extend(ints={"marks": "1"})
    with pytest.raises(ValueError, match="no region 'widgets'"):
        WORK.id("widgets")
    with pytest.raises(ValueError, match="pass the packed params"):
        WORK.sizes(10, 4, 3)
    with pytest.raises(ValueError, match="must be a scalar field"):
        Layout(ints={"a": "table"}, params=PARAMS).sizes(1, 1, 1, PARAMS.pack(kept=1, table=[1, 2]))
    with pytest.raises(ValueError, match="negative size"):
        Layout(ints={"a": "servers - 5"}).sizes(1, 1, 1)


def test_growth_keeps_each_regions_content_when_asked() -> None:
    policy = _Laid()
    assert not WORK.laid_out(_pdata())
    pdata = policy.with_work(_pdata(), 10, 4, 3)
    assert WORK.laid_out(pdata)
    _fill(pdata.iwork, pdata.fwork)
    WORK.get(pdata, "order")[:] = np.arange(25)
    grown = WORK.with_work(pdata, 20, 4, 3, keep=True)
    assert WORK.get(grown, "order").tolist() == [*range(25), *[0] * 20]
    assert WORK.get(grown, "marks").tolist() == [2] * 4 and (WORK.get(grown, "keys") == 4.0).all()
    shrunk = WORK.with_work(grown, 5, 4, 3, keep=True)  # as much as fits
    assert WORK.get(shrunk, "order").tolist() == list(range(15))
    assert not WORK.get(WORK.with_work(pdata, 20, 4, 3), "order").any()  # without keep: zeroed
