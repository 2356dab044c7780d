"""The structure figures the design keeps in check, measured on the package's source.

    python benchmarks/code_figures.py [--long 80] [--window 6] [--list] [--pairs]

Prints: lines of code outside the tests; functions longer than ``--long`` lines; pairs of places
sharing ``--window`` or more consecutive lines (blank lines, comments and docstrings left out,
whitespace normalised; a run of shared lines counts once per pair of places; ``--pairs`` lists
them); comparisons with a model's name (``"msj"``, ``"moldable"``, ``"compatibility"``, or the track
registry's constants that hold one, ``DEFAULT_MODEL`` and ``HEADLINE_MODEL``) and where they are
(``--list``, with the long functions); the import circles between msj_gym's modules (the layering
test's own count); ``MSJEnv``'s lines and keyword arguments.
"""

from __future__ import annotations

import argparse
import ast
import glob
import io
import sys
import tokenize
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "msj_gym"
MODEL_NAMES = frozenset({"msj", "moldable", "compatibility"})
MODEL_CONSTANTS = frozenset({"DEFAULT_MODEL", "HEADLINE_MODEL"})


def _names_a_model(node: ast.expr) -> bool:
    if isinstance(node, ast.Constant):
        return node.value in MODEL_NAMES
    name = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else None
    return name in MODEL_CONSTANTS


def _sources() -> list[Path]:
    # glob enters the links msj_gym/baselines and msj_gym/agents (to the top-level folders); rglob does not
    found = (Path(p) for p in glob.glob(str(PACKAGE / "**" / "*.py"), recursive=True))
    return sorted(p for p in found if "__pycache__" not in p.parts)


def _code_lines(path: Path) -> list[tuple[int, str]]:
    """(line number, normalised text) of the lines that hold code: no blank lines, comments or
    docstrings."""
    text = path.read_text()
    docstrings: set[int] = set()
    for node in ast.walk(ast.parse(text)):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr):
            value = body[0].value
            if isinstance(value, ast.Constant) and isinstance(value.value, str):
                docstrings.update(range(body[0].lineno, (body[0].end_lineno or body[0].lineno) + 1))
    comments: dict[int, int] = {}
    for tok in tokenize.generate_tokens(io.StringIO(text).readline):
        if tok.type == tokenize.COMMENT:
            comments[tok.start[0]] = tok.start[1]
    out = []
    for number, line in enumerate(text.splitlines(), 1):
        if number in docstrings:
            continue
        if number in comments:
            line = line[: comments[number]]
        line = " ".join(line.split())
        if line:
            out.append((number, line))
    return out


def long_functions(limit: int) -> list[tuple[str, int]]:
    found = []
    for path in _sources():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                length = (node.end_lineno or node.lineno) - node.lineno + 1
                if length > limit:
                    found.append((f"{path.relative_to(ROOT)}:{node.lineno} {node.name}", length))
    return sorted(found, key=lambda x: -x[1])


def shared_pairs(window: int) -> list[tuple[str, int, str, int, int]]:
    """Runs of ``window`` or more consecutive code lines that two places share: (file, first line,
    other file, its first line, code lines in the run), one per pair of places and run."""
    seen: dict[tuple[str, ...], list[tuple[str, int]]] = defaultdict(list)
    numbers: dict[str, list[int]] = {}
    for path in _sources():
        name = str(path.relative_to(ROOT))
        lines = _code_lines(path)
        numbers[name] = [n for n, _ in lines]
        texts = [t for _, t in lines]
        for i in range(len(texts) - window + 1):
            chunk = tuple(texts[i : i + window])
            if sum(len(t) for t in chunk) < 12 * window:  # closing brackets and one-word lines
                continue
            seen[chunk].append((name, i))
    pairs: set[tuple[str, int, str, int]] = set()
    for places in seen.values():
        for a in range(len(places)):
            for b in range(a + 1, len(places)):
                (fa, ia), (fb, ib) = places[a], places[b]
                if fa == fb and abs(ia - ib) < window:
                    continue
                pairs.add((fa, ia, fb, ib))
    # a run of k shared lines gives k - window + 1 windows: keep the run's first only, with its length
    runs = []
    for fa, ia, fb, ib in pairs:
        if (fa, ia - 1, fb, ib - 1) in pairs:
            continue
        length = 1
        while (fa, ia + length, fb, ib + length) in pairs:
            length += 1
        runs.append((fa, numbers[fa][ia], fb, numbers[fb][ib], length + window - 1))
    return sorted(runs)


def model_branches() -> list[str]:
    found = []
    for path in _sources():
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.Compare):
                continue
            for side in (node.left, *node.comparators):
                if _names_a_model(side):
                    found.append(f"{path.relative_to(ROOT)}:{node.lineno}")
                    break
    return found


def env_figures() -> tuple[int, int]:
    path = PACKAGE / "env" / "msj_env.py"
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and node.name == "MSJEnv":
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and item.name == "__init__":
                    args = item.args
                    count = len(args.args) - 1 + len(args.kwonlyargs)
                    return len(path.read_text().splitlines()), count
    raise SystemExit("MSJEnv.__init__ not found")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--long", type=int, default=80, help="a function longer than this counts (default 80)")
    ap.add_argument("--window", type=int, default=6, help="shared consecutive lines that count (default 6)")
    ap.add_argument("--list", action="store_true", help="list the long functions and the model branches")
    ap.add_argument("--pairs", action="store_true", help="list the shared runs: both places, shared lines")
    args = ap.parse_args(argv)
    for flag in ("long", "window"):
        if getattr(args, flag) < 1:
            ap.error(f"--{flag}: expected a positive integer, got {getattr(args, flag)}")
    sys.path.insert(0, str(ROOT / "tests"))
    from test_layering import _circles, _module_graph  # the layering test's own count

    lines = sum(len(p.read_text().splitlines()) for p in _sources())
    longs = long_functions(args.long)
    branches = model_branches()
    env_lines, env_kwargs = env_figures()
    circles = _circles(_module_graph(ROOT, "msj_gym"))
    pairs = shared_pairs(args.window)
    print(f"lines in msj_gym/                    {lines}")
    print(f"functions over {args.long} lines            {len(longs)}")
    print(f"pairs sharing {args.window}+ code lines        {len(pairs)}")
    print(f"comparisons with a model's name      {len(branches)}")
    print(f"import circles                       {len(circles)}")
    print(f"MSJEnv: lines, keyword arguments     {env_lines}, {env_kwargs}")
    if args.list:
        for name, length in longs:
            print(f"  {length:5d}  {name}")
        for where in branches:
            print(f"  model name at {where}")
    if args.pairs:
        for fa, la, fb, lb, length in pairs:
            print(f"  {length:5d}  {fa}:{la}  {fb}:{lb}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
