"""FedProx's real-data claims declared as data (fedbench.studies.fedprox_real_data): each study's declaration (arms,
budget, claims naming its dataset and mu), the five-dataset mean's, and the report's entries built from them."""

from pathlib import Path

from fedbench.config import load_config
from fedbench.studies import real_claims
from fedbench.studies.fedprox_real_data import FIVE, FIVE_DATASETS, MNIST5K_STUDY, declaration
from fedbench.study.paper_profile import STUDIES


def test_a_study_s_declaration():
    d = declaration(STUDIES["fedprox_shakespeare"])
    assert [(a.name, a.algorithm, a.settings) for a in d.arms] == [
        ("fedavg", "fedavg", {}), ("fedprox_mu0", "fedprox", {"mu": 0.0}),
        ("fedprox_mu0p001", "fedprox", {"mu": 0.001})]
    assert [a.name for a in d.arms] == STUDIES["fedprox_shakespeare"].algorithms
    assert d.budgets == {"paper": 40} and d.variants == ("shakespeare_fedprox",) and d.seeds == (0, 1, 2, 3, 4)
    assert [c.id for c in d.claims] == ["fedprox/shakespeare/stragglers-90/accuracy-gain",
                                        "fedprox/shakespeare/dissimilarity-lower-with-mu",
                                        "fedprox/shakespeare/stragglers-0-50/accuracy-gain",
                                        "fedprox/shakespeare/stragglers-hurt-fedavg"]
    assert d.claims[0].claim_text.startswith("On Shakespeare, with 90% stragglers, FedProx (mu = 0.001, ")
    assert d.claims[0].reads == ("fedprox_mu0p001", "fedavg") and d.claims[3].reads == ("fedavg",)
    assert declaration(MNIST5K_STUDY).budgets == {"pipeline": 100}  # params.yaml's offline study
    plays = declaration(STUDIES["fedprox_shakespeare_plays"])  # runs 20 rounds of the paper's 40
    assert plays.budgets == {"paper": 20} and {c.rounds_paper for c in plays.claims} == {40}


def test_the_five_dataset_mean_s_declaration():
    assert FIVE_DATASETS.arm("fedprox_best").settings == {"mu": {
        "synthetic_1_1": 1.0, "mnist_fedprox": 1.0, "femnist_fedprox": 1.0, "shakespeare_fedprox": 0.001,
        "sent140_fedprox": 0.01}}
    assert FIVE_DATASETS.variants == tuple(STUDIES[n].variant for n in FIVE)
    assert FIVE_DATASETS.budget("paper").rounds is None  # each dataset at its own paper rounds


def test_the_report_builds_each_fedprox_real_entry_from_a_declaration(tmp_path: Path):
    cfg = load_config("params.yaml", {"train.seeds": [0, 1, 2]})
    s = STUDIES["fedprox_femnist"]
    entries = [fn(cfg, s, tmp_path, tmp_path) for fn in (real_claims.gain_at_90, real_claims.dissimilarity,
                                                            real_claims.gain_at_0_50, real_claims.stragglers_hurt)]
    entries.append(real_claims.five_dataset_mean(cfg, tmp_path, tmp_path))
    declared = [*declaration(s).claims, *FIVE_DATASETS.claims]
    for e, c in zip(entries, declared, strict=True):
        assert (e["id"], e["where"], e["claim"], e["published"], e["rule"]) == (
            c.id, c.where, c.claim_text, c.published, c.rule)
        assert e["verdict"] == "not-run" and e["command"].startswith("fedbench paper run ")
        assert e["seeds"]["training"] == [0, 1, 2]  # the config's, not the declared ones
    assert [e["rounds_paper"] for e in entries] == [200, 200, 200, 200, None]
    assert entries[0]["fidelity"] == "reduced-budget"  # 3 seeds
