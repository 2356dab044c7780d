"""A policy's parameters as a Record: packing, reading from compiled code and from Python, and one-line
errors naming the field."""

from __future__ import annotations

import numpy as np
import pytest

from msj_gym.core.access import field, int_value, value
from msj_gym.core.jit import kernel_jit
from msj_gym.core.record import Record

FIELDS = Record("mode", "gmap", "empty", "theta", nonfinite=("theta",))
MODE, GMAP, EMPTY, THETA = FIELDS.ids
MORE = FIELDS.extend("step")
(STEP,) = MORE.ids[len(FIELDS) :]


@kernel_jit
def _read(params):
    g = field(params, GMAP)
    return int_value(params, MODE), g.sum(), g.size, field(params, EMPTY).size, value(params, THETA)


@kernel_jit
def _read_extended(params):
    return int_value(params, MODE), value(params, STEP)


def test_pack_and_read_compiled() -> None:
    params = FIELDS.pack(mode=2, gmap=np.array([0, 1, 1]), empty=[], theta=np.inf)
    assert params.dtype == np.float64
    assert _read(params) == (2, 2.0, 3, 0, np.inf)
    assert FIELDS.get(params, "gmap").tolist() == [0.0, 1.0, 1.0]
    assert {n: v.tolist() for n, v in FIELDS.unpack(params).items()} == {
        "mode": [2.0],
        "gmap": [0.0, 1.0, 1.0],
        "empty": [],
        "theta": [np.inf],
    }


def test_an_extended_record_keeps_the_parents_ids() -> None:
    params = MORE.pack(mode=1, gmap=[3.0], empty=[], theta=0.5, step=0.25)
    assert MORE.names[: len(FIELDS)] == FIELDS.names and STEP == len(FIELDS)
    assert _read(params) == (1, 3.0, 1, 0, 0.5)
    assert _read_extended(params) == (1, 0.25)


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"gmap": [0], "empty": [], "theta": 1.0}, "missing field 'mode'"),
        ({"mode": 0, "gmap": [0], "empty": [], "theta": 1.0, "mod": 1}, "unknown field 'mod'"),
        ({"mode": np.nan, "gmap": [0], "empty": [], "theta": 1.0}, "field 'mode': expected finite"),
        ({"mode": 0, "gmap": [[0, 1]], "empty": [], "theta": 1.0}, "field .gmap.: expected a number or"),
        ({"mode": "bs", "gmap": [0], "empty": [], "theta": 1.0}, "field 'mode': expected numbers"),
        ({"mode": 2**60, "gmap": [0], "empty": [], "theta": 1.0}, "field 'mode': an integer too large"),
    ],
)
def test_pack_errors_name_the_field(values, message) -> None:
    with pytest.raises(ValueError, match=message):
        FIELDS.pack(**values)


def test_declaration_errors() -> None:
    with pytest.raises(ValueError, match="given twice"):
        Record("a", "a")
    with pytest.raises(ValueError, match="identifiers"):
        Record("a b")
    with pytest.raises(ValueError, match="nonfinite names unknown"):
        Record("a", nonfinite=("b",))
    with pytest.raises(ValueError, match="no field 'x'"):
        FIELDS.id("x")
