"""The documentation: the site builds in strict mode (a broken link or reference fails), and the README
stays a front page whose relative links all resolve."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
README_MAX_BYTES = 10240


def test_mkdocs_build_strict(tmp_path: Path) -> None:
    if importlib.util.find_spec("mkdocs") is None:
        pytest.skip("mkdocs is not importable: install the dev extra (pip install -e '.[dev]')")
    proc = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )
    assert proc.returncode == 0, f"mkdocs build --strict failed:\n{proc.stdout}\n{proc.stderr}"
    site = tmp_path / "site"
    assert (site / "policies" / "index.html").read_text().count("<code>server-filling</code>")
    # the docstrings' reST roles are rewritten (docs/griffe_rst_roles.py): none shows as literal text, and
    # one to a rendered object is a link
    raw = {
        str(page.relative_to(site)): len(found)
        for page in site.rglob("*.html")
        if (found := re.findall(r":(?:class|meth|func|mod|data|attr|obj|exc):(?:<code>|`)", page.read_text()))
    }
    assert not raw, f"reST roles shown as text: {raw}"
    envs = (site / "environments" / "index.html").read_text()
    link = r'<a class="autorefs[^"]*"[^>]*href="#msj_gym\.env\.msj_env\.MSJEnv"><code>MSJEnv</code>'
    assert re.search(link, envs), "a :class:`MSJEnv` role in a docstring is not a link to its card"


def test_readme_is_a_front_page() -> None:
    size = README.stat().st_size
    assert size <= README_MAX_BYTES, f"README.md: {size} bytes > {README_MAX_BYTES}; move material to docs/"


def _relative_links(markdown: str) -> list[str]:
    text = re.sub(r"```.*?```", "", markdown, flags=re.S)  # links inside code blocks are not links
    targets = re.findall(r"\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)", text)
    targets += re.findall(r"^\s*\[[^\]]+\]:\s*(\S+)", text, flags=re.M)  # reference definitions
    return [t for t in targets if not re.match(r"[a-z][a-z0-9+.-]*:|#|/", t)]


def test_readme_relative_links_exist() -> None:
    links = _relative_links(README.read_text())
    assert links, "README.md links to no docs page"
    missing = [t for t in links if not (ROOT / t.split("#", 1)[0]).exists()]
    assert not missing, f"README.md links to missing files: {missing}"
