"""Every package of the project sits on a floor and imports only from floors below its own: no arrow runs
back up and no two packages import each other, imports inside functions included; and no module imports
itself round a circle, inside a package as between packages. The library reaches
the policies (``msj_gym.baselines``) and the shipped agents (``msj_gym.agents``) only through
:mod:`msj_gym.registry`, which names them by strings; the policies never import the agents. Checked on
the source."""

from __future__ import annotations

import ast
import glob
from pathlib import Path

import pytest

import msj_gym

ROOT = Path(msj_gym.__file__).resolve().parent.parent

# The units of msj_gym (a subpackage or a top-level module), bottom floor first. A unit imports only
# units of lower floors (and itself); the project's other packages import msj_gym from above.
FLOORS: dict[str, int] = {
    "_lazy": -1,  # how a package imports its names when first asked for: under every package
    "extras": -1,  # how to install an optional extra: under every package that names one
    "arguments": 0,
    "atomic": 0,
    "metrics": 0,
    "registration": 0,
    "trust": 0,
    "workloads": 0,
    "core": 1,
    "analysis": 2,
    "native": 2,
    "registry": 2,
    "moldable": 3,
    "pooled": 3,
    "guard": 3,
    "api": 4,
    "env": 4,
    "experiments": 5,
    "testing": 5,
    "scoring": 6,  # the evaluator for policy search: the benchmark's scoring and testing's guard
    "__init__": 7,  # the package's front door: what `import msj_gym` gives
    "cli": 8,
    "__main__": 9,
}
# The policies and the agents: above the library, which reaches them by strings (the registry's)
OTHERS = ("baselines", "agents")


def _module_of(path: Path) -> list[str]:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return parts[:-1] if parts[-1] == "__init__" else parts


def _imported(path: Path, package: list[str] | None = None, root: Path = ROOT) -> list[tuple[int, str]]:
    """Every module ``path`` imports, relative imports resolved against its package (by default where
    the file stands in the project); ``from pkg import name`` counts as ``pkg.name`` where ``name`` is a
    module of the project (the tree at ``root``), else as ``pkg``."""
    if package is None:
        module = _module_of(path)
        package = module if path.name == "__init__.py" else module[:-1]
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = (
                (node.module or "").split(".")
                if node.level == 0
                else package[: len(package) - node.level + 1]
            )
            if node.level and node.module:
                base = [*base, *node.module.split(".")]
            for alias in node.names:
                sub = [*base, alias.name]
                is_module = (root.joinpath(*sub).with_suffix(".py")).exists() or root.joinpath(*sub).is_dir()
                found.append((node.lineno, ".".join(sub if is_module else base)))
    return found


def _unit(module: str) -> str | None:
    """The msj_gym unit a module belongs to (``"__init__"`` for the package itself), or None outside."""
    parts = module.split(".")
    if parts[0] != "msj_gym":
        return None
    return "__init__" if len(parts) == 1 else parts[1]


def _sources(package: str, root: Path = ROOT) -> list[Path]:
    """The source files under ``root / package``, named as the package imports them: through
    ``msj_gym/baselines`` and ``msj_gym/agents``, links to the top-level folders (``Path.rglob`` does not
    enter a link; ``glob`` does)."""
    return sorted(Path(p) for p in glob.glob(str(root / package / "**" / "*.py"), recursive=True))


def _unit_of_file(path: Path) -> str:
    rel = path.relative_to(ROOT / "msj_gym")
    return rel.parts[0] if len(rel.parts) > 1 else rel.stem


def _library() -> list[Path]:
    return [p for p in _sources("msj_gym") if _unit_of_file(p) not in OTHERS]


def test_every_unit_of_msj_gym_has_a_floor() -> None:
    units = {_unit_of_file(p) for p in _library()}
    assert units == set(FLOORS), f"new: {sorted(units - set(FLOORS))}, gone: {sorted(set(FLOORS) - units)}"


def test_msj_gym_imports_only_downwards_and_never_the_policies_or_agents() -> None:
    bad = []
    for path in _library():
        me = _unit_of_file(path)
        for line, module in _imported(path):
            target = _unit(module)
            if target in OTHERS or module.partition(".")[0] in OTHERS:
                bad.append(f"{path.relative_to(ROOT)}:{line} imports {module} (use msj_gym.registry)")
                continue
            if target is None or target == me:
                continue
            if FLOORS[target] >= FLOORS[me]:
                bad.append(
                    f"{path.relative_to(ROOT)}:{line} ({me}, floor {FLOORS[me]}) imports {module} "
                    f"({target}, floor {FLOORS[target]})"
                )
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize("package", ["msj_gym/baselines"])
def test_the_policies_never_import_the_agents_or_the_layers_above_the_registry(package: str) -> None:
    # a policy is a decision rule over the core's view: the envs, experiments and CLI use it, not it them
    above = {u for u, f in FLOORS.items() if f > FLOORS["moldable"]}
    bad = [
        f"{path.relative_to(ROOT)}:{line} imports {module}"
        for path in _sources(package)
        for line, module in _imported(path)
        if _unit(module) == "agents" or module.partition(".")[0] == "agents" or _unit(module) in above
    ]
    assert not bad, "\n".join(bad)


def test_the_check_resolves_relative_imports_and_names_of_modules() -> None:
    sub = ROOT / "msj_gym" / "env" / "advising.py"
    found = dict((m, line) for line, m in _imported(sub))
    assert "msj_gym.core.state" in found  # `from ..core import state as S`
    assert "msj_gym.registry" in found
    assert _unit("msj_gym") == "__init__" and _unit("numpy") is None


def _module_graph(root: Path, package: str) -> dict[str, set[str]]:
    """Module -> the modules of ``package`` it imports (a package stands for its ``__init__``), for every
    source file under ``root / package``, imports inside functions and under ``TYPE_CHECKING`` included."""
    files = {".".join(_module_of_under(root, p)): p for p in _sources(package, root)}
    graph: dict[str, set[str]] = {}
    for name, path in files.items():
        me = name.split(".")
        pkg = me if path.name == "__init__.py" else me[:-1]
        targets = set()
        for _, module in _imported(path, pkg, root):
            # the longest prefix of the import that is a module of the package (``a.b.name`` -> ``a.b``)
            parts = module.split(".")
            while parts and ".".join(parts) not in files:
                parts.pop()
            if parts and ".".join(parts) != name:
                targets.add(".".join(parts))
        graph[name] = targets
    return graph


def _module_of_under(root: Path, path: Path) -> list[str]:
    parts = list(path.relative_to(root).with_suffix("").parts)
    return parts[:-1] if parts[-1] == "__init__" else parts


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The import circles of ``graph``: its strongly connected components of two modules or more
    (Tarjan's algorithm), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_no_module_of_msj_gym_imports_itself_round_a_circle() -> None:
    # inside a package as between packages: a circle of modules has no order to read or load them in
    circles = _circles(_module_graph(ROOT, "msj_gym"))
    assert not circles, "import circles:\n" + "\n".join(" -> ".join(c) for c in circles)


def test_the_circle_check_finds_a_circle_inside_a_package(tmp_path: Path) -> None:
    pkg = tmp_path / "pkg" / "sub"
    pkg.mkdir(parents=True)
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from .b import x\n")
    (pkg / "b.py").write_text("def f():\n    from . import c\n")  # inside a function: still an arrow
    (pkg / "c.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .a import y\n")
    (pkg / "d.py").write_text("from .a import x\n")  # into the circle, not on it
    graph = _module_graph(tmp_path, "pkg")
    assert graph["pkg.sub.a"] == {"pkg.sub.b"} and graph["pkg.sub.d"] == {"pkg.sub.a"}
    assert _circles(graph) == [["pkg.sub.a", "pkg.sub.b", "pkg.sub.c"]]
    (pkg / "c.py").write_text("")
    assert _circles(_module_graph(tmp_path, "pkg")) == []
