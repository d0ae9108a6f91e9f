"""The Delta-FL real-data study (fedbench.studies.delta_fl_real): end to end on fixture-sized variants of its four
datasets (tests/data/fixtures writes them in the upstream formats), its readings on hand-made numbers, EMNIST's
per-seed user draw, repeatability and the not-run entry."""

from __future__ import annotations

import numpy as np
import pytest

from fedbench.claims.readings import device_percentile
from fedbench.data.datasets.femnist import deltafl_subsample
from fedbench.data.format import FederatedDataset, Split
from fedbench.studies import delta_fl_devices as devices
from fedbench.studies import delta_fl_real as study
from fedbench.studies.delta_fl_real import DECLARATION
from fedbench.studies.real_data import not_run_entry
from fedbench.study.contract import StudyRun
from fedbench.study.record import read_simulations
from fedbench.study.runner import Outcome, run_simulations
from tests.studies.real_fixtures import DELTAFL_VARIANT_PARAMS


@pytest.fixture(scope="module")
def real_root(real_root_of):
    """Fixture-sized variants of the four datasets (tests/studies/real_fixtures.DELTAFL_VARIANT_PARAMS)."""
    assert set(DELTAFL_VARIANT_PARAMS) == set(DECLARATION.variants)
    return real_root_of(DECLARATION.name)


def test_fixture_budget_judges_every_pair(study_run):
    """The run at the fixture budget (tests/studies/end_to_end.py)."""
    ran = study_run(DECLARATION.name)
    claims, folder = ran.claims, ran.out
    seeds = list(DECLARATION.seeds_at("fixture"))
    assert [c["id"] for c in claims] == [c.id for c in DECLARATION.claims]
    for c in claims:
        assert c["verdict"] != "not-run" and c["fidelity"] == "stand-in"
        assert len(c["effect"]["per_seed"]) == len(seeds) and c["seeds"]["training"] == seeds
        assert len(c["parts"]) == len(study.PAIRS)  # every pair judged at the fixture budget
    for c in claims[:2]:  # Tables 2 and 3
        assert c["figure"]["path"] == "figures/delta_fl_real/delta_fl_real.png"
    for c in claims[2:]:  # Figures 4-6: one figure, a row each
        assert c["figure"]["path"] == "figures/delta_fl_real/delta_fl_real_figures.png"
    assert (folder / "delta_fl_real_figures.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    records = read_simulations(folder)
    assert len(records) == len(study.PAIRS) * (1 + len(study.THETAS)) * len(seeds)
    for r in records:
        p = study.pair(r["params"]["pair"])
        ds = study.load_real(p.variant, str(ran.real_root))
        assert r["metrics"]["study/test_devices"] == int(ds.test_only.sum())
        assert r["history"]["round"] == [0, 3]  # the authors' cadence (every 10-50 rounds, 5, 10, ...) and the final
        assert all(v is not None for v in r["history"]["test/error_p90"] + r["history"]["train/loss"])
        # the engine's final p90 is over the devices with test data: the same devices and percentile as the study's
        assert r["final"]["test/error_p90"] == pytest.approx(r["metrics"]["study/test_error_p90"], abs=1e-5)
    table = claims[0]["reproduced"]["table"]
    for row in table.values():
        for alg in ("fedavg", *(f"delta_fl/theta={t:g}" for t in study.THETAS)):
            assert len(row[alg]["p90"]) == len(seeds) and all(0 <= v <= 100 for v in row[alg]["p90"])
        assert row["theta_star"] in study.THETAS
    # the p90 effect of a pair is FedAvg's p90 minus that of theta*, per seed, in points
    sent = table["sent140_linear"]
    star = f"delta_fl/theta={sent['theta_star']:g}"
    part = next(p for p in claims[0]["parts"] if p["part"] == "Sent140 linear")
    assert part["per_seed"] == pytest.approx([a - b for a, b in zip(sent["fedavg"]["p90"], sent[star]["p90"])], abs=1e-2)
    # Figure 6: Delta-FL(theta*)'s training loss over FedAvg's, both at round 3 (one secure aggregation call a round)
    loss = {r["name"]: r["history"]["train/loss"][-1] for r in records}
    conv = next(p for p in claims[4]["parts"] if p["part"] == "Sent140 linear")
    assert conv["per_seed"] == pytest.approx([100 * (loss[f"sent140_linear/{star}/seed={s}"]
                                                     / loss[f"sent140_linear/fedavg/seed={s}"] - 1) for s in seeds],
                                             rel=1e-4, abs=1e-3)  # the records keep 6 significant digits
    # Figures 4 and 5: FedAvg's reading minus Delta-FL's, per seed. The shares' table keeps 3 decimals (each off by at
    # most 5e-4: 1e-3 for a difference) and the effect 6 significant digits of at most 100 points (5e-5): 1.1e-3
    # bounds both; the variances' table keeps 6 significant digits, as the effect does (each off by at most 5e-7 of
    # its size: below 1e-5 (|a| + |b|) in all)
    for c, tol in ((claims[2], lambda a, b: 1.1e-3), (claims[3], lambda a, b: 1e-5 * (abs(a) + abs(b)) + 1e-15)):
        row = c["reproduced"]["table"]["sent140_linear"]
        part = next(p for p in c["parts"] if p["part"] == "Sent140 linear")
        for got, a, b in zip(part["per_seed"], row["fedavg"], row["delta_fl"], strict=True):
            assert abs(got - (a - b)) <= tol(a, b)


def _outcome(acc, diverged=False, history=()):
    return Outcome(name="run", history=list(history), final={}, diverged=diverged, param_digest="", device="cpu",
                   models=None, seconds=0.0, device_accuracy=np.asarray(acc, dtype=np.float64))


def _dataset(train_sizes, test_sizes) -> FederatedDataset:
    def split(sizes):
        xs = [np.full((n, 2), k, np.float32) for k, n in enumerate(sizes)]
        return Split.from_clients(xs, [np.full(n, k % 2, np.int64) for k, n in enumerate(sizes)], (2,))

    return FederatedDataset(name="hand", client_ids=tuple(f"u{k}" for k in range(len(train_sizes))),
                            train=split(train_sizes), test=split(test_sizes), num_classes=2,
                            hierarchy={"group": tuple(f"g{k}" for k in range(len(train_sizes)))})


def test_readings_on_hand_made_numbers():
    # 2 training devices (no test data) then 11 test devices with accuracies 1.0, 0.9, ..., 0.0
    ds = _dataset([5, 5] + [0] * 11, [0, 0] + [4] * 11)
    acc = np.concatenate([[np.nan, np.nan], np.linspace(1.0, 0.0, 11)])
    errors = devices.test_device_errors(ds, _outcome(acc))
    assert errors == pytest.approx(np.linspace(0.0, 1.0, 11))
    assert device_percentile(errors) == pytest.approx(0.9)  # linear interpolation: rank 0.9 x 10 = 9 -> 0.9
    assert device_percentile([0.0, 0.1, 0.3, 0.5]) == pytest.approx(0.44)  # rank 2.7: 0.3 + 0.7 x 0.2
    assert devices.test_device_errors(ds, _outcome(acc, diverged=True)) == pytest.approx(np.ones(11))
    mixed = _dataset([5, 5, 0], [0, 3, 4])  # a training device with test data: not a by-user split
    with pytest.raises(ValueError, match="test-only"):
        devices.test_device_errors(mixed, _outcome([np.nan, 0.5, 0.5]))


def test_history_reading_theta_choice():
    rows = [{"round": r, "test/error_p90": v} for r, v in enumerate([0.9, 0.8, 0.6, 0.5, 0.45, 0.4, 0.3, 0.2, 0.1])]
    o = _outcome([], history=rows)
    assert devices.history_p90(o, 8, "final", 1.0) == pytest.approx(0.1)
    assert devices.history_p90(o, 8, "final", 0.5) == pytest.approx(0.45)  # round 4
    assert devices.history_p90(o, 8, "tail", 1.0) == pytest.approx(np.mean([0.4, 0.3, 0.2, 0.1, 0.45]))
    stopped = _outcome([], diverged=True, history=rows[:3])
    assert devices.history_p90(stopped, 8, "final", 1.0) == 1.0 == devices.history_p90(stopped, 8, "final", 0.25)
    assert devices.history_p90(stopped, 8, "final", 0.125) == 0.8  # before the round it diverged in
    # evaluated at rounds 0, 5, 10, 15, 20 (and the final 30): the last evaluation up to the cut, by round
    sparse = _outcome([], history=[{"round": r, "test/error_p90": v}
                                   for r, v in zip([0, 5, 10, 15, 20, 30], [0.9, 0.7, 0.6, 0.5, 0.4, 0.2])])
    assert devices.history_p90(sparse, 30, "final", 1.0) == pytest.approx(0.2)
    assert devices.history_p90(sparse, 30, "final", 0.5) == pytest.approx(0.5)  # cut at 15
    assert devices.history_p90(sparse, 30, "final", 0.6) == pytest.approx(0.5)  # cut at 18: round 15's
    assert devices.history_p90(sparse, 30, "tail", 0.6) == pytest.approx(np.mean([0.9, 0.7, 0.6, 0.5]))
    assert study.best_theta({0.8: [0.3, 0.5], 0.5: [0.2, 0.4], 0.1: [0.35, 0.3]}) == 0.5
    assert study.best_theta({0.8: [0.3, 0.3], 0.5: [0.3, 0.3], 0.1: [0.4, 0.4]}) == 0.8  # a tie: the first level


def test_emnist_user_draw_keeps_the_authors_clients():
    ds = _dataset([3, 4, 5, 6, 0, 0, 0, 0], [0, 0, 0, 0, 2, 3, 4, 5])
    train, test = deltafl_subsample(ds, seed=3, fraction=0.5)
    sub = devices.subset_clients(ds, np.concatenate([train, test]), {"deltafl_subsample": {"seed": 3}})
    kept = np.sort(np.concatenate([train, test]))
    assert sub.client_ids == tuple(ds.client_ids[k] for k in kept) and len(train) == len(test) == 2
    assert sub.hierarchy["group"] == tuple(f"g{k}" for k in kept)
    for j, k in enumerate(kept):
        for a, b in zip(sub.train.client(j) + sub.test.client(j), ds.train.client(k) + ds.test.client(k)):
            assert np.array_equal(a, b)
    assert sub.partition["deltafl_subsample"] == {"seed": 3} and sub.content_hash != ds.content_hash
    with pytest.raises(ValueError, match="distinct"):
        devices.subset_clients(ds, np.array([1, 1]), {})


def test_same_seed_same_numbers(real_root):
    budget = study.Budget(device="cpu", seeds=(0,), rounds=2, subsample=False, pairs=("sent140_linear",))
    sims = study.simulations(StudyRun(DECLARATION, "fixture", budget, real_root))
    delta = [sims[("sent140_linear", 0.5, 0)]]
    first, again = run_simulations(delta, workers=1), run_simulations(delta, workers=1)
    assert first[0].param_digest == again[0].param_digest
    assert np.array_equal(first[0].device_accuracy, again[0].device_accuracy, equal_nan=True)
    assert set(sims) == {("sent140_linear", t, 0) for t in (None, *study.THETAS)}


def test_not_run_entry_and_paper_budget():
    entries = not_run_entry(DECLARATION.name)
    assert [e["id"] for e in entries] == [c.id for c in DECLARATION.claims]
    for e in entries:
        assert e["verdict"] == "not-run" and e["command"] == "fedbench paper run delta_fl_real"
        assert e["cost"]["seconds"] > 0 and e["cost"]["runs"] == len(study.PAIRS) * 4 * 5  # Figures 4-6 add no run
    paper = DECLARATION.budget("paper")
    assert paper.device == "auto" and paper.seeds == DECLARATION.seeds == (1, 2, 3, 4, 5)
    assert paper.rounds is None and paper.subsample
    assert [s.model for s in DECLARATION.scales] == [p.model for p in study.PAIRS]
    assert [s.eval_every for s in DECLARATION.scales] == [50, 10, 20, 25, 10]  # the authors' scripts
    assert DECLARATION.knobs == {"pair": study.PAIRS, "theta": (0.8, 0.5, 0.1)}
    assert [a.name for a in DECLARATION.arms] == ["fedavg", "delta_fl"]
    assert all(c.reads == ("fedavg", "delta_fl") for c in DECLARATION.claims)
    (train, test) = study.evaluations(study.pair("emnist_cnn"))
    assert (train.split, train.every, train.rounds, train.metrics) == ("train", 10, (5, 10, 15, 20, 75), ("train/loss",))
    assert (test.split, test.every, test.final) == ("test", 10, True)
