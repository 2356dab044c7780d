"""What a user installing the package relies on: a license file declared in the metadata, the version on
the command line, ``python -m msj_gym``, the progress bar's dependency in the ``rl`` extra, and the
README's honest word on torch builds."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

import msj_gym
from msj_gym.cli import main

ROOT = Path(__file__).resolve().parents[1]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def test_the_license_is_a_file_the_metadata_declares() -> None:
    assert PROJECT["license"] == "MIT"  # an SPDX expression (PEP 639), not free text
    files = PROJECT["license-files"]
    assert files == ["LICENSE"]
    text = (ROOT / files[0]).read_text()
    assert text.startswith("MIT License") and "Copyright (c) 2026 the msj_gym authors" in text


def test_version_flag(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["--version"])
    assert exc.value.code == 0
    assert capsys.readouterr().out.split() == ["msj-gym", msj_gym.__version__]
    assert msj_gym.__version__ == PROJECT["version"]


def test_python_dash_m_is_the_command() -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run(
        [sys.executable, "-m", "msj_gym", "--version"], capture_output=True, text=True, env=env, cwd=ROOT
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == f"msj-gym {msj_gym.__version__}"
    bad = subprocess.run(
        [sys.executable, "-m", "msj_gym", "simulate", "--scenario", "sf-fig2", "--policy", "no-such"],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
    )
    assert bad.returncode == 2 and "no-such" in bad.stderr  # main's exit code reaches the shell


def test_the_rl_extra_has_what_sb3_progress_bar_needs() -> None:
    rl = PROJECT["optional-dependencies"]["rl"]
    rich = [r for r in rl if re.match(r"rich\b", r)]
    assert rich and "<" in rich[0] and ">=" in rich[0], rl  # a range, not a bare name
    assert any(re.match(r"tqdm\b", r) for r in PROJECT["dependencies"])


def test_readme_says_how_to_get_the_cpu_build_of_torch() -> None:
    readme = (ROOT / "README.md").read_text()
    pin = next(r for r in PROJECT["optional-dependencies"]["rl"] if r.startswith("torch"))
    command = f"pip install {pin} --index-url https://download.pytorch.org/whl/cpu"
    assert command in readme
    assert 'python3 -m pip install -e ".[dev,rl]"' in readme  # CI runs the install commands verbatim


def test_the_only_top_level_package_is_msj_gym() -> None:
    # "baselines" and "agents" are other projects' names (OpenAI's baselines is on PyPI): the policies
    # and the agents install as msj_gym.baselines and msj_gym.agents
    from setuptools import find_packages

    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    found = find_packages(str(ROOT), include=config["packages"]["find"]["include"])
    assert {p.split(".")[0] for p in found} == {"msj_gym"}, found
    assert {"msj_gym.baselines", "msj_gym.agents"} <= set(found)
    assert "checkpoints/*.zip" in config["package-data"]["msj_gym.agents"]


def test_the_policies_and_the_agents_are_top_level_folders_the_package_links() -> None:
    # the design's top level (baselines/, agents/ beside msj_gym/), installed inside the package: each
    # folder of msj_gym is a relative link, so that a checkout works wherever it is
    for name in ("baselines", "agents"):
        link = ROOT / "msj_gym" / name
        assert (ROOT / name).is_dir() and not (ROOT / name).is_symlink(), name
        assert link.is_symlink() and str(link.readlink()) == f"../{name}", link
        assert (link / "__init__.py").resolve() == (ROOT / name / "__init__.py").resolve()


def test_no_code_imports_a_top_level_baselines_or_agents() -> None:
    # imports, and strings that name a module or a command (an entry point, importlib, python -m)
    import ast
    import re

    # "agents." is the head of f"agents.{name}"; "agents.py" and "agents.md" are file names
    named = re.compile(r"^(baselines|agents)\.(?!py$|md$)|python -m (baselines|agents)\.")
    bad = []
    for folder in ("msj_gym", "baselines", "agents", "tests", "benchmarks", "examples"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                names = []
                if isinstance(node, ast.Import):
                    names = [a.name for a in node.names]
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    names = [node.module]
                elif (
                    isinstance(node, ast.Constant)
                    and isinstance(node.value, str)
                    and named.search(node.value)
                ):
                    names = [node.value]
                where = f"{path.relative_to(ROOT)}:{getattr(node, 'lineno', 0)}"
                bad += [f"{where} {n[:60]}" for n in names if named.search(n) or n.split(".")[0] in OTHERS]
    assert not bad, bad


OTHERS = ("baselines", "agents")
