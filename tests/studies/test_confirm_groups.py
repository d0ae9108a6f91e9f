"""Confirmatory runs of the claims of params.yaml's grid (fedbench.studies.confirm.GROUPS, ``fedbench claims confirm
--study 'main job'``) on a tiny config (3 rounds, E = 2, 3 devices a round): the main job study runs on the frozen
seeds by the one driver into the confirm root only, its entries (the driver's claims.json there) are judged by the
frozen rule, a rerun under another rule is refused, a dirty tree is refused, and a confirmation recorded from a dirty tree before
issue 51 is frozen again on a fresh block. Git is stood in for (the commit, a clean tree, the committed block) and
the power rule left out (the tiny config keeps its 2 seeds; tests/studies/test_confirm.py checks the rule)."""

import dataclasses
import json
from pathlib import Path

import pandas as pd
import pytest
import yaml

from fedbench.claims import registry as reg
from fedbench.claims.verdict import Rule
from fedbench.config import load_config
from fedbench.studies import confirm
from fedbench.studies import fedprox_curves as main_curves
from fedbench.studies import fedprox_main_job as main_study
from fedbench.studies import fedprox_main_job_claims as main_claims
from fedbench.study.experiments import study_cells
from tests.faults.conftest import ROOT


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """A tiny params file, its exploratory main-job claims on seeds 0-1 (judged from hand-made curves: a rule's hash
    depends on the config, not on the numbers) and the confirm and data roots, shared: a later test reuses the runs."""
    base = tmp_path_factory.mktemp("mainjob")
    raw = yaml.safe_load((ROOT / "params.yaml").read_text())
    raw["train"] |= {"rounds": 3, "local_epochs": 2, "clients_per_round": 3, "seeds": [0, 1], "workers": 1,
                     "checkpoint_every": 100, "device": "cpu"}
    (base / "params.yaml").write_text(yaml.safe_dump(raw))
    cfg = load_config(base / "params.yaml")
    rows = [{"dataset": ds, "variant": v, "stragglers": f, "seed": s, "round": r, "train/loss": 1.0 + 0.1 * s + f,
             "test/accuracy": 0.5 + 0.01 * s, "diverging": 0.0, "train/dissimilarity": 1.0 + s}
            for ds, v, f in study_cells(cfg) for s in (0, 1) for r in range(4)]
    entries = [e | {"study": "main job"} for e in main_study.evaluate_claims(cfg, pd.DataFrame(rows))]
    assert all(e["verdict"] not in ("not-run", None) for e in entries)
    (base / "claims.json").write_text(json.dumps({"claims": entries}))
    return base, entries


def _args(base, registry):
    return ["--study", "main job", "--claims", str(base / "claims.json"), "--registry", str(registry), "--params",
            str(base / "params.yaml"), "--root", str(base / "confirm"), "--data-root", str(base / "data"),
            "--workers", "1"]


@pytest.fixture
def setup(tiny, tmp_path, monkeypatch):
    base, entries = tiny
    registry = tmp_path / "registry.json"  # a temp registry: the committed one is never written
    reg.dump(reg.register(entries, {}, "abc", "2026-11-28")[0], registry)
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)  # a default path (runs/, reports/) would land here
    _gate(monkeypatch)
    assert confirm.main(_args(base, registry)) == 0  # frozen; the registry "committed" (the gate)
    return base, entries, registry, cwd


def _gate(monkeypatch):
    monkeypatch.setattr(confirm, "git_commit", lambda: "c0ffee")
    monkeypatch.setattr(confirm, "tree_clean", lambda: True)
    monkeypatch.setattr(confirm, "frozen_commit", lambda cid, frozen: "f00d" * 10)
    monkeypatch.setattr(confirm, "seeds_in_history", lambda: set())
    monkeypatch.setattr(confirm, "power_rule", lambda members: None)


def test_groups_are_the_reports_studies_and_claims():
    assert set(confirm.GROUPS) == {main_curves.STUDY, "real data"}
    assert [g.study for g in confirm.GROUPS.values()] == ["fedprox_main_job", "fedprox_mnist5k"]
    assert confirm.GROUPS["main job"].ids == tuple(c.id for c in main_study.DECLARATION.claims) == tuple(
        main_claims.MEASURES)
    assert confirm.group_of({"id": "fedprox/mnist5k/stragglers-hurt-fedavg", "study": "real data"}) == "real data"
    # a paper-scale claim study's "real data" entry: that study's own runner confirms it
    assert confirm.group_of({"id": "mime/fashion-mnist/ordering", "study": "real data",
                             "scale": {"study": "mime_fashion"}}) == "mime_fashion"
    assert confirm.group_of({"id": "x/y", "study": "real data", "scale": {"study": "nowhere"}}) == "real data: nowhere"


def test_main_job_confirmation_trains_into_the_confirm_root_and_judges_by_the_frozen_rule(setup, capsys):
    base, entries, registry, cwd = setup
    assert confirm.main(_args(base, registry) + ["--dry-run"]) == 0
    assert (f"main job: would train 56 runs (params.yaml studies stragglers, heterogeneity) for 10 claims on seeds "
            f"1000-1001 into {base / 'confirm' / 'main-job'}/ (no measured cost at hand)") in capsys.readouterr().out
    assert confirm.main(_args(base, registry)) == 0
    r = reg.load(registry)
    # the main job's study ran on the block (issue 50): its record and entries in the confirm root, no train store there
    study = base / "confirm" / "main-job" / "fedprox_main_job" / "pipeline"
    again = {e["id"]: e for e in json.loads((study / "claims.json").read_text())["claims"]}
    for e in entries:
        got, new = r[e["id"]]["confirmatory"], again[e["id"]]
        assert r[e["id"]]["frozen"]["seeds"] == got["seeds"] == new["seeds"]["training"] == [1000, 1001]
        assert (got["verdict"], got["estimate"], got["ci95"]) == (new["verdict"], new["effect"]["estimate"],
                                                                  new["effect"]["ci95"])
        assert got["commit"] == "c0ffee" and got["where"] == str(base / "confirm" / "main-job")
    records = (study / "simulations.jsonl").read_text().splitlines()
    runs = sorted(json.loads(line)["params"]["seed"] for line in records)
    assert runs == [1000] * 28 + [1001] * 28  # 28 cells of the two studies, on the frozen seeds only
    assert not (base / "confirm" / "main-job" / "train").exists()
    assert [c["id"] for c in json.loads((study / "claims.json").read_text())["claims"]] == [e["id"] for e in entries]
    assert list(cwd.iterdir()) == []  # nothing in runs/ or reports/


def test_a_main_job_rerun_under_another_rule_is_refused(setup, monkeypatch, capsys):
    base, entries, registry, _ = setup
    gain = "fedprox/synthetic-1-1/stragglers-90/accuracy-gain"
    declared = main_study.DECLARATION  # its rule changed after freezing
    monkeypatch.setattr(main_study, "DECLARATION", dataclasses.replace(declared, claims=tuple(
        dataclasses.replace(c, rules=(("", Rule("greater", 1.0, "accuracy points")),), rule="") if c.id == gain else c
        for c in declared.claims)))
    assert confirm.main(_args(base, registry)) == 1
    assert f"fedbench claims confirm: {gain}: rule changed since it was frozen on c0ffee (" in capsys.readouterr().err
    r = reg.load(registry)
    assert "frozen" in r[gain] and "confirmatory" not in r[gain]
    assert all("confirmatory" in r[e["id"]] for e in entries if e["id"] != gain)


def test_a_dirty_tree_is_refused_and_a_record_from_a_dirty_tree_is_frozen_again(setup, monkeypatch, capsys):
    base, entries, registry, _ = setup
    monkeypatch.setattr(confirm, "tree_clean", lambda: False)
    assert confirm.main(_args(base, registry)) == 1
    assert "the tree has uncommitted changes (git status): a confirmation runs from a clean tree" in capsys.readouterr().err
    assert not any("confirmatory" in r for r in reg.load(registry).values())
    monkeypatch.setattr(confirm, "tree_clean", lambda: True)
    assert confirm.main(_args(base, registry)) == 0
    capsys.readouterr()
    clean = reg.load(registry)
    assert all(clean[e["id"]]["confirmatory"]["frozen_in"] == "f00d" * 10 for e in entries)
    # a record from before issue 51, made on a dirty tree: no pre-registration shown, so a fresh block, not a rerun
    gain = "fedprox/synthetic-1-1/stragglers-90/accuracy-gain"
    clean[gain]["confirmatory"]["commit"] = "old + uncommitted changes"
    reg.dump(clean, registry)
    assert confirm.main(_args(base, registry)) == 0
    assert (f"froze {gain} (confirm seeds 1002-1003) again: its confirmation on 1000-1001 is not shown pre-registered"
            in capsys.readouterr().out)
    after = reg.load(registry)
    assert "confirmatory" not in after[gain] and after[gain]["earlier_blocks"][0]["confirmatory"]["commit"] == (
        "old + uncommitted changes")
    assert all(after[e["id"]] == clean[e["id"]] for e in entries if e["id"] != gain)


def test_the_mnist5k_claims_of_real_data_confirm_on_their_own_runs(tmp_path, monkeypatch, capsys):
    from fedbench.data import stages
    from tests.data import fixtures

    raw_copy = tmp_path / "raw_copy"
    raw_copy.mkdir()
    (raw_copy / "mnist_5k.csv.gz").write_bytes(fixtures.mnist5k_csv(per_digit=20))
    # a real variant lives in <data root>/../real/ (fedbench.data.registry.dataset_dir): tmp_path/real for tmp_path/data
    stages.prepare_dataset("mnist5k_fedprox", tmp_path, raw=raw_copy, verify=False,
                           variant_params={"num_clients": 10})
    raw = yaml.safe_load((ROOT / "params.yaml").read_text())
    raw["train"] |= {"seeds": [0, 1], "workers": 1, "clients_per_round": 3, "checkpoint_every": 100, "device": "cpu"}
    raw["data"].setdefault("variants", {})["mnist5k_fedprox"] = {"num_clients": 10}
    raw["studies"]["fedprox_mnist5k"]["train"] = {"lr": 0.03, "rounds": 3, "local_epochs": 2}
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(raw))
    cfg = load_config(tmp_path / "params.yaml")
    _gate(monkeypatch)
    from fedbench.studies.real_claims import evaluate
    from fedbench.study.experiments import study_runs, train_runs

    train_runs(cfg, list(study_runs(cfg, ["fedprox_mnist5k"])), tmp_path / "data", tmp_path / "explore", progress=False)
    explore = [e | {"study": "real data"} for e in evaluate(cfg, tmp_path / "explore", tmp_path / "data")]
    mnist = [e for e in explore if e["id"] in confirm.GROUPS["real data"].ids]
    assert len(mnist) == 4 and all(e["verdict"] != "not-run" for e in mnist)
    (tmp_path / "claims.json").write_text(json.dumps({"claims": mnist}))
    registry = tmp_path / "registry.json"
    reg.dump(reg.register(mnist, {}, "abc", "2026-11-28")[0], registry)
    args = ["--study", "real data", "--claims", str(tmp_path / "claims.json"), "--registry", str(registry), "--params",
            str(tmp_path / "params.yaml"), "--root", str(tmp_path / "confirm"), "--data-root", str(tmp_path / "data"),
            "--workers", "1"]
    assert confirm.main(args) == 0  # frozen
    assert confirm.main(args) == 0  # run
    r = reg.load(registry)
    assert all(r[e["id"]]["confirmatory"]["seeds"] == [1000, 1001] for e in mnist)
    assert all(r[e["id"]]["confirmatory"]["where"] == str(tmp_path / "confirm" / "real-data") for e in mnist)
    # the MNIST-5k study's own store (fedbench.studies.fedprox_real), no train store: 6 cells, 2 seeds
    study = tmp_path / "confirm" / "real-data" / "fedprox_mnist5k" / "pipeline"
    assert len(list((study / "outcomes").glob("*.json"))) == 12 and not (tmp_path / "confirm" / "real-data" / "train").exists()


def test_the_default_data_root_is_the_train_stages():
    """--data-root's default is where the train stage generates its data: synthetic sets in data/generated/, the
    real variants beside it in data/real/ (a default of data/ regenerated the synthetic sets into data/ and looked
    for MNIST-5k in real/)."""
    from fedbench.data.registry import dataset_dir
    from fedbench.study.experiments import DATA_ROOT

    assert confirm.DATA_ROOT == DATA_ROOT and confirm.parser().parse_args([]).data_root == str(DATA_ROOT)
    assert dataset_dir(confirm.DATA_ROOT, "mnist5k_fedprox") == Path("data/real/mnist5k_fedprox")
