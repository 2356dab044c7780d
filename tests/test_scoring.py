"""msj_gym.scoring (``msj-gym score``), the evaluator for policy search: a policy written as the docs
show scores as the built-in it copies, run for run; a policy that starves a class scores 0; a broken
policy is refused in one line naming the spec and the step, and the caller goes on; the report is the
versioned JSON document. On a small suite (one or two points, two seeds, 1,000 arrivals), the disk
cache in a temporary folder."""

from __future__ import annotations

import json
import math
import textwrap
from pathlib import Path

import pytest

import msj_gym
from msj_gym.cli import main
from msj_gym.scoring import SCHEMA, PolicyRefused, builtin_ids, score

SUITE = {"points": "sf-fig2@0.7", "seeds": "5600-5601", "arrivals": 1000, "workers": 1}
TWO_POINTS = {**SUITE, "points": "sf-fig2@0.7,four-class@0.7"}

HEAD = """\
from msj_gym.core import Policy
from msj_gym.core.access import first_waiting, free_servers, next_waiting, num_servers, server_need, start
from msj_gym.core.jit import inline_jit
"""

SCAN_FIT = HEAD + textwrap.dedent(
    '''
    @inline_jit
    def _scan_fit(view, pdata, actions):
        free = free_servers(view)
        s = first_waiting(view)
        n = 0
        while s != -1:
            if server_need(view, s) <= free:
                n = start(actions, n, s)
                free -= server_need(view, s)
            s = next_waiting(view, s)
        return n


    class ScanFit(Policy):
        """Scan the queue in arrival order and start every job that fits (First-Fit, written again)."""

        policy_id = "scan-fit"
        reference = "my notes"
        kernel = _scan_fit
    '''
)

# never starts a job that needs every server: the others' response times are short, the queue grows
STARVE = HEAD + textwrap.dedent(
    '''
    @inline_jit
    def _starve(view, pdata, actions):
        free = free_servers(view)
        s = first_waiting(view)
        n = 0
        while s != -1:
            if server_need(view, s) <= free and server_need(view, s) < num_servers(view):
                n = start(actions, n, s)
                free -= server_need(view, s)
            s = next_waiting(view, s)
        return n


    class Starve(Policy):
        """First-Fit that never starts a job needing every server. Non-preemptive; size-oblivious."""

        policy_id = "starve"
        reference = "a starving example"
        kernel = _starve
    '''
)


def _kernel_policy(body: str, pid: str = "broken") -> str:
    """A module of one policy whose kernel is ``body`` (lines of a function body, unindented)."""
    lines = "".join(f"    {line}\n" for line in body.splitlines())
    return (
        f"{HEAD}\n\n@inline_jit\ndef _rule(view, pdata, actions):\n{lines}\n\n"
        f'class Rule(Policy):\n    """A broken example. Non-preemptive; size-oblivious."""\n\n'
        f'    policy_id = "{pid}"\n    reference = "broken"\n    kernel = _rule\n'
    )


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory):
    """The disk caches (the references' runs, the exact optima) in a folder of this module's."""
    mp = pytest.MonkeyPatch()
    folder = tmp_path_factory.mktemp("cache")
    mp.setenv("MSJ_GYM_CACHE", str(folder))
    yield folder
    mp.undo()


@pytest.fixture
def write(tmp_path: Path):
    def write(name: str, text: str) -> str:
        (tmp_path / name).write_text(text)
        return str(tmp_path / name)

    return write


def test_a_policy_written_again_scores_as_the_one_it_copies(cache, write) -> None:
    path = write("my_policy.py", SCAN_FIT)
    report = score([f"{path}:ScanFit", "first-fit", "fcfs"], **TWO_POINTS)
    mine, first_fit, fcfs = report.results
    assert mine.status == "scored" and mine.policy_id == "scan-fit" and mine.kind == "user, non-preemptive"
    # the same jobs for a seed (common random numbers): the same runs, the same scores, seed by seed
    # (a reference's own score is set to exactly 0 or 100, its copy's computed: equal up to rounding)
    assert [p.mean_response_time for p in mine.points] == [p.mean_response_time for p in first_fit.points]
    for a, b in zip(mine.points, first_fit.points, strict=True):
        assert a.scores == pytest.approx(b.scores, rel=1e-12)
    assert mine.score == pytest.approx(first_fit.score, rel=1e-12)
    # four-class has no exact optimum: its 100 is the best heuristic, First-Fit, on every seed
    scales = {s["scenario"]: s for s in report.scales}
    assert scales["four-class"]["high_ref"] == "first-fit"
    assert first_fit.points[1].scores == (100.0, 100.0)
    # sf-fig2 at 0.7: the exact optimum is the 100, so First-Fit scores below it, and FCFS, unstable, 0
    assert scales["sf-fig2"]["high_ref"].startswith("optimum")
    assert 0 < mine.points[0].score < 100
    assert fcfs.score == 0 and not fcfs.stable and "sf-fig2@0.7 (unstable)" in fcfs.flagged
    assert mine.score == pytest.approx((mine.points[0].score + 100.0) / 2)
    lo, hi = mine.score_ci95
    assert lo <= mine.score <= hi

    # the report: the versioned document
    doc = json.loads(report.to_json())
    assert doc["schema"] == SCHEMA == "msj-gym-score/1"
    assert doc["suite"].startswith("score-v1 (modified")  # two points of eight, two seeds, short runs
    assert doc["seeds"] == [5600, 5601] and doc["arrivals"] == 1000 and doc["warmup"] == 100
    assert [p["scenario"] for p in doc["points"]] == ["sf-fig2", "four-class"]
    result = doc["results"][0]
    assert set(result) == {
        "spec", "status", "policy_id", "kind", "params", "score", "score_ci95", "iqm", "iqm_ci95",
        "p_improve", "p_improve_ci95", "stable", "flagged", "seconds", "points",
    }  # fmt: skip
    point = {"scenario", "load", "score", "score_ci95", "scores", "mean_response_time", "flag"}
    assert set(result["points"][0]) == point
    assert result["score"] == round(mine.score, 4) and doc["results"][2]["flagged"] == fcfs.flagged
    assert msj_gym.score is score and msj_gym.ScoreReport is type(report)


def test_a_starving_policy_scores_zero(cache, write) -> None:
    path = write("starve.py", STARVE)
    report = score([f"{path}:Starve", "first-fit"], **SUITE)
    starve, first_fit = report.results
    (mine,) = starve.points
    assert mine.flag == "unstable" and mine.scores == (0.0, 0.0)  # whatever its mean says
    assert starve.score == 0 < first_fit.score and not starve.stable
    assert starve.flagged == ["sf-fig2@0.7 (unstable)"]


@pytest.mark.parametrize(
    ("text", "needles"),
    [
        ("class Rule(:\n", ["importing and making it failed", "SyntaxError"]),
        ("import no_such_module_anywhere\n", ["importing and making it failed", "no_such_module_anywhere"]),
        (
            SCAN_FIT
            + "\n\nclass Rule(ScanFit):\n    def __init__(self, **kw):\n        raise RuntimeError('boom')\n",
            ["importing and making it failed", "RuntimeError: boom"],
        ),
        ("Rule = 3\n", ["importing and making it failed", "expected a Policy class or instance, got int"]),
        pytest.param(
            "while True:\n    pass\n",
            ["importing and making it did not finish within 3 s (time_limit)"],
            marks=pytest.mark.slow,
        ),
        ("import ctypes\nctypes.string_at(0)\n", ["importing and making it crashed the process", "SIGSEGV"]),
        (
            _kernel_policy("x = 0\nwhile x >= 0:\n    x = (x + 1) % 7\nreturn 0"),
            ["vetting it on sf-fig2 at load 0.7", "check_policy('broken')", "did not finish within 3 s"],
        ),
        pytest.param(
            _kernel_policy("actions[actions.size + 3] = 0\nreturn 0"),
            ["vetting it on sf-fig2", "IndexError"],
            marks=pytest.mark.slow,
        ),
        (  # starts the oldest job whether or not it fits
            _kernel_policy("s = first_waiting(view)\nreturn 0 if s == -1 else start(actions, 0, s)"),
            ["vetting it on sf-fig2", "the native run in debug mode failed"],
        ),
        pytest.param(
            _kernel_policy("return 0", pid="Not Kebab"),
            ["policy_id must be kebab-case"],
            marks=pytest.mark.slow,
        ),
    ],
    ids=[
        "syntax",
        "import",
        "constructor",
        "not-a-policy",
        "hangs",
        "crashes",
        "endless-kernel",
        "far-write",
        "overfill",
        "declarations",
    ],
)
def test_a_broken_policy_is_refused_in_one_line_and_the_caller_goes_on(cache, write, text, needles) -> None:
    spec = write("broken.py", text) + ":Rule"
    with pytest.raises(PolicyRefused) as info:
        score(spec, **SUITE, time_limit=3)
    line = str(info.value)
    assert line.startswith(f"score {spec!r}: ") and "\n" not in line
    for needle in needles:
        assert needle in line, (needle, line)


def test_in_a_list_a_refused_policy_is_recorded_and_the_others_scored(cache, write) -> None:
    broken = write("broken.py", "class Rule(:\n") + ":Rule"
    good = write("good.py", SCAN_FIT) + ":ScanFit"
    report = score([broken, good], **SUITE)
    assert [r.status for r in report.results] == ["refused", "scored"]
    assert report.results[0].to_dict() == {
        "spec": broken,
        "status": "refused",
        "error": report.results[0].error,
        "score": None,
    }
    assert "SyntaxError" in str(report.results[0].error)


def test_the_child_imports_a_file_afresh(write, monkeypatch) -> None:
    import sys

    from msj_gym.scoring import _load, _target

    monkeypatch.setattr(sys, "path", list(sys.path))  # _load, meant for the child, puts its folder first
    monkeypatch.setitem(sys.modules, "edited", None)  # and imports it as `edited`: undone after the test
    del sys.modules["edited"]
    path = write("edited.py", SCAN_FIT)
    assert _load(_target(f"{path}:ScanFit", {})).policy_id == "scan-fit"
    write("edited.py", SCAN_FIT.replace('"scan-fit"', '"scan-fit-edited"'))
    assert _load(_target(f"{path}:ScanFit", {})).policy_id == "scan-fit-edited"


@pytest.mark.slow
def test_an_edited_file_is_scored_as_it_is_now(cache, write) -> None:
    path = write("edited.py", SCAN_FIT)
    before = score(f"{path}:ScanFit", **SUITE).score
    write("edited.py", STARVE.replace("class Starve", "class ScanFit"))
    assert score(f"{path}:ScanFit", **SUITE).score == 0 < before


@pytest.mark.slow
def test_a_policy_object_and_its_parameters(cache) -> None:
    from msj_gym.registry import make_policy, policy_class

    by_id = score("server-filling", params={"packing": "greedy"}, **SUITE)
    by_object = score(make_policy("server-filling", packing="greedy"), **SUITE)
    by_class = score(policy_class("server-filling"), params={"packing": "greedy"}, **SUITE)
    assert by_id.results[0].kind == "preemptive"  # not the references' kind: scored, never a reference
    assert by_id.results[0].params == by_object.results[0].params == {"packing": "greedy"}
    assert by_object.results[0].spec.endswith(":ServerFilling(packing='greedy')")
    # preemptive: above the non-preemptive optimum
    assert by_id.score == by_object.score == by_class.score > 100


def test_the_command_prints_the_document_and_exits_1_on_a_refusal(cache, write, capsys) -> None:
    good = write("good.py", SCAN_FIT) + ":ScanFit"
    flags = ["--points", SUITE["points"], "--seeds", SUITE["seeds"], "--arrivals", "1000", "--workers", "1"]
    score("first-fit", **SUITE)  # the references of the suite, made here if no test before made them
    capsys.readouterr()
    assert main(["score", good, *flags, "--compact"]) == 0
    captured = capsys.readouterr()
    out = captured.out
    assert len(out.splitlines()) == 1 and json.loads(out)["results"][0]["policy_id"] == "scan-fit"
    assert "running the" not in captured.err  # the references of this suite were made once, and cached
    assert list((cache / "score").glob("references-*.json"))
    broken = write("broken.py", "class Rule(:\n") + ":Rule"
    assert main(["score", broken, good, *flags]) == 1
    captured = capsys.readouterr()
    assert [r["status"] for r in json.loads(captured.out)["results"]] == ["refused", "scored"]
    errors = [line for line in captured.err.splitlines() if line.startswith("msj-gym: error:")]
    assert len(errors) == 1 and f"score {broken!r}" in errors[0] and "SyntaxError" in errors[0]


def test_builtin_scores_every_built_in_policy_of_the_suite(cache) -> None:
    ids = builtin_ids("sf-fig2@0.7")
    assert "first-fit" in ids and "server-filling" in ids and "mdp-optimal" not in ids
    assert "sjf" not in ids  # it reads requested times: no point of the suite has them
    report = score(ids, **SUITE)
    assert [r.spec for r in report.results] == ids
    assert all(r.status == "scored" and math.isfinite(r.score) for r in report.results)
    by = {r.spec: r for r in report.results}
    assert by["fcfs"].score == 0 and by["server-filling"].score > 100 > by["first-fit"].score > 0


def test_a_file_named_as_an_installed_module_is_refused_and_a_users_same_name_is_not(
    tmp_path, monkeypatch
) -> None:
    import sys
    import types

    from msj_gym.scoring import _target

    shadow = tmp_path / "json.py"
    shadow.write_text(SCAN_FIT)
    with pytest.raises(ValueError, match=r"the module name 'json' .* is taken by .*json.*; rename the file"):
        _target(f"{shadow}:ScanFit", {})
    # a module of the same stem from another folder of the user's (an earlier test, another policy.py)
    other = tmp_path / "elsewhere"
    other.mkdir()
    earlier = types.ModuleType("policy")
    earlier.__file__ = str(other / "policy.py")
    monkeypatch.setitem(sys.modules, "policy", earlier)
    mine = tmp_path / "policy.py"
    mine.write_text(SCAN_FIT)
    assert _target(f"{mine}:ScanFit", {}).how == "file"
