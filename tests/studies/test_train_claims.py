"""fedbench.studies.train_claims: FedProx's real-data claims judged on the main job's runs and the train store, kept as
a study's record (issue 30, items 2 and 4), written whole, read back by the report, and not-run (saying what runs
them) where never judged; the main job's own claims are read from its study's record, never judged by the report.
The DVC stage that writes them is exercised end to end in tests/test_pipeline_e2e.py."""

import json
from pathlib import Path

import pytest

from fedbench.config import load_config
from fedbench.studies import entries, train_claims

ROOT = Path(__file__).resolve().parents[2]
CFG = load_config(ROOT / "params.yaml")


def _judged(monkeypatch, claims, records):
    monkeypatch.setattr(train_claims, "judge", lambda cfg, root, data: claims)


def test_written_whole_read_back_and_its_seconds_kept_while_the_numbers_stay(tmp_path, monkeypatch):
    entry = {"id": "p/x", "verdict": "reproduced", "study": "s", "effect": {"estimate": 1.5}}
    _judged(monkeypatch, [entry], [])
    assert train_claims.read(tmp_path) is None
    assert train_claims.write(CFG, tmp_path, tmp_path) == [entry]
    kept = tmp_path / "fedprox_real_data" / "pipeline"
    assert sorted(p.name for p in kept.parent.iterdir()) == ["pipeline"]  # no temporary folder left beside it
    body = json.loads((kept / "claims.json").read_text())
    assert (body["study"], body["budget"], body["workers"], body["claims"]) == ("fedprox_real_data", "pipeline", 1,
                                                                                  [entry])
    assert train_claims.read(tmp_path) == [entry]
    assert (kept / "simulations.jsonl").read_text() == ""  # its runs are the main job's and the train store's
    first = (kept / "claims.json").read_text()
    train_claims.write(CFG, tmp_path, tmp_path)  # the same numbers: the file as it was, seconds included
    assert (kept / "claims.json").read_text() == first
    _judged(monkeypatch, [entry | {"verdict": "inconclusive"}], [])
    train_claims.write(CFG, tmp_path, tmp_path)
    assert train_claims.read(tmp_path)[0]["verdict"] == "inconclusive"


def test_a_failed_judgement_leaves_the_kept_record_as_it_was(tmp_path, monkeypatch):
    _judged(monkeypatch, [{"id": "p/x", "verdict": "reproduced"}], [])
    train_claims.write(CFG, tmp_path, tmp_path)

    def broken(cfg, root, data):
        raise RuntimeError("judging failed")

    monkeypatch.setattr(train_claims, "judge", broken)
    with pytest.raises(RuntimeError, match="judging failed"):
        train_claims.write(CFG, tmp_path, tmp_path)
    assert train_claims.read(tmp_path) == [{"id": "p/x", "verdict": "reproduced"}]
    assert sorted(p.name for p in (tmp_path / "fedprox_real_data").iterdir()) == ["pipeline"]


def test_never_judged_each_claim_is_not_run_saying_what_runs_it(tmp_path):
    claims = train_claims.unjudged(CFG, tmp_path / "generated")
    assert claims and all(c["verdict"] == "not-run" and c["study"] == "real data" for c in claims)
    assert any("fedbench paper run" in str(c.get("command", "")) for c in claims)
    main = entries.main_job_claims(CFG, tmp_path)  # the main job not run: its declared claims, saying what runs it
    assert len(main) == 10 and all(c["verdict"] == "not-run" and c["study"] == "main job" for c in main)
    assert all("dvc repro main_job" in c["would_change"] for c in main)
    robust = next(c for c in main if c["id"] == "fedprox/synthetic-iid/robust-to-stragglers")
    assert "each level (10% stragglers, 50% stragglers, 90% stragglers)" in robust["rule"]  # as a run states it


def test_the_report_reads_the_record_and_judges_nothing(tmp_path, monkeypatch):
    """With the records there, gathering the report's entries calls no judging code: the main job's entries are its
    study's claims.json, the real-data ones train_claims' record."""
    kept = {"id": "fedprox/synthetic-1-1/partial-work", "verdict": "inconclusive"}
    (tmp_path / "fedprox_main_job" / "pipeline").mkdir(parents=True)
    (tmp_path / "fedprox_main_job" / "pipeline" / "claims.json").write_text(json.dumps({"claims": [kept]}))
    real = {"id": "fedprox/mnist5k/stragglers-hurt-fedavg", "verdict": "inconclusive", "study": "real data"}
    _judged(monkeypatch, [real], [])
    train_claims.write(CFG, tmp_path, tmp_path)

    def no(*args, **kwargs):
        raise AssertionError("judged at report time")

    monkeypatch.setattr(train_claims, "judge", no)
    monkeypatch.setattr(entries.real_claims, "on_train_store", no)
    claims, _, _ = entries.collect(CFG, tmp_path, tmp_path / "generated")
    assert claims[0] == kept | {"study": "main job", "registration": claims[0]["registration"]}
    assert claims[1] == real | {"registration": claims[1]["registration"]}
    assert claims[0]["registration"]["status"] == "changed"  # a made-up entry: not the rule registered for its id


def test_a_record_made_before_its_rule_was_reworded_reads_as_the_registered_rule(tmp_path):
    """An opt-in study's record written before the rewording of 2026-11-29 states its rule in the old words: the
    report reads it in the registered words, so it is still the registered rule and its confirmation stands."""
    from fedbench.claims import registry

    # (feddane-mu1 was the example until issue 51 re-registered its rule; feddane-poor-on-non-iid keeps its rewording)
    cid, name = "fedprox/synthetic/feddane-poor-on-non-iid", "feddane_synthetic"
    committed = next(c for c in json.loads((ROOT / "reports/claims.json").read_text())["claims"] if c["id"] == cid)
    book = registry.load()
    before = {k: v for k, v in committed.items() if k not in ("registration", "study")} | {
        "rule": book[cid]["rewordings"][0]["rule"]}
    assert before["rule"] != committed["rule"] and registry.status(before, book)["status"] == "changed"
    folder = tmp_path / name / CFG.claim_studies[name].budget
    folder.mkdir(parents=True)
    (folder / "claims.json").write_text(json.dumps({"study": name, "claims": [before]}))
    (read,) = [c for c in entries.study_claims(CFG, tmp_path) if c["id"] == cid]
    assert read["rule"] == committed["rule"]
    st = registry.status(read, book)
    # its confirmation stands (not void); whether it counts is git's to show (issue 51)
    assert st["status"] == "registered" and st["frozen"] is not None and st["confirmation"].startswith("confirmed")
