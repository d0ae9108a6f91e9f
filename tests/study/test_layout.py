"""Issue 30, item 4: one folder per (study, budget), results/<study>/<budget>/, for every claim study; the report's
copy of each configured study's folder in reports/studies/<study>/ (committed files byte-identical when no number
changed); the main job's store (results/fedprox_main_job/pipeline/outcomes/, where `fedbench run` keeps its runs too),
the former train store (results/train/, read only by its one-time move) and confirmatory runs (results/confirm/) in
the same root; and a checkout
made under the earlier layout (reports/studies[-B]/, runs/studies[-B]/, runs/train/, runs/confirm/) keeping its
finished runs."""

from __future__ import annotations

import json
from pathlib import Path

from fedbench.config import load_config
from fedbench.study.record import add_fingerprints, write_simulations
from fedbench.study import registry
from fedbench.study.layout import (RESERVED, RESULTS_ROOT, adopt_legacy, confirm_root, home_budget, homes, publish,
                                   reported_folder, study_folder, train_folder)

ROOT = Path(__file__).resolve().parents[2]
CFG = load_config(ROOT / "params.yaml")


def test_every_study_at_every_budget_has_one_folder():
    assert RESULTS_ROOT == Path("results")
    assert study_folder("mime_synthetic", "pipeline") == Path("results/mime_synthetic/pipeline")
    assert study_folder("mime_synthetic", None) == Path("results/mime_synthetic/pipeline")  # a run() at its default
    assert study_folder("fedlaavg_cifar10", "paper", Path("r")) == Path("r/fedlaavg_cifar10/paper")
    assert study_folder("fedproxvr_fashion", "convex", Path("r")) == Path("r/fedproxvr_fashion/convex")


def test_the_main_job_store_and_confirmatory_runs_share_the_root_and_no_study_takes_their_names():
    from fedbench.studies.confirm import CONFIRM_ROOT
    from fedbench.study.experiments import outcome_path

    assert train_folder() == Path("results/train") and confirm_root() == CONFIRM_ROOT == Path("results/confirm")
    assert outcome_path(RESULTS_ROOT, "ab") == Path("results/fedprox_main_job/pipeline/outcomes/ab.json")
    assert not set(RESERVED) & set(registry.names())


def test_the_home_budget_is_params_yaml_s_for_a_small_study_and_paper_for_a_paper_scale_one():
    assert home_budget(CFG, "mime_synthetic") == "pipeline"
    assert home_budget(CFG, "fedprox_synthetic") == "paper"  # opt-in at the paper's budget
    assert home_budget(CFG, "fedlaavg_cifar10") == home_budget(None, "fedlaavg_cifar10") == "paper"
    assert home_budget(None, "fedprox_synthetic") == "pipeline"  # a study params.yaml does not list
    assert len(homes(CFG)) == 24


def test_a_small_study_is_reported_from_its_home_folder_only(tmp_path):
    other = study_folder("fedprox_synthetic", "pipeline", tmp_path)
    other.mkdir(parents=True)
    (other / "claims.json").write_text("{}")
    assert reported_folder("fedprox_synthetic", tmp_path, CFG) == tmp_path / "fedprox_synthetic" / "paper"


def _finished(folder: Path, seconds: float = 1.5, outcomes: int = 2, value: float = 0.25) -> None:
    folder.mkdir(parents=True)
    (folder / "claims.json").write_text(json.dumps({"study": folder.name, "seconds": seconds, "claims": []}) + "\n")
    write_simulations(folder, [{"name": "a/seed=0", "final": {"x": value}, "seconds": seconds}])
    (folder / "figure.png").write_bytes(b"png")
    (folder / "outcomes").mkdir()
    for i in range(outcomes):
        (folder / "outcomes" / f"{i:016x}.json").write_text(str(i))


def test_the_earlier_layout_is_adopted_once_keeping_every_finished_run(tmp_path, capsys):
    old = tmp_path / "old"
    _finished(old / "reports/studies/mime_synthetic")  # a small study at home: committed files + outcomes
    _finished(old / "reports/studies-pipeline/fedprox_synthetic")  # a small one at another budget
    _finished(old / "runs/studies/fedlaavg_cifar10", outcomes=3)  # a paper-scale one at paper
    _finished(old / "runs/studies-fixture/mime_emnist")  # and at another budget
    (old / "runs/studies/delta_fl_real").mkdir(parents=True)  # nothing finished: nothing to keep
    _finished(old / "reports/studies/delta_fl_triangle", outcomes=0)  # a fresh clone's committed copy: no run
    (old / "reports/studies/delta_fl_triangle/outcomes").rmdir()
    (old / "runs/studies-fixture/scaffold_fashion/outcomes").mkdir(parents=True)  # a run cut short: its outcomes kept
    (old / "runs/studies-fixture/scaffold_fashion/outcomes/00000000000000ff.json").write_text("{}")
    committed = {p.name: p.read_bytes() for p in (old / "reports/studies/mime_synthetic").iterdir() if p.is_file()}
    new = tmp_path / "results"

    adopted = adopt_legacy(homes(CFG), new, old)
    assert sorted(p.relative_to(new).as_posix() for p in adopted) == [
        "fedlaavg_cifar10/paper", "fedprox_synthetic/pipeline", "mime_emnist/fixture", "mime_synthetic/pipeline",
        "scaffold_fashion/fixture"]
    home = new / "mime_synthetic/pipeline"
    assert {p.name: p.read_bytes() for p in home.iterdir() if p.is_file()} == committed
    assert len(list((home / "outcomes").iterdir())) == 2
    # the committed copy stays, without the outcomes it held; the other folders moved whole
    assert sorted(p.name for p in (old / "reports/studies/mime_synthetic").iterdir()) == sorted(committed)
    assert not (old / "reports/studies-pipeline/fedprox_synthetic").exists()
    assert not (old / "runs/studies/fedlaavg_cifar10").exists()
    assert len(list((new / "fedlaavg_cifar10/paper/outcomes").iterdir())) == 3
    assert (old / "runs/studies/delta_fl_real").is_dir() and not (new / "delta_fl_real").exists()
    assert not (new / "delta_fl_triangle").exists()
    out = capsys.readouterr().out.splitlines()
    assert (new / "scaffold_fashion/fixture/outcomes/00000000000000ff.json").is_file()
    assert len(out) == 5 and all("moved to" in line and "results" in line for line in out)
    assert not [p for p in (new / "mime_synthetic").iterdir() if p.name.startswith(".")]  # no temporary folder

    _finished(old / "runs/studies/scaffold_emnist")
    _finished(new / "scaffold_emnist/paper", outcomes=1)  # the new layout has it already: left alone
    assert adopt_legacy(homes(CFG), new, old) == []
    assert len(list((new / "scaffold_emnist/paper/outcomes").iterdir())) == 1
    assert (old / "runs/studies/scaffold_emnist").is_dir()


def test_the_report_copy_keeps_the_committed_seconds_where_no_number_changed(tmp_path):
    cfg = load_config(ROOT / "params.yaml", {"claim_studies": {"default": {"delta_fl_triangle": {}}}})
    results, reports = tmp_path / "results", tmp_path / "reports/studies"
    assert publish(cfg, results, reports) == [] and not reports.exists()  # nothing has run

    _finished(results / "delta_fl_triangle/pipeline", seconds=1.5)
    assert publish(cfg, results, reports) == [reports / "delta_fl_triangle"]
    copy = reports / "delta_fl_triangle"
    assert sorted(p.name for p in copy.iterdir()) == ["claims.json", "figure.png", "simulations.jsonl"]  # no outcomes
    first = {p.name: p.read_bytes() for p in copy.iterdir()}

    _finished(tmp_path / "again/delta_fl_triangle/pipeline", seconds=9.0)  # the same numbers in other seconds
    publish(cfg, tmp_path / "again", reports)
    assert {p.name: p.read_bytes() for p in copy.iterdir()} == first

    # a record's fingerprint (another code computed the same numbers) stays in results/, out of the committed copy
    add_fingerprints(tmp_path / "again/delta_fl_triangle/pipeline", {"a/seed=0": "00000000000000aa"})
    publish(cfg, tmp_path / "again", reports)
    assert {p.name: p.read_bytes() for p in copy.iterdir()} == first

    _finished(tmp_path / "moved/delta_fl_triangle/pipeline", seconds=9.0, value=0.5)  # a number changed
    publish(cfg, tmp_path / "moved", reports)
    assert json.loads((copy / "claims.json").read_text())["seconds"] == 9.0
    assert json.loads((copy / "simulations.jsonl").read_text())["seconds"] == 9.0
    assert not [p for p in reports.iterdir() if p.name.startswith(".")]  # no temporary folder


def test_the_earlier_train_store_and_confirmatory_runs_are_moved_whole(tmp_path, capsys):
    old, new = tmp_path / "old", tmp_path / "results"
    (old / "runs/train/outcomes").mkdir(parents=True)
    (old / "runs/train/outcomes/00000000000000aa.json").write_text("{}")
    (old / "runs/train/index.jsonl").write_text('{"fingerprint": "00000000000000aa"}\n')
    (old / "runs/confirm/main-job/train/outcomes").mkdir(parents=True)
    (old / "runs/confirm/mime_synthetic/pipeline").mkdir(parents=True)
    (old / "runs/confirm/mime_synthetic/pipeline/claims.json").write_text("{}")

    assert adopt_legacy(homes(CFG), new, old) == [new / "train", new / "confirm"]
    assert (new / "train/outcomes/00000000000000aa.json").is_file() and (new / "train/index.jsonl").is_file()
    assert (new / "confirm/main-job/train/outcomes").is_dir()
    assert (new / "confirm/mime_synthetic/pipeline/claims.json").is_file()
    assert not (old / "runs").exists()  # nothing else was in it: the earlier root goes
    out = capsys.readouterr().out.splitlines()
    assert out == [(f"{old}/runs/train/: the train store moved to {new}/train/ (the results layout, "
                    "fedbench.study.layout)"),
                   (f"{old}/runs/confirm/: the confirmatory runs moved to {new}/confirm/ (the results layout, "
                    "fedbench.study.layout)")]

    (old / "runs/train/outcomes").mkdir(parents=True)  # a store left where the new one exists: left alone
    (old / "runs/elsewhere").mkdir()
    assert adopt_legacy(homes(CFG), new, old) == []
    assert (old / "runs/train/outcomes").is_dir() and (old / "runs/elsewhere").is_dir()
