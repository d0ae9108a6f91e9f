"""The docs: the MkDocs site builds with --strict (no broken link, every page in the nav), its reference pages are
generated from the code and cover every command, key and algorithm, and the README starts a researcher (what
fedbench is, the two commands, the six verdicts, where to go next) with links that resolve."""

import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
sys.path.insert(0, str(DOCS / "_hooks"))
import reference  # docs/_hooks/reference.py, the generator the site build runs (imported once the path is set)


def test_the_site_builds_strictly(tmp_path):
    if importlib.util.find_spec("mkdocs") is None or importlib.util.find_spec("material") is None:
        pytest.skip("mkdocs and mkdocs-material are not installed (pip install -e '.[dev]' installs them)")
    proc = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-q", "-f", str(ROOT / "mkdocs.yml"),
                           "-d", str(tmp_path / "site")], cwd=ROOT, capture_output=True, text=True, timeout=300,
                          env={"NO_MKDOCS_2_WARNING": "1", "PATH": "/usr/bin:/bin"}, check=False)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    cli = (tmp_path / "site" / "reference" / "cli" / "index.html").read_text()
    assert "fedbench compare" in cli and "--against" in cli
    pages = sorted(p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md") if "_hooks" not in p.parts)
    site = tmp_path / "site"
    assert [p for p in pages if not (site / p.removesuffix(".md").removesuffix("index") / "index.html").exists()] == []


def test_every_page_is_in_the_nav_and_every_nav_entry_exists():
    nav = re.findall(r":\s*([\w./-]+\.md)\s*$", (ROOT / "mkdocs.yml").read_text(), re.MULTILINE)
    files = {p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md") if "_hooks" not in p.parts}
    assert set(nav) - set(reference.PAGES) == files
    assert set(reference.PAGES) <= set(nav)


def test_the_cli_reference_holds_every_command_and_option():
    from fedbench.cli import build_parser

    names = [name for name, _ in reference.parsers()]
    top = next(a for a in build_parser()._actions if a.dest == "command").choices
    assert {f"fedbench {c}" for c in top} <= set(names)
    assert {"fedbench study run", "fedbench data fetch", "fedbench paper run", "fedbench claims register",
            "fedbench claims confirm"} <= set(names)
    page = reference.cli_page()
    for option in ("--against", "--algorithm", "--stragglers", "--set", "--verbose", "--budget"):
        assert option in page


def test_the_params_reference_holds_every_key_and_algorithm():
    import dataclasses

    from fedbench import algorithms
    from fedbench.config import DataConfig, TrainConfig

    page = reference.params_page()
    for section, cls in (("data", DataConfig), ("train", TrainConfig)):
        for f in dataclasses.fields(cls):
            assert f"| `{section}.{f.name}` |" in page
    for name in algorithms.ALGORITHMS:
        if name not in algorithms.USER_ALGORITHMS:
            assert f"| `{name}` |" in page
    assert "| `scaffold` | `fedbench.algorithms.scaffold:Scaffold` | `eta_g` | `float` | > 0 |" in page
    # params.yaml's comment is the description, continuation lines included
    assert reference.yaml_comments(ROOT / "params.yaml")["train.seeds"].startswith("selection, stragglers")


def test_the_readme_starts_a_researcher():
    from fedbench.claims.entry import VERDICTS

    text = (ROOT / "README.md").read_text()
    assert len(text.splitlines()) <= 160
    assert "make repro" in text and "make test" in text
    assert all(f"`{v}`" in text for v in VERDICTS)  # all six, as the code names them
    links = re.findall(r"\]\(([^)#]+)\)", text)
    assert links and all((ROOT / link).exists() for link in links if "://" not in link), links


def test_no_bare_issue_numbers_in_the_readme_or_the_docs():
    for path in [ROOT / "README.md", *DOCS.rglob("*.md")]:
        assert not re.search(r"\b[Ii]ssues? \d", " ".join(path.read_text().split())), path
