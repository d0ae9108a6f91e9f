"""The Mime slides' Adam panel and FedAvg against the server-only baselines on FEMNIST (mime_emnist_adam): the
registered rules word for word, the paper budget's declared arms and runs, the setting shared with mime_emnist, both
judges on made-up runs giving each verdict, the not-run entry with its command and cost, and the end-to-end run at
test size."""

from __future__ import annotations

import json

import pytest

from fedbench.algorithms.fedadam import FedAdam
from fedbench.algorithms.fedavg_momentum import FedAvgMomentum
from fedbench.algorithms.mime import Mime
from fedbench.algorithms.server_only import ServerOnly
from fedbench.claims import registry
from fedbench.claims.stats import DIGITS
from fedbench.claims.verdict import Part, often
from fedbench.engine.evaluation import EvalSpec
from fedbench.study.contract import Measurement, StudyRun, entry
from fedbench.studies import mime_emnist, mime_emnist_adam as study
from fedbench.studies.mime_emnist_adam import DECLARATION
from fedbench.studies.mime_real import READING_NAMES, differences, femnist_simulation
from fedbench.studies.real_data import not_run_entry
from tests.studies.real_fixtures import build_real
from fedbench.study.record import read_simulations

ADAM = {"beta1": 0.9, "beta2": 0.99, "eps": 1e-8}
# the rules, word for word: they decide as registered before any run (fedbench/claims/registry.json, commit ee3bae3);
# their words are generated from the rules as data (fedbench.claims.verdict.rule_text)
REGISTERED = {
    "mime/emnist62/adam-ordering": (
        "mime/emnist62/ordering's rule with Adam in place of SGDm: per seed, best test accuracy (pooled over every "
        "writer's test images) of Mime minus that of FedAvg with server-side Adam, in points, and the same for "
        "MimeLite; 5 seeds; each part: reproduced if the 95% interval lies above 0, not-reproduced if it lies below "
        "0; the claim: reproduced if every part is, not-reproduced if one is, inconclusive otherwise. Adam's step and "
        "betas fixed before any run (beta1 0.9, beta2 0.99, the same for every arm), not tuned"),
    "mime/emnist62/fedavg-below-server-only": (
        "per seed and panel (SGDm, Adam on EMNIST-62), best test accuracy of the server-only baseline (large-batch "
        "gradients of the sampled clients at the server model, one server step of the base optimizer a round) minus "
        "that of FedAvg with the same server optimizer, in points; 5 seeds; each panel: reproduced if the 95% "
        "interval lies above 0, not-reproduced if it lies below 0; the claim: 'often': reproduced if some part is "
        "reproduced and none is not-reproduced, not-reproduced if every part is, inconclusive otherwise"),
}


def test_the_rules_are_the_registered_ones_word_for_word():
    book = registry.load()
    assert {c.id: c.rule for c in DECLARATION.claims} == REGISTERED
    for c in DECLARATION.claims:
        assert book[c.id]["spec"]["rule"] == c.rule and book[c.id]["before_result"] is True
        assert c.fidelity == "stand-in"  # the label mime_emnist's claim has


def test_the_setting_is_mime_emnists(tmp_path):
    # both studies take the EMNIST-62 setting from fedbench.studies.mime_real (a study imports no other study)
    assert (study.MODEL, study.LR, study.LOCAL_EPOCHS, study.BATCH, study.READINGS) == (
        mime_emnist.MODEL, mime_emnist.LR, mime_emnist.LOCAL_EPOCHS, mime_emnist.BATCH, mime_emnist.READINGS) == (
        "leaf_femnist_cnn", 0.004, 1, 10, ("best", "tail", "final"))
    assert study.BUDGETS is mime_emnist.BUDGETS and vars(study.BUDGETS["paper"]) == {
        "rounds": 500, "clients_per_round": 35, "seeds": (0, 1, 2, 3, 4), "device": "auto", "model": "leaf_femnist_cnn"}
    assert (study._N, study._STEPS) == (mime_emnist._N, mime_emnist._STEPS) == (805263 * 0.9 / 3500, 21)
    assert (study.WRITERS, study.IMAGES, study.TRAIN_FRACTION) == (
        mime_emnist.WRITERS, mime_emnist.IMAGES, mime_emnist.TRAIN_FRACTION)
    assert DECLARATION.evaluation == mime_emnist.DECLARATION.evaluation
    assert (DECLARATION.variants, DECLARATION.seeds, DECLARATION.data_seeds) == (
        mime_emnist.DECLARATION.variants, mime_emnist.DECLARATION.seeds, mime_emnist.DECLARATION.data_seeds)
    assert DECLARATION.arm("FedAvgM") == mime_emnist.DECLARATION.arm("FedAvgM")  # the SGDm panel's FedAvg


def test_paper_budget_declares_every_arm_with_adams_fixed_step(tmp_path):
    real_root = build_real(tmp_path, "femnist_leaf")
    b = DECLARATION.budget("paper")
    sims = {a.name: femnist_simulation(DECLARATION, a.name, 0, b, real_root) for a in DECLARATION.arms}
    assert {m: s.algorithm for m, s in sims.items()} == {
        "Mime (Adam)": Mime(lr=0.001, variant="mime", base="adam", **ADAM),
        "MimeLite (Adam)": Mime(lr=0.001, variant="mimelite", base="adam", **ADAM),
        "FedAdam": FedAdam(lr=0.004, server_lr=0.001, **ADAM),
        "server-only Adam": ServerOnly(lr=0.001, base="adam", **ADAM),
        "FedAvgM": FedAvgMomentum(lr=0.004, beta=0.9, server_lr=1.0),
        "server-only SGDm": ServerOnly(lr=0.004, base="sgdm", momentum=0.9),
    }
    for s in sims.values():
        cfg = s.config
        assert (cfg.rounds, cfg.clients_per_round, cfg.local_epochs, cfg.batch_size, cfg.sampling) == (
            500, 35, 1, 10, "proportional")
        assert cfg.evaluations == (EvalSpec("test", metrics=("test/loss", "test/accuracy"), every=5),)
    assert [c.reads for c in DECLARATION.claims] == [("Mime (Adam)", "MimeLite (Adam)", "FedAdam"),
                                                      ("server-only SGDm", "FedAvgM", "server-only Adam", "FedAdam")]
    # runs: 6 arms x 5 seeds; local work in minibatch gradients: Mime 3 epochs' worth, MimeLite 2, the others 1
    assert [(s.runs, s.local_steps) for s in DECLARATION.scales] == [(5, 63), (5, 42), (20, 21)]
    assert sum(s.runs for s in DECLARATION.scales) == len(DECLARATION.runs()) == 30


def _acc(table):
    """acc(arm, seed, reading, budget) from {arm: per-seed values}: the same at every reading and budget."""
    return lambda m, s, reading, bud: table[m][s]


SEEDS = (0, 1, 2)


def _judged(claim_id, acc, readings):
    """Claim ``claim_id``'s entry as the driver judges it (fedbench.study.contract.entry): its parts (the study's
    SETTING.pairs) per seed, by best test accuracy, with its declared rule and combination."""
    c, pairs = DECLARATION.claim(claim_id), study.SETTING.pairs[claim_id]
    m = Measurement([Part(f"{a} - {b}", c.rule_for()) for a, b in pairs], differences(acc, pairs, SEEDS), "best",
                    readings, reading_names=READING_NAMES, entry={"fidelity": c.fidelity})
    return entry(StudyRun(DECLARATION, "fixture", DECLARATION.budget("fixture")), c, m)


def test_adam_ordering_gives_each_verdict():
    above, below, mixed = (71.0, 72.0, 73.5), (60.0, 61.0, 59.5), (64.0, 66.0, 65.0)
    fedadam = (65.0, 65.5, 65.0)
    cases = {"reproduced": (above, above), "not-reproduced": (above, below), "inconclusive": (above, mixed)}
    for verdict, (mime, lite) in cases.items():
        r = _judged("mime/emnist62/adam-ordering", _acc({"Mime (Adam)": mime, "MimeLite (Adam)": lite,
                                                          "FedAdam": fedadam}), ("best", "tail"))
        assert r["verdict"] == verdict, verdict
        assert [p["part"] for p in r["parts"]] == ["Mime (Adam) - FedAdam", "MimeLite (Adam) - FedAdam"]
    # the per-seed differences, exact: 71 - 65, 72 - 65.5, 73.5 - 65
    assert r["parts"][0]["per_seed"] == pytest.approx([6.0, 6.5, 8.5])


def test_often_combines_the_panels_as_registered():  # fedbench.claims.verdict.often, the claim's combination
    assert DECLARATION.claim("mime/emnist62/fedavg-below-server-only").combination == "often"
    assert often(["reproduced", "reproduced"]) == "reproduced"
    assert often(["reproduced", "inconclusive"]) == "reproduced"  # at least one, none refuted
    assert often(["reproduced", "not-reproduced"]) == "inconclusive"
    assert often(["not-reproduced", "not-reproduced"]) == "not-reproduced"
    assert often(["not-reproduced", "inconclusive"]) == "inconclusive"
    assert often(["inconclusive", "inconclusive"]) == "inconclusive"


@pytest.mark.parametrize("sgdm, adam, verdict", [
    ((3.0, 2.5, 4.0), (-0.5, 0.7, 0.1), "reproduced"),  # SGDm panel holds, Adam's inconclusive
    ((3.0, 2.5, 4.0), (-3.0, -2.5, -4.0), "inconclusive"),  # one holds, the other refuted
    ((-3.0, -2.5, -4.0), (-1.0, -1.5, -1.2), "not-reproduced"),  # both refuted
])
def test_below_server_only_gives_each_verdict(sgdm, adam, verdict):
    # server-only minus FedAvg, per seed, on each panel; FedAvg at 60% on every seed
    table = {"FedAvgM": (60.0,) * 3, "FedAdam": (60.0,) * 3,
             "server-only SGDm": tuple(60.0 + d for d in sgdm), "server-only Adam": tuple(60.0 + d for d in adam)}
    r = _judged("mime/emnist62/fedavg-below-server-only", _acc(table), ("best", "tail", "final"))
    assert r["verdict"] == verdict
    assert [p["part"] for p in r["parts"]] == ["server-only SGDm - FedAvgM", "server-only Adam - FedAdam"]
    assert r["parts"][0]["per_seed"] == pytest.approx(list(sgdm)) and r["parts"][1]["per_seed"] == pytest.approx(list(adam))
    assert r["effect"]["part"] in (r["parts"][0]["part"], r["parts"][1]["part"])
    # the same numbers at every reading and budget here: every sensitivity cell combines as the verdict does
    assert {c["verdict"] for c in r["sensitivity"]} == {verdict} and len(r["sensitivity"]) == 5
    assert "'often'" in r["would_change"]


def test_every_sensitivity_cell_combines_the_panels_by_often():
    # at the full budget the SGDm panel holds and Adam's is open (reproduced); at a quarter of the rounds the SGDm
    # panel is refuted and Adam's holds: 'often' reads inconclusive there, where every-part would read not-reproduced
    full = {"server-only SGDm": (63.0, 62.5, 64.0), "server-only Adam": (59.5, 60.7, 60.1)}
    quarter = {"server-only SGDm": (57.0, 57.5, 56.0), "server-only Adam": (63.0, 62.5, 64.0)}

    def acc(m, s, reading, bud):
        if m in ("FedAvgM", "FedAdam"):
            return 60.0
        return (quarter if bud == 0.25 else full)[m][s]

    r = _judged("mime/emnist62/fedavg-below-server-only", acc, ("best",))
    cells = {c["budget"]: c for c in r["sensitivity"]}
    assert r["verdict"] == cells[1.0]["verdict"] == cells[0.5]["verdict"] == "reproduced"
    assert cells[0.25]["verdict"] == "inconclusive"
    assert cells[1.0]["part"] == "server-only SGDm - FedAvgM"  # the panel that decides: the one reproduced
    assert cells[1.0]["estimate"] == float(f"{(3.0 + 2.5 + 4.0) / 3:.{DIGITS}g}")  # stored at stats.DIGITS digits


def test_not_run_entries_have_the_command_and_the_projected_cost():
    entries = not_run_entry(DECLARATION.name)
    assert [e["id"] for e in entries] == list(REGISTERED)
    for e in entries:
        assert e["verdict"] == "not-run" and e["command"] == "fedbench paper run mime_emnist_adam"
        assert e["cost"]["seconds"] > 0 and e["cost"]["runs"] == 30 and e["rule"] == REGISTERED[e["id"]]
        assert e["fidelity"] == "stand-in" and e["scale"]["variants"] == ["femnist_leaf"] and e["rounds_run"] is None
        # the rule is the registered one; the placeholder registered no runs, so the runs declared here are the only
        # field that may differ until the lead registers them (fedbench claims register --why ...)
        assert set(registry.status(json.loads(json.dumps(e)), registry.load())["changed_fields"]) <= {"runs"}


def test_end_to_end_at_test_size(study_run):
    ran = study_run("mime_emnist_adam")
    d, b = ran.module.DECLARATION, DECLARATION.budget("fixture")
    adam, server = ran.claims
    assert (adam["id"], server["id"]) == tuple(REGISTERED)
    for c in ran.claims:
        assert c["fidelity"] == "stand-in" and c["rounds_run"] == b.rounds and c["seeds"]["training"] == list(b.seeds)
        assert c["verdict"] in ("reproduced", "not-reproduced", "inconclusive") and c["rule"] == REGISTERED[c["id"]]
    pairs = {"Mime (Adam) - FedAdam": ("Mime (Adam)", "FedAdam"), "MimeLite (Adam) - FedAdam": ("MimeLite (Adam)", "FedAdam"),
             "server-only SGDm - FedAvgM": ("server-only SGDm", "FedAvgM"),
             "server-only Adam - FedAdam": ("server-only Adam", "FedAdam")}
    for c in ran.claims:
        for p in c["parts"]:
            a, f = pairs[p["part"]]
            # reproduced holds accuracies rounded to 3 decimals: a difference is off by at most 2 x 0.0005
            assert p["per_seed"] == [pytest.approx(x - y, abs=1e-3) for x, y in zip(c["reproduced"][a], c["reproduced"][f])]
    records = read_simulations(ran.out)
    assert len(records) == len(ran.calls) == len(d.arms) * len(b.seeds) == 12
    assert sorted(r["params"]["algorithm"] for r in records) == sorted(
        ["Mime"] * 4 + ["FedAdam"] * 2 + ["ServerOnly"] * 4 + ["FedAvgMomentum"] * 2)
    assert all(r["params"]["sampling"] == "proportional" for r in records)
    assert (ran.out / "mime_emnist_adam.png").stat().st_size > 0
