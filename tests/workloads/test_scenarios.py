import json
import math

import pytest

from msj_gym.workloads import Scenario, evaluate_expression, list_scenarios, load_scenario


def test_builtin_scenarios_build():
    names = set(list_scenarios())
    assert {
        "sf-fig2",
        "bs-fig1",
        "bs-fig2a",
        "bs-fig2b",
        "one-or-all",
        "four-class",
        "sdsc-sp2",
        "kit-fh2",
    } <= names
    for name in names:
        wl = load_scenario(name).build()
        assert wl.load > 0 and wl.arrival_rate > 0
        assert wl.probabilities.sum() == pytest.approx(1.0)


def test_sf_fig2_matches_paper():
    wl = load_scenario("sf-fig2").build(load=0.9)
    assert wl.num_servers == 8
    assert list(wl.server_needs) == [1, 8]
    assert wl.probabilities == pytest.approx([2 / 3, 1 / 3])
    assert wl.mean_service_times == pytest.approx([1.0, 1.0])
    # rho = lambda (2/3 * 1 + 1/3 * 8) / 8
    assert wl.arrival_rate == pytest.approx(0.9 * 8 / (2 / 3 + 8 / 3))


@pytest.mark.parametrize(("k", "f"), [(32, 1), (64, 1), (256, 4), (1024, 10), (2048, 16), (4096, 25)])
def test_bs_fig1_scaling(k, f):
    # f_k = floor((k/32)^(2/3)) exactly: 256 and 2048 give the integers 4 and 16, which floating point
    # computes a hair below
    wl = load_scenario("bs-fig1").build(num_servers=k)
    assert f**3 <= (k / 32) ** 2 < (f + 1) ** 3
    assert list(wl.server_needs) == [f, 2 * f, 4 * f, 8 * f]
    assert wl.mean_service_times == pytest.approx([1, 40, 20, 10])
    assert wl.probabilities == pytest.approx([0.95, 0.05 / 3, 0.05 / 3, 0.05 / 3])
    assert wl.load == pytest.approx(1 - 0.7 * f / math.sqrt(k))


def test_one_or_all_matches_spec():
    wl = load_scenario("one-or-all").build(arrival_rate=7.25)
    assert list(wl.server_needs) == [1, 32]
    assert wl.load == pytest.approx(7.25 * 4.1 / 32)
    assert wl.load_weights[1] == pytest.approx(3.2 / 4.1)


def test_overrides_and_load_rate_are_exclusive():
    sc = load_scenario("sf-fig2")
    assert sc.build(num_servers=16).num_servers == 16
    assert sc.build(arrival_rate=1.0).arrival_rate == pytest.approx(1.0)
    with pytest.raises(ValueError, match="at most one"):
        sc.build(load=0.5, arrival_rate=1.0)


def test_expression_evaluator_is_arithmetic_only():
    assert evaluate_expression("max(1, floor((k/32)**(2/3)))", {"k": 1024}) == 10
    assert evaluate_expression("2/3", {}) == pytest.approx(2 / 3)
    for bad in ("__import__('os')", "k.__class__", "[1, 2]", "open('x')", "lambda: 1"):
        with pytest.raises(ValueError):
            evaluate_expression(bad, {"k": 8})
    with pytest.raises(ValueError, match="unknown name 'n'"):
        evaluate_expression("n + 1", {"k": 8})


def _custom():
    return {
        "name": "mine",
        "num_servers": 4,
        "load": 0.5,
        "classes": [
            {
                "name": "a",
                "server_need": 1,
                "probability": 0.5,
                "service_time": {"distribution": "deterministic", "value": 2},
            },
            {
                "name": "b",
                "server_need": "k/2",
                "probability": 0.5,
                "service_time": {"distribution": "exponential", "mean": 1},
            },
        ],
    }


def test_scenario_files_in_three_formats(tmp_path):
    data = _custom()
    (tmp_path / "s.json").write_text(json.dumps(data))
    toml = """name = "mine"
num_servers = 4
load = 0.5
[[classes]]
name = "a"
server_need = 1
probability = 0.5
service_time = { distribution = "deterministic", value = 2 }
[[classes]]
name = "b"
server_need = "k/2"
probability = 0.5
service_time = { distribution = "exponential", mean = 1 }
"""
    (tmp_path / "s.toml").write_text(toml)
    yaml = pytest.importorskip("yaml")
    (tmp_path / "s.yaml").write_text(yaml.safe_dump(data))
    built = [load_scenario(str(tmp_path / f"s.{ext}")).build() for ext in ("json", "toml", "yaml")]
    for wl in built:
        assert list(wl.server_needs) == [1, 2]
        assert wl.load == pytest.approx(0.5)
    assert Scenario.from_dict(data).build().to_dict() == built[0].to_dict()


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda d: d["classes"][1].update(server_need=5), r"server_need: 5 exceeds num_servers = 4"),
        (lambda d: d["classes"][0].update(probability=0.6), "must sum to 1"),
        (lambda d: d.update(load=-0.3), "load: expected a positive"),
        (lambda d: d.update(bogus=1), r"unknown field\(s\) \['bogus'\]"),
        (lambda d: d["classes"][0].pop("server_need"), r"missing field\(s\) \['server_need'\]"),
        (lambda d: d["classes"][0].update(server_need=0), "server_need: expected a positive integer"),
        (lambda d: d["classes"][0].update(server_need=1.5), "server_need: expected a positive integer"),
    ],
)
def test_bad_scenarios_name_field_and_value(mutate, message):
    data = _custom()
    mutate(data)
    with pytest.raises(ValueError, match=message):
        Scenario.from_dict(data).build()


def test_load_above_one_is_allowed():
    assert load_scenario("sf-fig2").build(load=1.2).load == pytest.approx(1.2)


def test_unknown_scenario_and_missing_file(tmp_path):
    with pytest.raises(ValueError, match="unknown scenario 'nope'"):
        load_scenario("nope")
    with pytest.raises(ValueError, match="no such file"):
        load_scenario(str(tmp_path / "missing.toml"))


def test_borg_cellb_matches_the_shared_table(shared_dir) -> None:
    import csv

    import numpy as np

    rows = list(csv.DictReader((shared_dir / "data" / "borg_cellb_26class.csv").open()))
    wl = load_scenario("borg-cellb").build()
    assert wl.num_servers == 2048 and wl.num_classes == len(rows) == 26
    np.testing.assert_array_equal(wl.server_needs, [int(r["server_need"]) for r in rows])
    np.testing.assert_array_equal(wl.probabilities, [float(r["arrival_prob"]) for r in rows])
    np.testing.assert_array_equal(wl.mean_service_times, [float(r["mean_service_time"]) for r in rows])
    np.testing.assert_allclose(wl.load_weights, [float(r["load_share"]) for r in rows], atol=1e-6)
    # spec msfq.md 5.3: lambda* = 4.960; needs 200, 256, 2000 carry 86.0 % of the load
    assert wl.num_servers / wl.demand_per_arrival == pytest.approx(4.960, abs=5e-4)
    heavy = np.isin(wl.server_needs, [200, 256, 2000])
    assert wl.load_weights[heavy].sum() == pytest.approx(0.860, abs=5e-4)
