"""Every code block of the documentation (README.md and docs/) either runs here, at a small size where
its own is large, with its output compared where the page shows it, or says in a comment how long it
takes and what it needs (a ``#`` comment with a duration such as ``14 min`` and the word ``needs``).

A block is run by a recipe below, found by its page and its first line; the recipe names the text to
replace for a small size (each replacement must apply, so a recipe cannot silently run something else
than the page shows). Blocks of one page run in the page's order, in one folder: a block whose first
line is ``# NAME.py`` is that file (``# NAME.py (continued)`` adds to it), which later blocks import.
A block that includes an example of ``examples/`` (``--8<--``) is run by its test in
``tests/integrations/``; a page whose every block another test runs as written is left to that test
(:data:`RUN_ELSEWHERE`). ``text`` blocks are output: one that follows a block run as shown, and shows
``$ COMMAND`` lines, must match what each command printed (a line ``...`` stands for any lines, a line
ending in ``...`` for any line that starts with what precedes it). The ``msj-gym`` commands of the
blocks that do not run here are parsed by the CLI's parser, so the flags they name exist."""

from __future__ import annotations

import contextlib
import io
import re
import shlex
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
FENCE = re.compile(r"^(?P<indent> *)```(?P<lang>[\w-]*)[^\n]*\n(?P<body>.*?)^(?P=indent)```", re.S | re.M)
DURATION = re.compile(r"\b(?:\d[\d.,]*|a few|over \d+)\s?(?:ms|s|seconds?|min|minutes?|h|hours?)\b")


@dataclass
class Block:
    page: str
    line: int
    lang: str
    body: str

    @property
    def first(self) -> str:
        return next((x.strip() for x in self.body.splitlines() if x.strip()), "")

    def where(self) -> str:
        return f"{self.page}:{self.line}"


@dataclass
class Recipe:
    """How a block runs: ``replace`` maps text of the block to what runs instead (``{tmp}`` is the
    page's folder); ``expect``, text each command's or the block's output must hold; ``compare``, that
    the page's output block shows what it printed."""

    replace: dict[str, str] = field(default_factory=dict)
    expect: tuple[str, ...] = ()
    compare: bool = False


QUICK_LEADERBOARD = Recipe(
    replace={"msj-gym leaderboard": "msj-gym leaderboard --quick --loads 0.7 --workers 1 --out {tmp}/lb"},
    expect=("sf-fig2  load 0.7  (2 seeds x 2000 arrivals", "server-filling-srpt"),
)
ENV_EPISODE = Recipe(expect=("mean response time", "measured jobs        1000"))

# (page, the block's first line): how it runs
RECIPES: dict[tuple[str, str], Recipe] = {
    ("README.md", "msj-gym leaderboard"): QUICK_LEADERBOARD,
    ("README.md", "import gymnasium as gym"): ENV_EPISODE,
    ("docs/leaderboard.md", "msj-gym leaderboard"): QUICK_LEADERBOARD,
    ("docs/environments.md", "import gymnasium as gym"): ENV_EPISODE,
    ("docs/environments.md", "import gymnasium as gym#2"): Recipe(),
    ("docs/environments.md", "import gymnasium as gym#3"): Recipe(expect=("0.7866",)),
    ("docs/environments.md", "from msj_gym.env.msj_env import EnvOptions, MSJEnv"): Recipe(),
    (
        "docs/getting-started.md",
        "msj-gym simulate --scenario sf-fig2 --policy server-filling --load 0.9 --arrivals 200000",
    ): Recipe(compare=True),
    ("docs/getting-started.md", "from msj_gym import Simulator, load_scenario, simulate"): Recipe(
        replace={"num_arrivals=10**6": "num_arrivals=20_000", "num_arrivals=200_000": "num_arrivals=20_000"},
        expect=("mean response time", "server-filling-srpt"),
    ),
    ("docs/hpc.md", "import json"): Recipe(),
    (
        "docs/papers/002-moldable.md",
        "from msj_gym.moldable import SUB_LINEAR, MoldableSystem, simulate_moldable",
    ): Recipe(replace={"num_arrivals=1_000_000": "num_arrivals=20_000"}, expect=("blocking",)),
    ("docs/papers/003-balanced-fairness.md", "from msj_gym.baselines import make_policy"): Recipe(
        replace={"num_arrivals=10**6": "num_arrivals=10_000"}
    ),
    ("docs/scenarios.md", 'name = "my-cluster"'): Recipe(),
    ("docs/leaderboard.md", "from pathlib import Path"): Recipe(
        replace={
            "seeds=(0, 1, 2))": "seeds=(0,), arrivals=5000)",
            'Path("moldable-lb"))': 'Path("moldable-lb"), workers=1, progress=False)',
        },
        expect=("002-sub-linear-mean-field  n = 1000", "LP optimum (n -> infinity)", "moldable-p-scheme"),
    ),
}


# Pages whose every block another test runs as written: (test file, test name).
RUN_ELSEWHERE = {
    "docs/write-your-own.md": ("tests/test_user_policies.py", "test_the_docs_walk_runs_end_to_end"),
}


def page_blocks(page: Path) -> list[Block]:
    text = page.read_text()
    name = str(page.relative_to(ROOT))
    return [
        Block(name, text[: m.start()].count("\n") + 1, m["lang"], m["body"]) for m in FENCE.finditer(text)
    ]


def recipe_key(block: Block, seen: dict[tuple[str, str], int]) -> tuple[str, str]:
    """The block's key in :data:`RECIPES`: its page and first line, with ``#N`` for the N-th block of
    the page that starts with the same line."""
    key = (block.page, block.first)
    seen[key] = seen.get(key, 0) + 1
    return key if seen[key] == 1 else (block.page, f"{block.first}#{seen[key]}")


def is_marked(block: Block) -> bool:
    comments = "\n".join(line.partition("#")[2] for line in block.body.splitlines() if "#" in line)
    return bool(DURATION.search(comments)) and re.search(r"\bneeds\b", comments) is not None


def file_name(block: Block) -> str | None:
    """``NAME.py`` when the block is that file (its first line ``# NAME.py``, maybe ``(continued)``)."""
    m = re.fullmatch(r"#\s*(\w+\.py)(\s*\(continued\))?", block.first)
    return m[1] if m else None


def output_matches(shown: list[str], printed: list[str]) -> bool:
    """Does the page's output (``shown``) match what was printed? ``...`` alone stands for any lines,
    a line ending in ``...`` for a line that starts with the rest."""
    shown = [x.rstrip() for x in shown]
    printed = [x.rstrip() for x in printed]

    def match(i: int, j: int) -> bool:
        if i == len(shown):
            return j == len(printed)
        if shown[i] == "...":
            return any(match(i + 1, k) for k in range(j, len(printed) + 1))
        if j == len(printed):
            return False
        line = shown[i]
        ok = printed[j].startswith(line[:-3].rstrip()) if line.endswith("...") else printed[j] == line
        return ok and match(i + 1, j + 1)

    return match(0, 0)


def shown_outputs(block: Block) -> dict[str, list[str]]:
    """The ``$ COMMAND`` sections of an output block: command (its comment dropped) -> lines shown."""
    out: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in block.body.splitlines():
        if line.startswith("$ "):
            command = line[2:].partition("  #")[0].strip()
            current = out.setdefault(command, [])
        elif current is not None:
            current.append(line)
    for lines in out.values():
        while lines and not lines[-1].strip():
            lines.pop()
    return out


def run_command(command: str) -> str:
    """``msj-gym ...`` in this process: what it printed (stdout)."""
    from msj_gym.cli import main

    argv = shlex.split(command)
    assert argv[0] == "msj-gym", f"only msj-gym commands run here, got {command!r}"
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        code = main(argv[1:])
    assert code == 0, f"{command!r} exited with {code}"
    return buffer.getvalue()


def run_python(code: str, where: str) -> str:
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        exec(compile(code, where, "exec"), {"__name__": "__docs__"})
    return buffer.getvalue()


def applied(block: Block, recipe: Recipe, tmp: Path) -> str:
    body = block.body
    for old, new in recipe.replace.items():
        assert old in body, f"{block.where()}: the recipe replaces {old!r}, which the block no longer has"
        body = body.replace(old, new.format(tmp=tmp))
    return body


def run_block(block: Block, recipe: Recipe, tmp: Path) -> tuple[str, dict[str, str]]:
    """Run ``block`` as ``recipe`` says: its output, and per command what each printed (a shell block)."""
    body = applied(block, recipe, tmp)
    printed: dict[str, str] = {}
    if block.lang in ("python", "py"):
        out = run_python(body, block.where())
    elif block.lang == "toml":
        from msj_gym.workloads.scenarios import load_scenario

        (tmp / "block.toml").write_text(body)
        workload = load_scenario(str(tmp / "block.toml")).build()
        out = f"{workload.num_servers} servers, {len(workload.classes)} classes"
    else:
        for line in body.replace("\\\n", " ").splitlines():
            command = line.partition("  #")[0].strip()
            if command and not command.startswith("#"):
                printed[command] = run_command(command)
        out = "".join(printed.values())
    for text in recipe.expect:
        assert text in out, f"{block.where()}: expected {text!r} in its output:\n{out[-3000:]}"
    return out, printed


def check_output(block: Block, printed: dict[str, str]) -> list[str]:
    """What an output block shows that its commands did not print."""
    problems = []
    for command, lines in shown_outputs(block).items():
        if command not in printed:
            problems.append(f"{block.where()}: shows {command!r}, which the block before does not run")
        elif not output_matches(lines, printed[command].splitlines()):
            problems.append(
                f"{block.where()}: the page shows for {command!r}\n"
                + "\n".join(lines)
                + f"\n\nbut it prints\n{printed[command]}"
            )
    return problems


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_block_runs_or_is_marked(page: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    name = str(page.relative_to(ROOT))
    if name in RUN_ELSEWHERE:
        test_file, test = RUN_ELSEWHERE[name]
        assert f"def {test}(" in (ROOT / test_file).read_text(), f"{name}: {test_file}::{test} is gone"
        return
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    modules = set(sys.modules)
    seen: dict[tuple[str, str], int] = {}
    problems: list[str] = []
    printed: dict[str, str] | None = None  # per command, of the block just run as shown
    try:
        for block in page_blocks(page):
            key = recipe_key(block, seen)
            recipe = RECIPES.get(key)
            name = file_name(block)
            if block.lang == "text":
                if printed is not None:
                    problems += check_output(block, printed)
            elif name is not None:
                with (tmp_path / name).open("a") as f:
                    f.write(block.body)
            elif block.first == "--8<--":
                stem = Path(block.body.split()[1]).stem
                tests = (ROOT / "tests" / "integrations").glob("test_*.py")
                if not any(stem in t.read_text() for t in tests):
                    problems.append(
                        f"{block.where()}: examples/{stem}.py is run by no test in tests/integrations"
                    )
            elif recipe is not None:
                by_command = run_block(block, recipe, tmp_path)[1]
                printed = by_command if recipe.compare else None
                continue
            elif not is_marked(block):
                problems.append(
                    f"{block.where()}: a {block.lang or 'plain'} block that neither runs here (no recipe for "
                    f"{key!r}) nor says in a comment how long it takes and what it needs"
                )
            printed = None
    finally:
        for module in set(sys.modules) - modules:
            if module.startswith("my_"):
                del sys.modules[module]
    assert not problems, "\n".join(problems)


def marked_commands() -> list[tuple[str, str]]:
    """``msj-gym`` commands of the blocks that do not run here (marked, or run by another test): (where,
    command), continuation lines joined and trailing comments dropped."""
    out = []
    for page in PAGES:
        seen: dict[tuple[str, str], int] = {}
        for block in page_blocks(page):
            if block.lang not in ("bash", "sh") or recipe_key(block, seen) in RECIPES:
                continue
            for line in block.body.replace("\\\n", " ").splitlines():
                command = line.partition("  #")[0].strip().removeprefix("time ")
                if command.startswith("msj-gym "):
                    out.append((block.where(), command))
    return out


def test_the_commands_of_marked_blocks_parse() -> None:
    """A block too long to run here still names flags that exist: each of its ``msj-gym`` commands is
    parsed (not run) by the CLI's own parser."""
    from msj_gym.arguments import UsageError
    from msj_gym.cli import _parser

    commands = marked_commands()
    assert len(commands) > 20
    problems = []
    for where, command in commands:
        err = io.StringIO()
        try:
            with contextlib.redirect_stderr(err):
                _parser().parse_args(shlex.split(command)[1:])
        except (UsageError, SystemExit) as e:
            problems.append(f"{where}: {command}\n  {e} {err.getvalue().strip()}")
    assert not problems, "\n".join(problems)


def test_every_recipe_finds_its_block() -> None:
    keys = set()
    for page in PAGES:
        seen: dict[tuple[str, str], int] = {}
        keys |= {recipe_key(b, seen) for b in page_blocks(page)}
    stale = sorted(set(RECIPES) - keys)
    assert not stale, f"recipes for blocks no page has (edit the recipe with the page): {stale}"


def test_the_output_matcher() -> None:
    assert output_matches(["a", "...", "d"], ["a", "b", "c", "d"])
    assert output_matches(["a", "b..."], ["a", "bcd"])
    assert not output_matches(["a", "b"], ["a", "c"])
    assert not output_matches(["a"], ["a", "b"])
