"""Issue 19.2: one code path runs any claim study. `fedbench study run NAME --budget B` runs a paper-scale study too,
into the one folder per (study, budget) that the report reads (fedbench.study.layout: study_folder, reported_folder);
`fedbench paper run NAME` is its data built and then exactly that call. On FEMNIST fixture files (mime_emnist's
fixture budget: one round, a few seconds)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from fedbench.cli import main
from fedbench.studies.paper_entries import paper_study_entries
from fedbench.studies import stage
from fedbench.study.layout import reported_folder
from fedbench.studies.real_data import declaration
from tests.studies.real_fixtures import build_real

ROOT = Path(__file__).resolve().parents[2]
PARAMS = str(ROOT / "params.yaml")
NAME, VARIANT = "mime_emnist", "femnist_leaf"


def _study_run(*args: str) -> None:
    main(["study", "run", NAME, "--workers", "1", "--params", PARAMS, *args])


def _judged(claims: list[dict]) -> list[tuple]:
    return [(c["id"], c["verdict"], c["fidelity"], c["observed"]) for c in claims]


@pytest.fixture
def here(tmp_path, monkeypatch):
    """A working folder with the study's variant built from fixture files into data/real/ (what `paper run` builds)."""
    build_real(tmp_path / "data", VARIANT)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_study_run_of_a_paper_scale_study_writes_where_the_report_reads_it(here, capsys):
    _study_run("--budget", "fixture")
    folder = here / "results" / NAME / "fixture"  # another budget than the paper's: beside results/NAME/paper/
    body = json.loads((folder / "claims.json").read_text())
    assert body["study"] == NAME and body["budget"] == "fixture" and body["workers"] == 1
    assert sorted(p.name for p in (here / "results" / NAME).iterdir()) == ["fixture"]
    assert not (here / "runs").exists() and not (here / "reports").exists()
    assert reported_folder(NAME) == Path("results") / NAME / "fixture"

    entries = paper_study_entries(NAME)  # what the report shows
    assert [e["id"] for e in entries] == [c.id for c in declaration(NAME).claims]
    assert _judged(entries) == _judged(body["claims"]) and all(e["verdict"] != "not-run" for e in entries)
    assert all(e["fidelity"] == "stand-in" for e in entries)  # the fixture budget: fixture-sized data
    assert entries[0]["cost"]["budget"] == "fixture" and entries[0]["cost"]["seconds"] == body["seconds"]

    # a paper-budget run lands in results/NAME/paper/, which the report then reads; the fixture run stays as it was
    paper = here / "results" / NAME / "paper"
    shutil.copytree(folder, paper)
    (paper / "claims.json").write_text(json.dumps(body | {"budget": "paper", "seconds": 7.0}))
    assert reported_folder(NAME) == Path("results") / NAME / "paper"
    assert paper_study_entries(NAME)[0]["cost"]["budget"] == "paper"
    assert json.loads((folder / "claims.json").read_text()) == body


def test_paper_run_builds_the_data_then_makes_the_study_run_call(here, monkeypatch, capsys):
    """`paper run NAME --budget B` = its variants built + stage.run_study (the one training path) + the report."""
    from fedbench import paper
    import fedbench.study.output as studies

    _study_run("--budget", "fixture")  # the reference: `fedbench study run NAME --budget fixture`
    reference = json.loads((here / "results" / NAME / "fixture" / "claims.json").read_text())
    shutil.rmtree(here / "results")

    calls, trainings, built, reports = [], [], [], []
    run_study, run_claim_study = stage.run_study, studies.run_claim_study
    monkeypatch.setattr(stage, "run_study", lambda *a, **k: calls.append((a[1:], k)) or run_study(*a, **k))
    spy = lambda *a, **k: trainings.append(a[0]) or run_claim_study(*a, **k)  # noqa: E731
    monkeypatch.setattr(stage, "run_claim_study", spy)
    monkeypatch.setattr(studies, "run_claim_study", spy)  # a second path calling it directly would count too
    monkeypatch.setattr(paper, "build_variants", lambda cfg, variants, data_root, progress: built.append(variants))
    paper.run(PARAMS, NAME, data_root=Path("data"), progress=False, budget="fixture",
              report=lambda cfg, **k: reports.append(k))  # the CLI hands in the report's rebuild

    assert built == [[VARIANT]]
    assert calls == [((NAME,), {"budget": "fixture", "workers": 2, "root": Path("results"),
                                "real_root": Path("data/real")})]  # train.workers of params.yaml
    assert trainings == [NAME]  # trained once, under run_study
    assert reports == [{"out_dir": "reports", "results_root": Path("results"), "data_root": Path("data/generated")}]
    got = json.loads((here / "results" / NAME / "fixture" / "claims.json").read_text())
    assert _judged(got["claims"]) == _judged(reference["claims"]) and got["budget"] == "fixture"


def test_a_variant_not_built_is_one_line_naming_it_and_the_command(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as ex:
        _study_run("--budget", "fixture")
    err = capsys.readouterr().err
    assert ex.value.code == 2 and err == (
        f"fedbench: data error: study {NAME}: its real variant {VARIANT} is not built (no data/real/{VARIANT}/"
        f"meta.json); `fedbench paper run {NAME}` fetches and builds it\n")
    assert list(tmp_path.iterdir()) == []  # nothing written


@pytest.mark.parametrize("argv, message", [
    (["study", "run", NAME, "--params", PARAMS, "--budget", "full"],
     f"fedbench: config error: --budget (study {NAME}): 'full' is not allowed; allowed: paper, fixture\n"),
    (["paper", "--params", PARAMS, "run", NAME, "--budget", "full"],
     f"fedbench paper run: --budget (study {NAME}): 'full' is not allowed; allowed: paper, fixture\n"),
])
def test_an_unknown_budget_of_a_paper_scale_study_is_one_line(tmp_path, monkeypatch, capsys, argv, message):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as ex:
        main(argv)
    assert ex.value.code == 2 and capsys.readouterr().err == message and list(tmp_path.iterdir()) == []


def test_the_report_reads_the_paper_budget_first_then_the_others_in_declared_order(tmp_path):
    name = "fedproxvr_fashion"  # budgets: paper, convex, fixture
    assert reported_folder(name, tmp_path) == tmp_path / name / "paper"  # none has run
    for budget in ("fixture", "convex", "paper"):
        (tmp_path / name / budget).mkdir(parents=True)
        (tmp_path / name / budget / "claims.json").write_text("{}")
        assert reported_folder(name, tmp_path) == tmp_path / name / budget


def test_a_budget_reuses_the_runs_another_budget_finished_without_touching_its_folder(here, capsys):
    """Each budget has its own folder, and fingerprint reuse still spans them (fedproxvr_fashion's paper budget reads
    back the Table 1 runs its convex budget finished): here the fixture budget's runs, found in the paper budget's
    folder, are read back, not recomputed."""
    _study_run("--budget", "fixture")
    fixture = here / "results" / NAME / "fixture"
    first = json.loads((fixture / "claims.json").read_text())
    paper = here / "results" / NAME / "paper"
    shutil.copytree(fixture / "outcomes", paper / "outcomes")  # as if the paper budget had finished these runs
    shutil.rmtree(fixture)
    before = sorted((p.name, p.read_bytes()) for p in (paper / "outcomes").iterdir())
    capsys.readouterr()
    _study_run("--budget", "fixture")
    out = capsys.readouterr().out
    n = len(before)
    assert n > 0 and f"{n} of {n} simulations reused" in out
    again = json.loads((fixture / "claims.json").read_text())
    assert _judged(again["claims"]) == _judged(first["claims"])
    assert sorted(p.name for p in (fixture / "outcomes").iterdir()) == [name for name, _ in before]
    assert sorted((p.name, p.read_bytes()) for p in (paper / "outcomes").iterdir()) == before  # only read
    assert stage.offer_outcomes(NAME, "fixture") == 0  # it has them all
