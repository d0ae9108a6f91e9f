"""The evaluation protocol (fedbench.engine.evaluation): the default is every round on everything; a declared
protocol evaluates only at the rounds due, on a seeded sample of clients or samples, the global test set
natively; evaluation never changes training; divergence is still caught in the round it happens; algorithms
get what they declare; bad input is refused in one line. Checked against direct float64 computations on a
two-client hand-made dataset."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from fedbench.algorithms import FedAvg, FedProxAdaptiveMu
from fedbench.data.format import FederatedDataset, Split
from fedbench.engine.evaluation import DEFAULT_EVALUATIONS, EvalSpec
from fedbench.engine.simulation import SimulationConfig, simulate
from fedbench.seeding import rng
from tests.algorithms.handmade import (
    ce_grad,
    ce_loss,
    handmade_config,
    handmade_dataset,
    handmade_model,
    initial_theta,
    reference_run,
)

CODE = {"train": 0, "test": 1, "global_test": 2, "dissimilarity": 3}  # the engine's stream extras, by split

# Two clients: 4 and 3 training samples, 2 and 1 test samples, and a global test set of 6 samples no client owns.
TRAIN = [([[1.0, 0.5], [-0.5, 1.5], [2.0, -1.0], [0.0, 0.3]], [0, 1, 0, 1]),
         ([[-1.0, -0.5], [0.5, 2.0], [-2.0, 0.2]], [1, 1, 0])]
TEST = [([[0.7, 0.1], [-1.0, 1.0]], [0, 1]), ([[0.2, -0.2]], [1])]
GLOBAL = ([[1.0, 1.0], [-1.0, 0.5], [0.3, -0.3], [2.0, 0.1], [-0.4, -1.2], [0.9, -2.0]], [0, 1, 1, 0, 1, 0])


def _split(parts):
    return Split.from_clients([np.array(x, np.float32) for x, _ in parts], [np.array(y, np.int64) for _, y in parts],
                              (2,))


def two_clients(global_test: bool = True) -> FederatedDataset:
    glob = Split.single(np.array(GLOBAL[0], np.float32), np.array(GLOBAL[1], np.int64)) if global_test else None
    return FederatedDataset(name="two", client_ids=("a", "b"), train=_split(TRAIN), test=_split(TEST), num_classes=2,
                            global_test=glob)


def _cfg(**changes) -> SimulationConfig:
    return handmade_config(**{"rounds": 7, "clients_per_round": 1, "local_epochs": 1, **changes})


class Trace:
    """The global model w_{r+1} after each round r."""

    def __init__(self) -> None:
        self.models: dict[int, np.ndarray] = {}

    def on_model(self, round_, theta) -> None:
        self.models[round_ + 1] = theta.double().numpy().copy()


def _run(cfg, ds, algorithm=None):
    trace = Trace()
    result = simulate(cfg, ds, handmade_model(), algorithm or FedAvg(lr=0.3), callbacks=(trace,))
    trace.models[0] = initial_theta(cfg, handmade_model())
    return result, trace.models


def _accuracy(theta: np.ndarray, x: np.ndarray, y: np.ndarray) -> float:
    w, b = theta[:4].reshape(2, 2), theta[4:]
    return float(np.mean(np.argmax(x @ w + b, axis=1) == y))


def _arrays(parts):
    return (np.concatenate([np.array(x, np.float64) for x, _ in parts]), np.concatenate([np.array(y) for _, y in parts]))


# ---- the default protocol --------------------------------------------------------------------------------------

def test_default_protocol_is_every_round_on_every_client():
    assert SimulationConfig().evaluations == DEFAULT_EVALUATIONS == (EvalSpec("train"), EvalSpec("test"))
    ds = handmade_dataset()
    cfg = handmade_config(rounds=3)
    result = simulate(cfg, ds, handmade_model(), FedAvg(lr=0.5))
    _, losses, _ = reference_run(ds, cfg, initial_theta(cfg, handmade_model()), 0.5, 0.0, False)
    assert [row["round"] for row in result.history] == [0, 1, 2, 3]
    assert [list(row) for row in result.history] == [
        ["round", "train/loss", "train/accuracy", "test/loss", "test/accuracy", "train/dissimilarity",
         "test/error_p90", "diverging", "wall_time_s", "eval_time_s"]] * 4
    np.testing.assert_allclose([row["train/loss"] for row in result.history], losses, rtol=1e-6)


# ---- cadence, listed rounds, final ------------------------------------------------------------------------------

def test_cadence_listed_rounds_and_final_evaluate_exactly_there():
    cfg = _cfg(evaluations=(EvalSpec("test", every=3, rounds=(1,)),), dissimilarity_every=0)
    result, models = _run(cfg, two_clients())
    assert [row["round"] for row in result.history] == [0, 1, 3, 6, 7]  # every 3, round 1, the final model (7)
    x, y = _arrays(TEST)
    for row in result.history:
        assert set(row) == {"round", "test/loss", "test/accuracy", "test/error_p90", "wall_time_s", "eval_time_s"}
        theta = models[row["round"]]
        assert row["test/loss"] == pytest.approx(ce_loss(theta, x, y), rel=1e-6)
        assert row["test/accuracy"] == _accuracy(theta, x, y)
        per_device = [_accuracy(theta, np.array(xs, np.float64), np.array(ys)) for xs, ys in TEST]
        assert row["test/error_p90"] == pytest.approx(np.percentile(1 - np.array(per_device), 90))
    assert sum(row["wall_time_s"] for row in result.history) > 0  # the rounds without a row are counted too
    assert result.final.test_accuracy == result.history[-1]["test/accuracy"]
    assert math.isnan(result.final.train_loss) and result.final.splits == ("test",)


def test_final_false_leaves_the_final_model_unevaluated():
    cfg = _cfg(rounds=4, evaluations=(EvalSpec("test", every=2, final=False),), dissimilarity_every=0)
    result, _ = _run(cfg, two_clients())
    assert [row["round"] for row in result.history] == [0, 2]


def test_evaluation_never_changes_training():
    base, _ = _run(_cfg(), two_clients())
    sparse, _ = _run(_cfg(evaluations=(EvalSpec("global_test", every=5, samples_sample=3),), dissimilarity_every=0),
                     two_clients())
    assert sparse.param_digest == base.param_digest
    assert len(sparse.history) < len(base.history)


# ---- samples and the global test set ---------------------------------------------------------------------------

def test_global_test_on_a_seeded_sample_of_samples():
    cfg = _cfg(evaluations=(EvalSpec("global_test", every=2, samples_sample=4),), dissimilarity_every=0)
    result, models = _run(cfg, two_clients())
    x, y = np.array(GLOBAL[0], np.float64), np.array(GLOBAL[1])
    assert [row["round"] for row in result.history] == [0, 2, 4, 6, 7]
    drawn = set()
    for row in result.history:
        r = row["round"]
        idx = np.sort(rng(cfg.seed, r, "evaluation", CODE["global_test"]).choice(6, 4, replace=False))
        drawn.add(tuple(idx))
        assert row["global_test/loss"] == pytest.approx(ce_loss(models[r], x[idx], y[idx]), rel=1e-6)
        assert row["global_test/accuracy"] == _accuracy(models[r], x[idx], y[idx])
    assert len(drawn) > 1  # a fresh sample each round
    assert np.all(np.isnan(result.final.device_test_accuracy))  # no client owns the global test set


def test_global_test_whole_and_per_device_on_the_clients_own_test_data():
    cfg = _cfg(rounds=2, evaluations=(EvalSpec("test"), EvalSpec("global_test")), dissimilarity_every=0)
    result, models = _run(cfg, two_clients())
    x, y = np.array(GLOBAL[0], np.float64), np.array(GLOBAL[1])
    theta = models[2]
    assert result.final.global_test_accuracy == _accuracy(theta, x, y)
    assert result.final.global_test_loss == pytest.approx(ce_loss(theta, x, y), rel=1e-6)
    own = [_accuracy(theta, np.array(xs, np.float64), np.array(ys)) for xs, ys in TEST]
    np.testing.assert_array_equal(result.final.device_test_accuracy, own)


def test_train_on_a_seeded_sample_of_clients():
    cfg = _cfg(rounds=4, evaluations=(EvalSpec("train", clients_sample=1),), dissimilarity_every=0)
    result, models = _run(cfg, two_clients())
    chosen = set()
    for row in result.history:
        r = row["round"]
        (k,) = rng(cfg.seed, r, "evaluation", CODE["train"]).choice(np.array([0, 1]), 1, replace=False)
        chosen.add(int(k))
        xs, ys = TRAIN[k]
        assert row["train/loss"] == pytest.approx(ce_loss(models[r], np.array(xs, np.float64), np.array(ys)), rel=1e-6)
    assert chosen == {0, 1}
    assert np.isnan(result.final.device_train_loss).sum() == 1  # the client not drawn has no per-device value


# ---- the dissimilarity ------------------------------------------------------------------------------------------

def _dissimilarity(theta, parts_idx):
    """FedProx Figure 2's (1/N) sum_k ||g_k - g||^2, g = sum_k n_k/n g_k, g_k on the given samples of client k."""
    n = np.array([len(y) for _, y in TRAIN], np.float64)
    grads = [ce_grad(theta, np.array(x, np.float64)[i], np.array(y)[i]) for (x, y), i in zip(TRAIN, parts_idx)]
    g = sum(w * gk for w, gk in zip(n / n.sum(), grads))
    return float(np.mean([np.sum((gk - g) ** 2) for gk in grads]))


def test_dissimilarity_cadence_and_per_client_sample():
    cfg = _cfg(rounds=4, evaluations=(), dissimilarity_every=2, dissimilarity_samples=2)
    result, models = _run(cfg, two_clients())
    assert [row["round"] for row in result.history] == [0, 2, 4]
    for row in result.history:
        r = row["round"]
        g = rng(cfg.seed, r, "evaluation", CODE["dissimilarity"])
        parts = [np.sort(g.choice(len(y), 2, replace=False)) for _, y in TRAIN]  # both clients have more than 2
        assert set(row) == {"round", "train/dissimilarity", "wall_time_s", "eval_time_s"}
        assert row["train/dissimilarity"] == pytest.approx(_dissimilarity(models[r], parts), rel=1e-5)


def test_dissimilarity_on_all_samples_when_the_cap_is_not_reached():
    full, _ = _run(_cfg(rounds=2, dissimilarity_samples=None), two_clients())
    capped, _ = _run(_cfg(rounds=2, dissimilarity_samples=10), two_clients())
    assert [r["train/dissimilarity"] for r in capped.history] == pytest.approx(
        [r["train/dissimilarity"] for r in full.history], rel=1e-6)


# ---- what an algorithm needs ------------------------------------------------------------------------------------

def test_adaptive_mu_gets_the_training_loss_every_round_whatever_the_protocol():
    alg = FedProxAdaptiveMu(lr=0.3, mu_init=1.0)
    base, _ = _run(_cfg(), two_clients(), alg)
    sparse, _ = _run(_cfg(evaluations=(EvalSpec("test", every=4),), dissimilarity_every=0), two_clients(), alg)
    assert sparse.param_digest == base.param_digest  # mu followed the same losses
    assert [row["round"] for row in sparse.history] == list(range(8))  # train/loss every round (its need)
    assert [row["train/loss"] for row in sparse.history[:-1]] == [row["train/loss"] for row in base.history[:-1]]
    assert "train/loss" not in sparse.history[-1]  # the final model: the protocol's evaluation only


def test_begin_round_without_declaration_or_with_an_unknown_metric_is_refused():
    @dataclasses.dataclass(frozen=True)
    class Undeclared(FedAvg):
        def begin_round(self, state, evaluation):
            return state

    @dataclasses.dataclass(frozen=True)
    class Unknown(Undeclared):
        needs_evaluation = ("train/perplexity",)

    with pytest.raises(ValueError, match="defines begin_round but declares no needs_evaluation"):
        simulate(_cfg(), two_clients(), handmade_model(), Undeclared(lr=0.1))
    with pytest.raises(ValueError, match=r"needs_evaluation \['train/perplexity'\] are not metrics"):
        simulate(_cfg(), two_clients(), handmade_model(), Unknown(lr=0.1))


# ---- divergence -------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("protocol", [(EvalSpec("test", every=100),), (EvalSpec("train", every=100),)],
                         ids=["no-training-loss", "training-loss-at-round-0"])
def test_divergence_is_caught_in_the_same_round_from_the_cohort_signal(protocol):
    # lr 3000: the training loss climbs past 1000 f_0 (finite) in round 8
    cfg = _cfg(rounds=30, clients_per_round=2)
    base, _ = _run(cfg, two_clients(), FedAvg(lr=3000.0))
    assert base.diverged and base.history[-1]["round"] == 8
    assert 1000 * base.history[0]["train/loss"] < base.history[-1]["train/loss"] < math.inf
    sparse, _ = _run(dataclasses.replace(cfg, evaluations=protocol, dissimilarity_every=0), two_clients(),
                     FedAvg(lr=3000.0))
    assert sparse.diverged and sparse.param_digest == base.param_digest
    assert sparse.history[-1]["round"] == 8  # the confirming evaluation, in the round it diverged
    assert sparse.history[-1]["train/loss"] == pytest.approx(base.history[-1]["train/loss"], rel=1e-6)
    assert [row["round"] for row in sparse.history] == [0, 8]


# ---- bad input --------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("kwargs,message", [
    ({"split": "validation"}, "evaluation split 'validation' is not allowed; allowed: train, test, global_test"),
    ({"split": "test", "every": 0}, "every=0 must be an integer >= 1"),
    ({"split": "test", "metrics": ("test/auc",)}, r"metrics \['test/auc'\] are not allowed"),
    ({"split": "test", "clients_sample": 0}, "clients_sample=0 must be an integer >= 1"),
    ({"split": "test", "clients_sample": 1, "samples_sample": 1}, "not both"),
    ({"split": "global_test", "clients_sample": 1}, "clients_sample is not allowed"),
])
def test_bad_declarations_are_refused(kwargs, message):
    with pytest.raises(ValueError, match=message):
        EvalSpec(**kwargs)


@pytest.mark.parametrize("changes,ds,message", [
    ({"evaluations": (EvalSpec("global_test"),)}, two_clients(global_test=False),
     "two has no global_test split; its splits: train, test"),
    ({"evaluations": (EvalSpec("global_test", samples_sample=7),)}, two_clients(),
     "samples_sample=7 exceeds the 6 samples of two's global_test split"),
    ({"evaluations": (EvalSpec("test", clients_sample=3),)}, two_clients(),
     "clients_sample=3 exceeds the 2 clients with test data in two"),
])
def test_a_protocol_the_dataset_cannot_serve_is_refused(changes, ds, message):
    with pytest.raises(ValueError, match=message):
        simulate(_cfg(**changes), ds, handmade_model(), FedAvg(lr=0.1))


@pytest.mark.parametrize("changes,message", [
    ({"evaluations": (EvalSpec("test"), EvalSpec("test", every=2))}, "declared twice"),
    ({"evaluations": [EvalSpec("test")]}, "must be a tuple of EvalSpec"),
    ({"dissimilarity_every": -1}, "dissimilarity_every: -1 must be an integer >= 0"),
    ({"dissimilarity_samples": 0}, "dissimilarity_samples: 0 must be an integer >= 1"),
])
def test_bad_config_is_refused(changes, message):
    with pytest.raises(ValueError, match=message):
        SimulationConfig(**changes)


# ---- resume -----------------------------------------------------------------------------------------------------

def test_resume_with_a_sparse_protocol_equals_the_uninterrupted_run(tmp_path):
    class StopAt:
        def on_round_end(self, round_, row):
            if round_ == 4:
                raise KeyboardInterrupt

    cfg = _cfg(rounds=7, checkpoint_every=1, evaluations=(EvalSpec("test", every=4),), dissimilarity_every=0)
    full, _ = _run(cfg, two_clients())
    ckpt = tmp_path / "ckpt.pt"
    with pytest.raises(KeyboardInterrupt):
        simulate(cfg, two_clients(), handmade_model(), FedAvg(lr=0.3), callbacks=(StopAt(),), checkpoint=ckpt)
    resumed = simulate(cfg, two_clients(), handmade_model(), FedAvg(lr=0.3), checkpoint=ckpt)
    assert resumed.param_digest == full.param_digest
    assert [(r["round"], r["test/loss"]) for r in resumed.history] == [(r["round"], r["test/loss"]) for r in full.history]


def test_a_study_is_refused_before_any_run_starts():
    from fedbench.study.runner import Simulation, run_simulations

    ok = Simulation("fine", _cfg(), two_clients, handmade_model(), FedAvg(lr=0.1))
    bad = Simulation("no-global", _cfg(evaluations=(EvalSpec("global_test"),)), lambda: two_clients(global_test=False),
                     handmade_model(), FedAvg(lr=0.1))
    with pytest.raises(ValueError, match="^simulation no-global: evaluations: two has no global_test split"):
        run_simulations([ok, bad], workers=1)
