"""The agents and experiments use the environments through their public interface only: no private
attribute (``env._advice``, ``env._mask``, ...) and no simulator state read through an env
(``env.core.sim.iv[...]``): :mod:`msj_gym.env.planning` and :mod:`msj_gym.env.view` give what they need.
An AST scan, so that a new private read fails here rather than at the env's next refactor."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "msj_gym"
SCANNED = ("agents", "experiments")

# Private names of other libraries that have no public equivalent, each with its owner. Nothing of
# msj_gym's own belongs here.
ALLOWED = {
    "parser._actions": "argparse: the parser's actions (recipes set defaults by destination)",
    "model._setup_model": "stable-baselines3: rebuild a model's networks after loading settings",
    "model._get_torch_save_params": "stable-baselines3: what a checkpoint saves",
    "model._excluded_save_params": "stable-baselines3: what a checkpoint leaves out",
    "sys._getframe": "CPython: the caller's frame",
    "os._exit": "CPython: leave a child process without cleanup",
    "outer._next": "the enclosing callback object's own attribute (outer is self of the enclosing class)",
}
NAMEDTUPLE_API = {"_replace", "_asdict", "_fields", "_make"}  # public, underscored to avoid field clashes
SIMULATOR_STATE = {"sim", "view", "sizes"}  # a Simulator's state arrays and views


def _reads(package: Path = PACKAGE) -> list[str]:
    found = []
    for sub in SCANNED:
        for path in sorted((package / sub).rglob("*.py")):
            where = path.relative_to(package.parent)
            for node in ast.walk(ast.parse(path.read_text())):
                if not isinstance(node, ast.Attribute):
                    continue
                base = ast.unparse(node.value)
                name = node.attr
                private = name.startswith("_") and not name.startswith("__")
                if private and base not in ("self", "cls") and not base.startswith("super()"):
                    if name not in NAMEDTUPLE_API and f"{base}.{name}" not in ALLOWED:
                        found.append(f"{where}:{node.lineno}: {base}.{name}")
                if (
                    name in SIMULATOR_STATE
                    and isinstance(node.value, ast.Attribute)
                    and node.value.attr == "core"
                ):
                    found.append(
                        f"{where}:{node.lineno}: {base}.{name} (the simulator's state through an env)"
                    )
    return found


def test_agents_and_experiments_read_no_private_env_state() -> None:
    found = _reads()
    assert not found, "use msj_gym.env.planning / msj_gym.env.view instead:\n" + "\n".join(found)


def test_the_scan_finds_what_it_forbids(tmp_path: Path) -> None:
    """The scan is not vacuous: a private read and a state read planted in a scanned folder fail it."""
    root = tmp_path / "msj_gym"
    for sub in SCANNED:
        (root / sub).mkdir(parents=True)
    (root / "agents" / "bad.py").write_text("def f(env):\n    return env._advice, env.core.sim.iv[0]\n")
    found = _reads(root)
    assert any("env._advice" in f for f in found), found
    assert any("env.core.sim" in f for f in found), found
