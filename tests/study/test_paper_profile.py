"""The paper profile's E = 1 studies (fedbench.study.paper_profile, profile ``partial-work-e1``: FedProx Figures 9
and 10 on the four real datasets): what each runs, that the profile loads as params, and their projected cost from
the measured unit costs of the E = 20 study of the same model and batch (fedbench.study.costs.study_cost)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from fedbench.study.costs import study_cost
from fedbench.config import load_config
from fedbench.study.paper_profile import (PAPER, PARTIAL_WORK_E1, PROFILES, STUDIES, UNIT_COSTS_OF, overrides,
                                          study_scales)

PARAMS = Path(__file__).resolve().parents[2] / "params.yaml"


def test_the_e1_studies_are_the_paper_studies_at_one_epoch_fedavg_against_mu0_at_50_and_90():
    assert PROFILES["partial-work-e1"] == PARTIAL_WORK_E1 == [
        "fedprox_mnist_e1", "fedprox_femnist_e1", "fedprox_shakespeare_e1", "fedprox_sent140_e1"]
    assert not set(PARTIAL_WORK_E1) & set(PAPER)  # the paper profile keeps its four E = 20 studies
    assert PAPER == ["fedprox_mnist", "fedprox_femnist", "fedprox_shakespeare", "fedprox_sent140"]
    for name, e20 in zip(PARTIAL_WORK_E1, PAPER):
        s, base = STUDIES[name], STUDIES[e20]
        assert (s.variant, s.model, s.lr, s.rounds) == (base.variant, base.model, base.lr, base.rounds)
        study = s.study()
        assert study["algorithms"] == ["fedavg", "fedprox_mu0"] and study["stragglers"] == [0.5, 0.9]
        assert study["train"]["local_epochs"] == 1 and study["train"]["straggler_epochs"] == "minibatches"
        assert UNIT_COSTS_OF[name] == e20
    # the E = 20 studies' settings are unchanged (their runs' fingerprints, their claims' registered scale), but for
    # the runs that compute the dissimilarity: those Figure 8's claim reads (FedAvg and the best mu at 0%)
    assert STUDIES["fedprox_mnist"].study() == {
        "datasets": ["mnist_fedprox"], "algorithms": ["fedavg", "fedprox_mu0", "fedprox_mu1"],
        "stragglers": [0.0, 0.5, 0.9], "train": {"model": "mclr", "lr": 0.03, "rounds": 100,
                                                 "dissimilarity_variants": ["fedavg", "fedprox_mu1"],
                                                 "dissimilarity_stragglers": [0.0]}}
    assert "straggler_epochs" not in STUDIES["fedprox_sent140"].study()["train"]
    assert "dissimilarity_variants" not in study["train"]  # an E = 1 study: as before (every run computes it)


def test_every_run_of_an_e1_study_is_read():
    """2 arms x 2 straggler levels x 5 seeds, all read by fedprox/real/partial-work-e1; one epoch a round."""
    (read,) = STUDIES["fedprox_mnist_e1"].scales(5)
    assert read.read and read.runs == 20 and read.local_epochs == 1 and read.rounds == 100
    # the E = 20 study: 20 runs read, 10 of them computing the dissimilarity, 25 context
    assert [(x.runs, x.read, x.dissimilarity_every) for x in STUDIES["fedprox_mnist"].scales(5)] == [
        (10, True, 1), (10, True, 0), (25, False, 0)]
    assert study_scales(5)["fedprox_sent140_e1"][0].runs == 20


def test_the_e1_profile_loads_as_params_with_minibatch_stragglers():
    raw = yaml.safe_load(PARAMS.read_text())
    cfg = load_config(PARAMS, overrides(PARTIAL_WORK_E1, raw["data"]))
    for name in PARTIAL_WORK_E1:
        t = cfg.train_for(STUDIES[name].variant)
        assert (t.local_epochs, t.straggler_epochs) == (1, "minibatches") and cfg.studies[name].stragglers == (0.5, 0.9)
    assert cfg.train.local_epochs == 20 and cfg.train.straggler_epochs == "authors_code"  # the main job's


UNITS = {"step_s": 0.001, "round_s": 0.01, "eval_s": 0.1, "eval_sample_s": 1e-6, "grad_sample_s": 2e-6}


def _costs(folder: Path, studies: dict[str, dict]) -> Path:
    folder.mkdir(exist_ok=True)
    (folder / "paper-cost.json").write_text(json.dumps({"device_name": "test CPU", "date": "2026-01-01", "studies": {
        name: {"measured_at": "2026-01-02 00:00 UTC", "units": {"mclr@10": units}} for name, units in studies.items()}}))
    return folder


def _row_steps(name: str, runs: int) -> int:
    """The client-steps of a stack of ``runs`` runs of study ``name``'s read scale, drawn as the runner draws them
    (fedbench.study.drawn: its chain equal to the engine's round plan is tested in tests/bench/test_drawn_cost.py)."""
    from fedbench.study.drawn import client_sizes, draw_stack

    scale = STUDIES[name].scales(5)[0]
    sizes, source = client_sizes(name, scale, Path("/nonexistent"))
    assert source.startswith("lognormal") and len(sizes) == 1000
    return int(draw_stack(scale, runs, sizes).row_steps.sum())


def test_an_e1_study_is_priced_by_its_e20_studys_measured_units(tmp_path):
    """fedprox_mnist_e1: 20 runs of 100 rounds, one stack; its units (timed at no stated rows: every client-step at
    step_s) price its drawn client-steps; a round's and an evaluation's fixed costs once a stack; 101 evaluations
    (rounds 0-100) of 69,035 samples a run; 101 dissimilarities of round(69,035 x 0.9) = 62,132 gradients a run, every
    run computing it (fedprox_mnist's own unit costs, the same model mclr and batch 10)."""
    folder = _costs(tmp_path / "bench", {"fedprox_mnist": UNITS})
    data = Path("/nonexistent")  # no built dataset: client sizes drawn from FedProx Table 1
    c = study_cost("fedprox_mnist_e1", STUDIES["fedprox_mnist_e1"].scales(5), "cpu", folder, data_root=data)
    steps = _row_steps("fedprox_mnist_e1", 20)
    evaluation = 101 * (0.1 + 20 * 69035 * 1e-6)
    assert c["seconds"] == pytest.approx(steps * 0.001 + 100 * 0.01 + evaluation + 20 * 101 * 62132 * 2e-6, abs=0.05)
    assert c["source"] == "measured" and c["units_of"] == "fedprox_mnist" and c["left_out"] == 0 and c["stacks"] == 1
    assert "the unit costs measured for fedprox_mnist" in c["basis"] and c["machine"] == "test CPU"
    # the E = 20 study at the same units: its 20 read runs in one stack, only 10 of them computing the dissimilarity
    e20 = study_cost("fedprox_mnist", STUDIES["fedprox_mnist"].scales(5), "cpu", folder, data_root=data)
    assert e20["train_hours"] == pytest.approx((_row_steps("fedprox_mnist", 20) * 0.001 + 100 * 0.01) / 3600,
                                               abs=0.005)
    assert e20["eval_hours"] == pytest.approx((evaluation + 10 * 101 * 62132 * 2e-6) / 3600, abs=0.005)
    assert "units_of" not in e20 and (e20["runs"], e20["left_out"], e20["stacks"]) == (20, 25, 1)
    # measured for itself, an E = 1 study is priced by its own units
    own = study_cost("fedprox_mnist_e1", STUDIES["fedprox_mnist_e1"].scales(5), "cpu",
                     _costs(tmp_path / "own", {"fedprox_mnist": UNITS, "fedprox_mnist_e1": UNITS | {"step_s": 0.002}}),
                     data_root=data)
    assert "units_of" not in own and own["seconds"] == pytest.approx(c["seconds"] + steps * 0.001, abs=0.1)
    # no measurement at all: the per-model table
    assert study_cost("fedprox_mnist_e1", STUDIES["fedprox_mnist_e1"].scales(5), "cpu",
                      tmp_path / "none")["source"] == "projected"


def test_only_the_runs_a_claim_reads_the_dissimilarity_of_compute_it():
    """Figure 8's claim (fedbench.studies.real_claims.dissimilarity) reads FedAvg and FedProx at the best mu without
    stragglers: of each E = 20 study's 45 runs (3 arms x 3 levels x 5 seeds), those 10 compute it, as the train stage
    decides from the study's settings (fedbench.config.TrainConfig.computes_dissimilarity) and as the proxy counts."""
    from fedbench.bench.proxies import dissimilarity_runs
    from fedbench.study.paper_profile import DISSIMILARITY_READ, READ

    raw = yaml.safe_load(PARAMS.read_text())
    cfg = load_config(PARAMS, overrides(PROFILES["paper"] + PROFILES["shakespeare-plays"], raw["data"]))
    assert set(DISSIMILARITY_READ) == {(v, f) for v, f in READ if f == 0.0}
    for name in PROFILES["paper"] + PROFILES["shakespeare-plays"]:
        s = STUDIES[name]
        t = cfg.train_for(s.variant)
        computing = [(v, f) for v in s.algorithms for f in s.stragglers if t.computes_dissimilarity(v, f)]
        assert computing == [("fedavg", 0.0), (s.best_variant, 0.0)], name
        assert [(v, f) for v in s.algorithms for f in s.stragglers if s.computes_dissimilarity(v, f)] == computing
        priced = [x for x in s.scales(5) if x.dissimilarity_every]
        assert [(x.runs, x.read) for x in priced] == [(10, True)], name  # the cost prices those 10 alone
    for name in PARTIAL_WORK_E1:  # no claim reads it at E = 1, and the settings leave it to every run, as before
        train = STUDIES[name].study()["train"]
        assert not {"dissimilarity_variants", "dissimilarity_stragglers"} & set(train)
        assert sum(x.runs for x in STUDIES[name].scales(5) if x.dissimilarity_every) == 20
    assert dissimilarity_runs() == {name: {"computed": 10, "read": 10} for name in PAPER}
