"""fedbench.studies.train_claims: the claims judged on the train store's runs kept as a study's record (issue 30,
items 2 and 4), written whole, read back by the report, and not-run (saying what judges them) where never judged.
The DVC stage that writes them is exercised end to end in tests/test_pipeline_e2e.py."""

import json
from pathlib import Path

import pytest

from fedbench.config import load_config
from fedbench.studies import entries, train_claims

ROOT = Path(__file__).resolve().parents[2]
CFG = load_config(ROOT / "params.yaml")


def _summary(**over):
    return {"name": "synthetic_1_1 fedavg stragglers=0.9 seed=0", "fingerprint": "0123456789abcdef",
            "params": {"dataset": "synthetic_1_1", "seed": 0}, "device": "cpu", "diverged": False,
            "param_digest": "d1", "final": {"train/loss": 0.123456789, "test/accuracy": 0.5},
            "wall_time_s": 1.23456, "history": [{"round": 0, "train/loss": 2.0, "test/accuracy": 0.1},
                                                 {"round": 1, "train/loss": 1.0000001, "test/accuracy": None}]} | over


def test_a_train_run_is_a_record_in_the_studies_fields_named_by_its_fingerprint():
    assert train_claims.run_record(_summary()) == {
        "name": "synthetic_1_1 fedavg stragglers=0.9 seed=0", "params": {"dataset": "synthetic_1_1", "seed": 0},
        "history": {"train/loss": [2.0, 1.0], "test/accuracy": [0.1, None]},
        "final": {"train/loss": 0.123457, "test/accuracy": 0.5}, "metrics": {}, "diverged": False,
        "param_digest": "d1", "device": "cpu", "seconds": 1.235, "fingerprint": "0123456789abcdef"}


def _judged(monkeypatch, claims, records):
    monkeypatch.setattr(train_claims, "judge", lambda cfg, root, data: (claims, records))


def test_written_whole_read_back_and_its_seconds_kept_while_the_numbers_stay(tmp_path, monkeypatch):
    entry = {"id": "p/x", "verdict": "reproduced", "study": "s", "effect": {"estimate": 1.5}}
    _judged(monkeypatch, [entry], [train_claims.run_record(_summary())])
    assert train_claims.read(tmp_path) is None
    assert train_claims.write(CFG, tmp_path, tmp_path) == [entry]
    kept = tmp_path / "fedprox_main_job" / "pipeline"
    assert sorted(p.name for p in kept.parent.iterdir()) == ["pipeline"]  # no temporary folder left beside it
    body = json.loads((kept / "claims.json").read_text())
    assert (body["study"], body["budget"], body["workers"], body["claims"]) == ("fedprox_main_job", "pipeline", 1,
                                                                                 [entry])
    assert train_claims.read(tmp_path) == [entry]
    assert [json.loads(line)["fingerprint"] for line in (kept / "simulations.jsonl").read_text().splitlines()] == [
        "0123456789abcdef"]
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
    assert sorted(p.name for p in (tmp_path / "fedprox_main_job").iterdir()) == ["pipeline"]


def test_never_judged_each_claim_is_not_run_saying_what_judges_it(tmp_path):
    claims = train_claims.unjudged(CFG, tmp_path / "generated")
    assert claims and all(c["verdict"] == "not-run" for c in claims)
    main = [c for c in claims if c["study"] != "real data"]
    assert len(main) == 10 and all(train_claims.COMMAND in c["observed"] for c in main)
    assert any("fedbench paper run" in str(c.get("command", "")) for c in claims if c["study"] == "real data")


def test_the_report_reads_the_record_and_judges_nothing(tmp_path, monkeypatch):
    """With the record there, gathering the report's entries calls no judging code of the train store's claims."""
    kept = {"id": "fedprox/synthetic-1-1/partial-work", "verdict": "inconclusive", "study": "main"}
    _judged(monkeypatch, [kept], [])
    train_claims.write(CFG, tmp_path, tmp_path)

    def no(*args, **kwargs):
        raise AssertionError("judged at report time")

    monkeypatch.setattr(train_claims, "judge", no)
    monkeypatch.setattr(entries.real_claims, "on_train_store", no)
    claims, _, _ = entries.collect(CFG, tmp_path, tmp_path / "generated")
    assert claims[0] == kept | {"registration": claims[0]["registration"]}
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
