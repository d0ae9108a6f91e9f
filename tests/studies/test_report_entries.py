"""fedbench.studies.entries: what the report renders, read from the studies' records. FedProx's real-data entries are
each real-data study's own claims.json (fedbench.studies.fedprox_real), or its declared claims measured on no runs
(not-run, saying what runs them) where it has not run, as the main job's are; the report judges none of a study's
claims. The DVC stage that writes them is exercised end to end in tests/test_pipeline_e2e.py."""

import json
from pathlib import Path

from fedbench.config import load_config
from fedbench.studies import entries, fedprox_real

ROOT = Path(__file__).resolve().parents[2]
CFG = load_config(ROOT / "params.yaml")
PER_STUDY = ("stragglers-90/accuracy-gain", "dissimilarity-lower-with-mu", "stragglers-0-50/accuracy-gain",
             "stragglers-hurt-fedavg")
CROSS = ["fedprox/five-datasets/mean-accuracy-gain", "fedprox/real/partial-work-e1"]


def test_never_run_each_claim_is_not_run_saying_what_runs_it(tmp_path):
    real = entries.fedprox_real_claims(CFG, tmp_path, tmp_path / "generated")
    datasets = ["mnist5k", "mnist", "femnist", "shakespeare", "sent140", "shakespeare-plays"]
    assert [c["id"] for c in real] == [f"fedprox/{d}/{k}" for d in datasets for k in PER_STUDY] + CROSS
    assert all(c["verdict"] == "not-run" and c["study"] == "real data" for c in real)
    femnist = next(c for c in real if c["id"] == "fedprox/femnist/stragglers-90/accuracy-gain")
    assert femnist["command"] == "fedbench paper run fedprox_femnist" and "missing runs of study fedprox_femnist" in \
        femnist["observed"]
    assert "fedbench paper run fedprox_mnist" in real[-2]["command"]  # the five-dataset mean: the studies it lacks
    main = entries.main_job_claims(CFG, tmp_path)  # the main job not run: its declared claims, saying what runs it
    assert len(main) == 10 and all(c["verdict"] == "not-run" and c["study"] == "main job" for c in main)
    assert all("dvc repro main_job" in c["would_change"] for c in main)
    robust = next(c for c in main if c["id"] == "fedprox/synthetic-iid/robust-to-stragglers")
    assert "each level (10% stragglers, 50% stragglers, 90% stragglers)" in robust["rule"]  # as a run states it


def test_mnist5k_is_reported_only_where_params_yaml_lists_it(tmp_path):
    import dataclasses

    without = dataclasses.replace(CFG, studies={k: v for k, v in CFG.studies.items() if k != "fedprox_mnist5k"})
    ids = [c["id"] for c in entries.fedprox_real_claims(without, tmp_path, tmp_path / "generated")]
    assert len(ids) == 5 * 4 + 2 and not any(i.startswith("fedprox/mnist5k/") for i in ids)


def test_the_report_reads_each_study_s_record_and_judges_nothing_of_it(tmp_path, monkeypatch):
    """With the records there, gathering the report's entries calls no study's measure hook: the main job's entries
    are its study's claims.json, each FedProx real-data study's its own (results/<study>/<budget>/claims.json)."""
    kept = {"id": "fedprox/synthetic-1-1/partial-work", "verdict": "inconclusive"}
    (tmp_path / "fedprox_main_job" / "pipeline").mkdir(parents=True)
    (tmp_path / "fedprox_main_job" / "pipeline" / "claims.json").write_text(json.dumps({"claims": [kept]}))
    written = {}
    for name, budget in (("fedprox_mnist5k", "pipeline"), ("fedprox_femnist", "paper")):
        dataset = name.removeprefix("fedprox_")
        written[name] = [{"id": f"fedprox/{dataset}/{k}", "verdict": "inconclusive"} for k in PER_STUDY]
        (tmp_path / name / budget).mkdir(parents=True)
        (tmp_path / name / budget / "claims.json").write_text(json.dumps({"claims": written[name]}))

    def no(*args, **kwargs):
        raise AssertionError("judged at report time")

    for name in written:
        monkeypatch.setattr(fedprox_real.study(name), "measure", no)
    claims, _, _ = entries.collect(CFG, tmp_path, tmp_path / "generated")
    assert claims[0] == kept | {"study": "main job", "registration": claims[0]["registration"]}
    assert claims[1:5] == [c | {"study": "real data", "registration": r["registration"]}
                           for c, r in zip(written["fedprox_mnist5k"], claims[1:5])]
    assert claims[9:13] == [c | {"study": "real data", "registration": r["registration"]}
                            for c, r in zip(written["fedprox_femnist"], claims[9:13])]
    assert [c["verdict"] for c in claims[5:9]] == ["not-run"] * 4  # fedprox_mnist has not run: measured on no runs
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
