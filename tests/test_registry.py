"""The policy registry: lazy entry points, declared models equal the classes', baselines derived from it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from msj_gym import registry

ROOT = Path(__file__).resolve().parents[1]


def test_listing_ids_imports_no_policy():
    code = (
        "import sys, msj_gym.registry as r; ids = r.policy_ids(); "
        "assert 'fcfs' in ids and 'moldable-greedy' in ids, ids; "
        "assert r.policy_ids('compatibility') == ['compat-fcfs', 'balanced-fair', 'compat-least-loaded']; "
        "assert not any(m.startswith('msj_gym.baselines') for m in sys.modules)"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT, env={"PYTHONPATH": str(ROOT)})


def test_running_one_policy_imports_its_module_alone():
    # that every name of the package resolves to its module: tests/test_lazy.py
    code = (
        "import sys, msj_gym.registry as r; r.make_policy('first-fit'); "
        "got = sorted(m for m in sys.modules if m.startswith('msj_gym.baselines.') and '._' not in m); "
        "assert got == ['msj_gym.baselines.priority'], got; "
        "import msj_gym.baselines as b; "
        "names = [n for n in b.__all__ if isinstance(getattr(b, n), type)]; "
        "assert sorted(names) == sorted(b._LAZY.home), sorted(set(names) ^ set(b._LAZY.home)); "
        "assert b.POLICIES == r.list_policies(r.ENGINE_MODELS) and b.MOLDABLE_POLICIES"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT, env={"PYTHONPATH": str(ROOT)})


@pytest.mark.parametrize("policy_id", registry.policy_ids())
def test_declared_models_equal_the_class(policy_id):
    cls = registry.policy_class(policy_id)
    assert cls.policy_id == policy_id
    assert tuple(cls.models) == registry.policy_spec(policy_id).models


def test_every_builtin_is_registered_once():
    from msj_gym import baselines

    ids = registry.policy_ids()
    assert len(ids) == len(set(ids)) == 35
    assert list(baselines.POLICIES) == [p for p in ids if "moldable" not in registry.policy_spec(p).models]
    assert list(baselines.MOLDABLE_POLICIES) == registry.policy_ids("moldable")
    assert registry.policy_ids("moldable") == ["moldable-p-scheme", "moldable-greedy", "moldable-reserved"]
    assert set(registry.policy_ids("msj")) | set(registry.policy_ids("compatibility")) == set(
        baselines.POLICIES
    )
    classes = [registry.policy_class(p) for p in ids]
    assert len(set(classes)) == len(classes)  # no class under two ids
    assert [c.policy_id for c in classes] == ids  # and no id naming two classes


def test_fcfs_of_each_model_has_its_own_id():
    from msj_gym.baselines import make_policy
    from msj_gym.pooled import PooledSimulator
    from msj_gym.workloads.compat import build_compat_scenario

    wl = build_compat_scenario("003-tree-symmetric", load=0.5)
    with pytest.raises(ValueError, match="FCFS on a compatibility workload is 'compat-fcfs'"):
        make_policy("fcfs").for_workload(wl)
    res = PooledSimulator(wl, make_policy("compat-fcfs"), num_arrivals=500, seed=1).run()
    assert res.to_dict()["provenance"]["policy"]["id"] == "compat-fcfs"


def test_make_policy_and_errors():
    from msj_gym.moldable import MoldablePolicy

    assert (
        registry.make_policy("easy-backfilling", estimate_factor=2.0).param_values["estimate_factor"] == 2.0
    )
    assert isinstance(registry.make_policy("moldable-greedy"), MoldablePolicy)
    with pytest.raises(ValueError, match=r"unknown policy 'nope'; known: fcfs, first-fit") as exc:
        registry.make_policy("nope")
    assert "\n" not in str(exc.value)
    with pytest.raises(ValueError, match="model: expected one of"):
        registry.policy_ids("queue")


def test_register_policy_rules():
    try:
        registry.register_policy("my-fcfs", "msj_gym.baselines.fcfs:FCFS", models=("msj", "compatibility"))
        again = ("my-fcfs", "msj_gym.baselines.fcfs:FCFS")
        registry.register_policy(*again, models=("msj", "compatibility"))  # no-op
        assert "my-fcfs" in registry.policy_ids("compatibility")
        with pytest.raises(
            ValueError, match=r"'my-fcfs' is already registered as msj_gym\.baselines\.fcfs:FCFS"
        ):
            registry.register_policy("my-fcfs", "msj_gym.baselines.priority:FirstFit")
        with pytest.raises(ValueError, match="already registered"):
            registry.register_policy("fcfs", "mypkg.mymodule:MyPolicy")
        with pytest.raises(ValueError, match="has policy_id 'fcfs', not 'my-fcfs'"):
            registry.policy_class("my-fcfs")
        with pytest.raises(ValueError, match="entry_point: expected 'module:Class'"):
            registry.register_policy("my-bad", "mypkg.MyPolicy")
        with pytest.raises(ValueError, match="models: expected distinct names"):
            registry.register_policy("my-bad", "mypkg:MyPolicy", models=("queue",))
    finally:
        for pid in ("my-fcfs", "my-bad", "my-drift"):
            registry._REGISTRY.pop(pid, None)
            registry._LOADED.pop(pid, None)


def test_a_policy_of_ones_own_package(tmp_path, monkeypatch):
    (tmp_path / "mypkg_registry_test.py").write_text(
        "from msj_gym.baselines.priority import FirstFit\n\n\n"
        "class MyPolicy(FirstFit):\n"
        "    policy_id = 'my-first-fit'\n\n\n"
        "class MyDrift(FirstFit):\n"
        "    policy_id = 'my-drift'\n"
        "    models = ('compatibility',)\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        registry.register_policy("my-first-fit", "mypkg_registry_test:MyPolicy")
        import msj_gym.baselines

        assert msj_gym.baselines.make_policy("my-first-fit").policy_id == "my-first-fit"
        assert registry.list_policies("msj")["my-first-fit"].__name__ == "MyPolicy"
        registry.register_policy("my-drift", "mypkg_registry_test:MyDrift")  # declared msj, class says not
        with pytest.raises(ValueError, match="models: policy 'my-drift' is registered on"):
            registry.policy_class("my-drift")
    finally:
        for pid in ("my-first-fit", "my-drift"):
            registry._REGISTRY.pop(pid, None)
            registry._LOADED.pop(pid, None)


def test_baselines_supports_names_the_model():
    from msj_gym import load_scenario
    from msj_gym.baselines import supports

    workload = load_scenario("sf-fig2").build()
    assert supports("fcfs", workload) is None
    assert "not defined on the msj model" in supports("moldable-greedy", workload)
    assert "not defined on the msj model" in supports("balanced-fair", workload)


def test_policy_from_spec_takes_an_id_or_module_attr_and_names_the_field() -> None:
    from msj_gym.registry import policy_from_spec

    assert policy_from_spec("msf").policy_id == "msf"
    assert policy_from_spec("msj_gym.agents.rules:LsfShortest").policy_id == "lsf-shortest"
    for spec, reason in (
        ("nope", "unknown policy 'nope'; known: fcfs"),
        ("msj_gym.agents.rules:Nope", "cannot import"),
        ("numpy:pi", "expected a Policy class or instance, got float"),
    ):
        with pytest.raises(ValueError, match=f"^--base '{spec}': {reason}"):
            policy_from_spec(spec, "--base")


def _support_grid() -> dict[str, object]:
    """Workloads of every engine model on which some policy or other is refused: the built-ins, k
    changed under them, generated systems, the compatibility systems."""
    from msj_gym.workloads.compat import COMPAT_SCENARIOS, build_compat_scenario
    from msj_gym.workloads.generator import sample_systems
    from msj_gym.workloads.scenarios import list_scenarios, load_scenario

    grid: dict[str, object] = {f"{n}": load_scenario(n).build(load=0.5) for n in list_scenarios()}
    grid["sf-fig2, k=16"] = load_scenario("sf-fig2").build(load=0.5, num_servers=16)
    grid["one-or-all, k=4"] = load_scenario("one-or-all").build(load=0.5, num_servers=4)
    grid |= {f"generated {i}": wl for i, wl in enumerate(sample_systems(11, 8))}
    grid |= {n: build_compat_scenario(n, load=0.7) for n in COMPAT_SCENARIOS}
    return grid


# the exact optima solve to find out (their declaration): asked only where that is quick
_SOLVED_ON = ("sf-fig2", "sdsc-sp2", "generated 0", "003-random-2")


@pytest.mark.parametrize(
    "policy_id, params",
    [(pid, {}) for pid in registry.policy_ids(registry.ENGINE_MODELS)]
    + [
        ("msfq", {"ell": 3}),
        ("modified-bs", {"demands": "1,2"}),
        ("easy-backfilling", {"estimates": "requested"}),
        ("sjf-easy", {"estimates": "exact"}),
    ],
)
def test_every_policy_declares_the_workloads_its_prepare_refuses(policy_id, params) -> None:
    """supports() asks a registered policy's declaration (Policy.unsupported), never its prepare; so
    prepare must refuse exactly the workloads declared, with the same reason."""
    import numpy as np

    policy = registry.make_policy(policy_id, **params)
    refused = 0
    for name, wl in _support_grid().items():
        if policy_id.startswith("mdp-optimal") and name not in _SOLVED_ON:
            continue
        reason = registry.supports(policy, wl)
        try:
            policy.for_workload(wl).prepare(wl, np.random.default_rng(0))
        except ValueError as exc:
            assert reason == str(exc), (name, reason, str(exc))
            refused += 1
        else:
            assert reason is None, (name, reason)
    if policy_id in ("msfq", "compat-least-loaded", "mdp-optimal", "sjf", "modified-bs"):
        assert refused > 0  # the grid reaches the refusals it is meant to check


def test_supports_asks_a_declaring_policy_without_preparing_it(monkeypatch) -> None:
    from msj_gym.core import Policy
    from msj_gym.workloads.scenarios import load_scenario

    def no_prepare(self, workload, rng):
        raise AssertionError("prepared")

    sf, oa = load_scenario("sf-fig2").build(load=0.5), load_scenario("one-or-all").build(load=0.5)
    four = load_scenario("four-class").build(load=0.5)
    for pid in ("msfq", "server-filling-gittins", "easy-backfilling", "sjf"):
        monkeypatch.setattr(registry.policy_class(pid), "prepare", no_prepare)
    assert registry.supports("msfq", oa) is None
    assert "needs a one-or-all workload" in registry.supports("msfq", four)
    assert registry.supports("server-filling-gittins", sf) is None
    assert registry.supports("easy-backfilling", sf) is None
    assert "carries no requested times" in registry.supports("sjf", sf)

    class Declares(Policy):  # a policy of the user's own that declares: asked, not prepared
        policy_id = "declares"
        prepare = no_prepare  # type: ignore[assignment]

        def unsupported(self, workload):
            return None if workload.num_servers == 8 else "needs k = 8"

    assert registry.supports(Declares(), sf) is None
    assert registry.supports(Declares(), oa) == "needs k = 8"


def test_supports_prepares_a_policy_of_the_users_own_that_declares_nothing() -> None:
    from msj_gym.core import Policy
    from msj_gym.workloads.scenarios import load_scenario

    class Silent(Policy):
        policy_id = "silent"

        def prepare(self, workload, rng):
            if workload.num_servers != 8:
                raise ValueError("silent: needs k = 8")
            return super().prepare(workload, rng)

    assert registry.supports(Silent(), load_scenario("sf-fig2").build(load=0.5)) is None
    assert registry.supports(Silent(), load_scenario("one-or-all").build(load=0.5)) == "silent: needs k = 8"


def test_parameters_that_no_workload_could_accept_are_refused_with_the_policy() -> None:
    with pytest.raises(ValueError, match=r"^policy 'nmsr' parameter 'tau': expected a positive time"):
        registry.make_policy("nmsr", tau=-5.0)
    assert registry.make_policy("nmsr", tau=-1.0).param_values["tau"] == -1.0
