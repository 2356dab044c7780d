import json

import pytest

from msj_gym.cli import main


def test_simulate_json_contract(capsys):
    code = main(
        [
            "simulate",
            "--scenario",
            "sf-fig2",
            "--policy",
            "server-filling",
            "--load",
            "0.8",
            "--arrivals",
            "20000",
            "--seed",
            "3",
            "--json",
        ]
    )
    assert code == 0
    out = json.loads(capsys.readouterr().out)
    for key in (
        "mean_response_time",
        "ci95_half_width",
        "per_class",
        "weighted_mean_response_time",
        "utilization",
        "p_wait",
        "preemptions_per_job",
        "stable",
    ):
        assert key in out
    assert set(out["per_class"]) == {"need-1", "need-8"}
    assert out["stable"] is True and out["preemptions_per_job"] > 0
    assert out["provenance"]["seed"] == 3 and out["provenance"]["policy"]["id"] == "server-filling"


def test_simulate_table_with_k_params_and_file(tmp_path, capsys):
    scenario = tmp_path / "mine.toml"
    scenario.write_text(
        'name = "mine"\nnum_servers = 4\nload = 0.5\n[[classes]]\nserver_need = 2\nprobability = 1\n'
        'service_time = { distribution = "deterministic", value = 1 }\n'
    )
    assert (
        main(
            [
                "simulate",
                "--scenario",
                str(scenario),
                "--policy",
                "easy-backfilling",
                "--k",
                "8",
                "--arrivals",
                "5000",
                "--policy-param",
                "estimate_factor=0.5",
            ]
        )
        == 0
    )
    text = capsys.readouterr().out
    assert "k=8" in text and "mean response time" in text


def test_list(capsys):
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    assert "sf-fig2" in out and "server-filling-gittins" in out and "estimate_factor" in out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--scenario", "nope", "--policy", "fcfs"], "unknown scenario 'nope'"),
        (["--scenario", "sf-fig2", "--policy", "nope"], "unknown policy 'nope'"),
        (["--scenario", "sf-fig2", "--policy", "fcfs", "--load", "-1"], "load: expected a positive"),
        (
            ["--scenario", "four-class", "--policy", "fcfs", "--k", "4"],
            "server_need: 5 exceeds num_servers = 4",
        ),
        (["--scenario", "sf-fig2", "--policy", "fcfs", "--policy-param", "x"], "expected NAME=VALUE"),
        (["--scenario", "sf-fig2", "--policy", "fcfs", "--arrivals", "1"], "num_arrivals: expected"),
    ],
)
def test_bad_input_exits_2_with_a_message(argv, message, capsys):
    assert main(["simulate", *argv]) == 2
    assert message in capsys.readouterr().err


def test_unstable_run_says_so(capsys):
    assert (
        main(
            [
                "simulate",
                "--scenario",
                "sf-fig2",
                "--policy",
                "fcfs",
                "--load",
                "1.1",
                "--arrivals",
                "3000",
                "--json",
            ]
        )
        == 0
    )
    out = json.loads(capsys.readouterr().out)
    assert out["stable"] is False and "offered load" in out["stability_note"]


def test_unstable_table_leads_with_the_warning(capsys):
    assert (
        main(
            ["simulate", "--scenario", "sf-fig2", "--policy", "fcfs", "--load", "0.7", "--arrivals", "30000"]
        )
        == 0
    )
    lines = capsys.readouterr().out.splitlines()
    assert lines[1].startswith("UNSTABLE: queue keeps growing")
    assert lines[2].endswith("<- not a steady-state value")


def test_optimal_prints_the_optimum_and_the_heuristics(tmp_path, capsys) -> None:
    png = tmp_path / "policy.png"
    assert main(["optimal", "--scenario", "sf-fig2", "--load", "0.5", "--json", "--png", str(png)]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["mean_response_time"] < out["heuristics"]["msf"]["mean_response_time"]
    assert out["blocked"][0] < 1e-6 and out["buffer_check"]["relative_change"] < 1e-4
    assert out["structure"] and png.stat().st_size > 10_000
    assert main(["optimal", "--scenario", "sf-fig2", "--load", "0.5", "--preemptive"]) == 0
    text = capsys.readouterr().out
    assert "optimal mean response time" in text and "msf-preemptive" in text
    assert main(["optimal", "--scenario", "bs-fig1"]) == 2
    assert "max_states" in capsys.readouterr().err


def test_optimal_says_where_it_is_and_its_solve_is_reused(tmp_path, monkeypatch, capsys) -> None:
    import msj_gym.analysis.solutions as solved_tables
    from msj_gym import load_scenario

    monkeypatch.setenv("MSJ_GYM_CACHE", str(tmp_path))
    assert main(["optimal", "--scenario", "sf-fig2", "--load", "0.5", "--json"]) == 0
    res = capsys.readouterr()
    out = json.loads(res.out)
    assert "policy iteration 1" in res.err and "buffers" in res.err
    assert main(["optimal", "--scenario", "sf-fig2", "--load", "0.5", "--quiet"]) == 0
    assert "policy iteration" not in capsys.readouterr().err
    # mdp-optimal reads the CLI's solve from the cache, even below its own state limit
    monkeypatch.setattr(solved_tables, "_SOLVED", {})

    def solve_again(*_args: object, **_kw: object) -> None:
        raise AssertionError("solved again")

    monkeypatch.setattr("msj_gym.analysis.optimal.solve_optimal", solve_again)
    table = solved_tables.solved_table(load_scenario("sf-fig2").build(load=0.5), False, max_states=10)
    assert table["value"]["mean_response_time"] == out["mean_response_time"]


def test_list_every_model(capsys):
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    for text in ("compatibility scenarios:", "003-tree-symmetric", "balanced-fair", "moldable policies:"):
        assert text in out
    assert "moldable-reserved" in out and "002-sub-linear-mean-field" in out
    assert out.index("policies:") < out.index("compatibility scenarios:")  # the MSJ part comes first
    assert main(["list", "--model", "compatibility"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("compatibility scenarios:") and "fcfs" in out and "balanced-fair" in out
    assert "sf-fig2" not in out and "msfq" not in out and "moldable" not in out


def test_simulate_compatibility_scenario(capsys):
    argv = ["simulate", "--scenario", "003-tree-symmetric", "--policy", "compat-fcfs", "--load", "0.6"]
    assert main([*argv, "--arrivals", "3000", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["scenario"] == "003-tree-symmetric" and out["policy"] == "compat-fcfs"
    assert abs(out["offered_load"] - 0.6) < 1e-9 and out["num_measured"] == 2700


def test_simulate_moldable_system(capsys):
    argv = ["simulate", "--scenario", "002-sub-linear-mean-field", "--policy", "moldable-p-scheme"]
    assert main([*argv, "--k", "50", "--arrivals", "3000"]) == 0
    out = capsys.readouterr().out
    assert "n=50" in out and "blocking probability" in out


@pytest.mark.parametrize(
    ("scenario", "policy", "message"),
    [
        ("003-tree-symmetric", "msf", "--policy: 'msf' is not defined on the compatibility model"),
        ("sf-fig2", "balanced-fair", "--policy: 'balanced-fair' is not defined on the msj model"),
        ("sf-fig2", "moldable-greedy", "--policy: 'moldable-greedy' is not defined on the msj model"),
        ("002-linear-mean-field", "fcfs", "--policy: 'fcfs' is not defined on the moldable model"),
    ],
)
def test_policy_of_another_model_is_refused(scenario, policy, message, capsys):
    assert main(["simulate", "--scenario", scenario, "--policy", policy]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_every_help_text_renders_its_percent_signs() -> None:
    # argparse %-formats an option's help but prints a description as written: "%%" must not show
    import argparse

    from msj_gym.cli import _parser

    parser = _parser()
    subs = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    texts = {name: p.format_help() for name, p in subs.choices.items()} | {"msj-gym": parser.format_help()}
    assert not [name for name, text in texts.items() if "%%" in text]
    assert "95% CIs" in texts["benchmark"].replace("\n", " ").replace("  ", " ")


def _subcommands() -> dict:
    import argparse

    from msj_gym.cli import _parser

    parser = _parser()
    subs = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(subs.choices)


def test_every_subcommand_describes_itself_and_its_defaults() -> None:
    subs = _subcommands()
    undescribed = sorted(name for name, p in subs.items() if not (p.description or "").strip())
    assert not undescribed, f"subcommands without a description in their --help: {undescribed}"
    flat = {name: " ".join(p.format_help().split()) for name, p in subs.items()}
    assert "module:Class" in flat["render"]
    assert "(default: local)" in flat["leaderboard"]  # a default its help text did not give itself
    assert "(default: [])" not in flat["leaderboard"]  # a repeatable option given none shows nothing


@pytest.mark.parametrize(
    ("script", "shown"),
    [
        (
            "improve",
            ["--decisions DECISIONS decisions compared per round (default: 30000)", "(default: sf-fig2)"],
        ),
        ("evaluate", ["--arrivals ARRIVALS arrivals per run (default: 20000)"]),
        ("train", ["(default: maskable-ppo)"]),
    ],
)
def test_the_agents_scripts_show_their_defaults(script, shown, capsys) -> None:
    import importlib

    module = importlib.import_module(f"msj_gym.agents.{script}")
    with pytest.raises(SystemExit):
        module.main(["--help"])
    text = " ".join(capsys.readouterr().out.split())
    for piece in shown:
        assert piece in text


def test_leaderboard_quick_is_a_small_smoke_run(tmp_path, capsys) -> None:
    out = tmp_path / "lb"
    argv = ["leaderboard", "--quick", "--policies", "fcfs,msf", "--loads", "0.7", "--workers", "1"]
    assert main([*argv, "--out", str(out)]) == 0
    assert "sf-fig2  load 0.7  (2 seeds x 2000 arrivals, 200 warm-up)" in capsys.readouterr().out
    assert main([*argv, "--seeds", "3", "--out", str(out)]) == 2
    assert "--quick: sets --seeds (2); give one or the other" in capsys.readouterr().err


def test_install_hints_fit_how_msj_gym_was_installed(tmp_path, monkeypatch) -> None:
    from msj_gym import extras

    checkout = tmp_path / "checkout"
    (checkout / "msj_gym").mkdir(parents=True)
    (checkout / "pyproject.toml").write_text("")
    wheel = tmp_path / "site-packages"
    (wheel / "msj_gym").mkdir(parents=True)
    monkeypatch.chdir(tmp_path)
    assert extras.install_hint("rl", checkout / "msj_gym") == f"pip install -e '{checkout}[rl]'"
    assert extras.install_hint("rl", wheel / "msj_gym") == "pip install 'msj-gym[rl]'"
    monkeypatch.chdir(checkout)
    assert extras.install_hint("plot", checkout / "msj_gym") == "pip install -e '.[plot]'"
    # this checkout: an editable install
    assert extras.install_hint("rl").startswith("pip install -e '")
