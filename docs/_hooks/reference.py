"""The reference pages, generated from the code every time the site is built (an MkDocs hook, mkdocs.yml `hooks`), so
they cannot drift from it: ``reference/cli.md`` from the argparse parsers of every command, ``reference/params.md``
from the config schema (fedbench.config's dataclasses, with their defaults and comments, params.yaml's values, and
each algorithm's hyperparameters and allowed values) and ``reference/api.md`` from the docstrings of the interfaces a
user writes against (an algorithm, a study, a dataset).

tests/docs/test_site.py builds the site with it and checks what these pages hold."""

from __future__ import annotations

import argparse
import ast
import contextlib
import inspect
import io
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PAGES = ("reference/cli.md", "reference/params.md", "reference/api.md")


# ---- the CLI -------------------------------------------------------------------------------------------------------

class _Caught(Exception):
    def __init__(self, parser: argparse.ArgumentParser):
        self.parser = parser


def _parser_of(main, argv: list[str]) -> argparse.ArgumentParser:
    """The parser ``main(argv)`` builds (a command that builds its parser inside its main: fedbench paper, claims),
    caught as it starts parsing."""
    original = argparse.ArgumentParser.parse_args

    def catch(self, *args, **kwargs):
        raise _Caught(self)

    argparse.ArgumentParser.parse_args = catch
    try:
        main(argv)
    except _Caught as caught:
        return caught.parser
    finally:
        argparse.ArgumentParser.parse_args = original
    raise RuntimeError(f"{main.__module__}.main built no parser")


def parsers() -> list[tuple[str, argparse.ArgumentParser]]:
    """Every command and subcommand as (``fedbench ...``, its parser), depth first."""
    from fedbench import cli, paper
    from fedbench.bench.cli import build_parser as bench_parser
    from fedbench.claims.registry import main as claims_main
    from fedbench.data.cli import build_parser as data_parser
    from fedbench.studies.confirm import parser as confirm_parser

    given = {"data": data_parser(), "paper": _parser_of(paper.main, []), "claims": _parser_of(claims_main, []),
             "bench": bench_parser()}
    out = []

    def walk(name: str, parser: argparse.ArgumentParser) -> None:
        out.append((name, parser))
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for sub, subparser in action.choices.items():
                    replaced = given.get(sub) if name == "fedbench" else None
                    walk(f"{name} {sub}", replaced or subparser)
                    if name == "fedbench" and sub == "claims":
                        walk("fedbench claims confirm", confirm_parser())

    walk("fedbench", cli.build_parser())
    return out


def cli_page() -> str:
    lines = ["# CLI reference", "",
             "Generated from the argparse parsers of every command when the site is built "
             "(`docs/_hooks/reference.py`): it is what `fedbench COMMAND --help` prints.", ""]
    for name, parser in parsers():
        parser.prog = name
        lines += [f"{'#' * min(2 + name.count(' ') - 1, 4) if name != 'fedbench' else '##'} `{name}`", "",
                  "```text", parser.format_help().rstrip(), "```", ""]
    return "\n".join(lines)


# ---- params.yaml -----------------------------------------------------------------------------------------------------

def _field_comments(cls) -> dict[str, str]:
    """field -> the comment on its line in ``cls``'s source."""
    source = inspect.getsource(cls)
    lines = source.splitlines()
    out = {}
    for node in ast.parse(source).body[0].body:
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            row = lines[node.lineno - 1]
            out[node.target.id] = row.split("#", 1)[1].strip() if "#" in row else ""
    return out


def yaml_comments(path: Path) -> dict[str, str]:
    """dotted key -> the comment params.yaml gives it: on its line, and on the comment-only lines below it that are
    indented to that comment (its continuation)."""
    import re

    out, stack, last, column = {}, [], None, None
    for line in path.read_text().splitlines():
        bare = line.strip()
        if bare.startswith("#"):
            if last is not None and column is not None and line.index("#") == column:
                out[last] += " " + bare.lstrip("#").strip()
            continue
        m = re.match(r"^(\s*)([A-Za-z_]\w*):(.*)$", line)
        if not m:
            last = None
            continue
        indent, key, rest = len(m[1]), m[2], m[3]
        stack = [(i, k) for i, k in stack if i < indent] + [(indent, key)]
        last = ".".join(k for _, k in stack)
        column = line.index("#") if "#" in rest else None
        out[last] = rest.split("#", 1)[1].strip() if "#" in rest else ""
    return out


def _value(v) -> str:
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(map(str, v)) + "]" if len(v) <= 6 else f"[{', '.join(map(str, v[:6]))}, ...]"
    if isinstance(v, dict):
        return "{...}" if v else "{}"
    return str(v)


def _section(title: str, cls, given: dict, said: dict[str, str] | None = None) -> list[str]:
    """The table of section ``title``: each field of ``cls`` with its type, the schema's default, params.yaml's value
    (``given``) and what it does (params.yaml's comment, ``said``, else the schema's)."""
    import dataclasses
    from typing import get_type_hints

    hints, notes = get_type_hints(cls), _field_comments(cls) | {
        k.removeprefix(title + "."): v for k, v in (said or {}).items() if k.startswith(title + ".") and v}
    rows = [f"## `{title}`", "", "| key | type | default | params.yaml | what it does |", "|---|---|---|---|---|"]
    for f in dataclasses.fields(cls):
        if f.default is not dataclasses.MISSING:
            default = _value(f.default)
        elif f.default_factory is not dataclasses.MISSING:
            default = _value(f.default_factory())
        else:
            default = "required"
        hint = str(hints[f.name]).replace("typing.", "").replace("<class '", "").replace("'>", "")
        shown = _value(given[f.name]) if f.name in given else ""
        rows.append(f"| `{title}.{f.name}` | `{hint}` | `{default}` | {f'`{shown}`' if shown else ''} | "
                    f"{notes.get(f.name, '').replace('|', '/')} |")
    return rows + [""]


def params_page() -> str:
    from fedbench import algorithms
    from fedbench.config import (
        CLAIM_STUDY_GROUPS,
        STUDY_TRAIN_KEYS,
        TOP_KEYS,
        ClaimStudyConfig,
        DataConfig,
        StudyConfig,
        TrainConfig,
    )
    from fedbench.data.params import read_params
    from fedbench.study import registry

    raw = read_params(ROOT / "params.yaml")
    lines = ["# params.yaml reference", "",
             "Generated from the config schema (`fedbench/config.py`) and `params.yaml` when the site is built "
             "(`docs/_hooks/reference.py`). Every key is checked when the file is loaded: a misspelled key or a value "
             "out of range stops with one line naming it. Any key can be overridden for one command with "
             "`--set KEY=VALUE` (`fedbench run`, `compare`, `generate`) or for a DVC experiment with `dvc exp run -S "
             "KEY=VALUE`.", "",
             f"Top-level sections: {', '.join(f'`{k}`' for k in TOP_KEYS)}.", ""]
    said = yaml_comments(ROOT / "params.yaml")
    lines += _section("data", DataConfig, raw.get("data") or {}, said)
    lines += _section("train", TrainConfig, raw.get("train") or {}, said)
    lines += ["## `algorithms`", "",
              "Variants: a name the studies and `--algorithm` use, mapped to `name:` (a registered algorithm, or a "
              "class of your own as `package.module:Class`) and its hyperparameters. `fedbench run --algorithm NAME` "
              "also takes a registered algorithm or a class path directly, with `--set algorithms.VARIANT.KEY=VALUE`.",
              "", "| variant | algorithm | hyperparameters |", "|---|---|---|"]
    for variant, body in (raw.get("algorithms") or {}).items():
        hyper = ", ".join(f"{k}={v}" for k, v in body.items() if k != "name")
        lines.append(f"| `{variant}` | `{body['name']}` | {hyper} |")
    lines += ["", "### Registered algorithms and their hyperparameters", "",
              "| algorithm | class | hyperparameter | type | allowed |", "|---|---|---|---|---|"]
    for name, target in algorithms.ALGORITHMS.items():
        if name in algorithms.USER_ALGORITHMS:
            continue
        hyper = algorithms.hyperparameters(name)
        domains = algorithms.DOMAINS.get(name, {})
        if not hyper:
            lines.append(f"| `{name}` | `fedbench.algorithms.{target}` | none | | |")
        for key, kind in hyper.items():
            d = domains.get(key)
            allowed = ("one of " + ", ".join(d.choices) if d.choices else _interval(d)) if d else "any"
            lines.append(f"| `{name}` | `fedbench.algorithms.{target}` | `{key}` | `{kind.__name__}` | {allowed} |")
    lines += ["", *_section("studies.NAME", StudyConfig, {})[:-1],
              "", f"A study's own `train:` may set {', '.join(f'`{k}`' for k in STUDY_TRAIN_KEYS)}.", "",
              "Studies in `params.yaml`:", ""]
    for name, body in (raw.get("studies") or {}).items():
        lines.append(f"- `{name}`: {', '.join(body['datasets'])}; {', '.join(body['algorithms'])}; stragglers "
                     f"{', '.join(map(str, body['stragglers']))}")
    lines += ["", *_section("claim_studies.GROUP.NAME", ClaimStudyConfig, {})[:-1], "",
              f"Groups: {', '.join(f'`{g}`' for g in CLAIM_STUDY_GROUPS)} (`default`: a DVC stage each; `opt_in`: "
              "`fedbench study run NAME`). Claim studies and their budgets:", "",
              "| study | budgets |", "|---|---|"]
    for name in registry.names():
        lines.append(f"| `{name}` | {', '.join(registry.budgets(name))} |")
    return "\n".join(lines) + "\n"


def _interval(d) -> str:
    if d.high is None:
        return f"{'>' if d.low_open else '>='} {d.low:g}"
    return f"{'(' if d.low_open else '['}{d.low:g}, {d.high:g}{')' if d.high_open else ']'}"


# ---- the API a user writes against -----------------------------------------------------------------------------------

API = (("An algorithm", "fedbench.engine.simulation", None),
       ("A user's algorithm", "fedbench.algorithms", None),
       ("A study", "fedbench.study.declaration", "StudyDeclaration"),
       ("A study's three functions", "fedbench.study.contract", None),
       ("What a study measured for a claim", "fedbench.study.contract", "Measurement"),
       ("A study's registry", "fedbench.study.registry", None),
       ("A dataset on disk", "fedbench.data.format", None))


def docstring(module: str, attr: str | None = None) -> str:
    """The docstring of ``module`` (or of its class ``attr``), read from its source without importing it (the
    engine's would import torch)."""
    import importlib.util

    tree = ast.parse(Path(importlib.util.find_spec(module).origin).read_text())
    if attr is not None:
        tree = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == attr)
    return ast.get_docstring(tree) or ""


def api_page() -> str:
    lines = ["# API reference", "", "The interfaces you write against, from their docstrings (generated when the site is "
             "built: `docs/_hooks/reference.py`).", ""]
    for title, module, attr in API:
        lines += [f"## {title}: `{module}{'.' + attr if attr else ''}`", "", "```text", docstring(module, attr), "```",
                  ""]
    return "\n".join(lines)


def pages() -> dict[str, str]:
    """Each generated page's path under docs/ and its Markdown."""
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        return {"reference/cli.md": cli_page(), "reference/params.md": params_page(),
                "reference/api.md": api_page()}


def on_files(files, config):
    """MkDocs hook: the generated pages added to the site's files (none is written into docs/)."""
    from mkdocs.structure.files import File

    for path, text in pages().items():
        files.append(File.generated(config, path, content=text))
    return files
