"""The main job's FedProx claims declared as data (fedbench.studies.fedprox_main_job): the declaration agrees with
params.yaml, the report builds every main-job entry from it, and a rule's config-dependent field is filled."""

import subprocess
import sys

import pandas as pd

from fedbench.config import load_config
from fedbench.studies.fedprox_main_job_claims import MEASURES
from fedbench.studies.fedprox_main_job import DECLARATION, MAIN_STUDIES, evaluate_claims

CFG = load_config("params.yaml")


def test_declaration_is_params_yaml_s_default_job():
    assert DECLARATION.seeds == CFG.train.seeds == (0, 1, 2, 3, 4)
    assert DECLARATION.budgets == {"pipeline": CFG.train.rounds, "paper": 200}
    arms = {a.name: a for s in MAIN_STUDIES for a in CFG.declaration(s).arms}  # params.yaml's view of its studies
    assert DECLARATION.arms == tuple(arms[n] for n in ("fedavg", "fedprox_mu0", "fedprox_mu1"))
    assert DECLARATION.arm("fedprox_mu1").settings == {"mu": 1.0}
    assert set(DECLARATION.knobs["stragglers"]) == {f for s in MAIN_STUDIES for f in CFG.studies[s].stragglers}


def test_every_main_job_entry_is_built_from_the_declaration():
    cfg = load_config("params.yaml", {"train.seeds": [0, 1], "train.rounds": 10})
    entries = evaluate_claims(cfg, pd.DataFrame())  # no runs: every entry not-run
    assert len(entries) == len(MEASURES) == len(DECLARATION.claims) == 10
    for e, c in zip(entries, DECLARATION.claims):
        assert (e["id"], e["where"], e["claim"], e["published"]) == (c.id, c.where, c.claim_text, c.published)
        assert e["verdict"] == "not-run" and e["observed"].startswith("missing runs: ")
        assert e["seeds"] == {"training": [0, 1], "data": [0]}  # the config's seeds, not the declared ones
        assert (e["rounds_run"], e["rounds_paper"], e["fidelity"]) == (None, 200, "smoke-check")  # not-run: no rounds run; 10 planned <= 200/10
        assert "{" not in e["rule"]  # every field filled


def test_the_iid_rule_names_the_configured_straggler_levels():
    robust = "fedprox/synthetic-iid/robust-to-stragglers"
    assert "each level ({levels}):" in DECLARATION.claim(robust).rule

    def rule(stragglers):
        cfg = load_config("params.yaml", {"studies.stragglers.stragglers": stragglers})
        return next(e for e in evaluate_claims(cfg, pd.DataFrame()) if e["id"] == robust)["rule"]

    assert "each level (10% stragglers, 50% stragglers, 90% stragglers): " in rule([0.0, 0.1, 0.5, 0.9])
    assert "each level (50% stragglers): " in rule([0.0, 0.5])
    assert "each level (none): " in rule([0.0])


def test_the_declaration_imports_no_torch():
    probe = "import sys, fedbench.studies.fedprox_main_job; print('torch' in sys.modules, 'pandas' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["False", "False"]


def test_a_declared_precision_reaches_the_runs_and_their_params_and_fp32_changes_neither():
    """params.yaml's train.precision (fedbench.engine.precision): fp32, the default, leaves every run's params and
    config as they were; a reduced mode is each run's config and is recorded with its params (its own fingerprint)."""
    import dataclasses as dc

    from fedbench.config import load_config
    from fedbench.studies import fedprox_main_job as job

    cfg = load_config("params.yaml")
    assert cfg.train.precision == "fp32"
    key = ("synthetic_1_1", "fedprox_mu1", 0.9, 0)
    assert "precision" not in job.run_params(cfg, *key)
    bf16 = dc.replace(cfg, train=dc.replace(cfg.train, precision="bf16"))
    assert job.run_params(bf16, *key)["precision"] == "bf16"
