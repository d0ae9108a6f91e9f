"""The round loop: vectorized vs reference local work, paired randomness across algorithms, checkpoint
resume, divergence and reporting rules (FedProx appendix C.3.2), and the per-round evaluation."""

from __future__ import annotations

import dataclasses
import math
from types import SimpleNamespace

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from fedbench.algorithms import FedAvg, FedDane, FedProx, FedProxAdaptiveMu, FedProxVR, Scaffold
from fedbench.data.format import FederatedDataset, Split
from fedbench.data.synthetic import generate_synthetic
from fedbench.engine import local, schedule, simulation
from fedbench.engine import round as round_
from fedbench.engine.kernels import choose_kernel
from fedbench.divergence import is_diverging, reporting_round
from fedbench.engine.metrics import DeviceData, evaluate
from fedbench.engine.simulation import SimulationConfig, simulate
from fedbench.models import build_model
from fedbench.models import mclr
from fedbench.seeding import torch_generator

PARAM_TOL = 1e-5  # float32 vectorized bmm maths vs per-client autograd, 3 rounds of lr 0.01


@pytest.fixture(scope="module")
def synthetic():
    # Synthetic(1,1) with 8 small devices (22..55 training samples: n_k = int(LogNormal(3, 0.5)) + 20), so
    # the per-client autograd reference path stays fast.
    return generate_synthetic(1, 1, num_devices=8, seed=0, lognormal_mean=3.0, lognormal_sigma=0.5, min_samples=20)


def _cfg(**changes) -> SimulationConfig:
    base = SimulationConfig(rounds=3, clients_per_round=4, local_epochs=2, batch_size=10,
                            straggler_fraction=0.5, seed=7, device="cpu", checkpoint_every=10_000)
    return dataclasses.replace(base, **changes)


def _model(ds):
    return build_model("mclr", ds.feature_shape, ds.num_classes)


def _losses(result):
    return [row["train/loss"] for row in result.history]


# ---- vectorized == reference -----------------------------------------------------------------------------

@pytest.mark.parametrize("algorithm", [FedAvg(lr=0.01), FedProx(lr=0.01, mu=1.0)], ids=["fedavg", "fedprox"])
@pytest.mark.parametrize("chunk", [local.CHUNK_STEPS, 3], ids=["one_chunk", "chunks_of_3"])
@pytest.mark.numerics
def test_vectorized_path_equals_reference_path(synthetic, algorithm, chunk, monkeypatch):
    # 3-10 steps per client and round: CHUNK_STEPS=3 makes the vectorized path cross chunk boundaries,
    # also in the middle of the stragglers' shorter schedules.
    monkeypatch.setattr(local, "CHUNK_STEPS", chunk)
    vec = simulate(_cfg(local_path="vectorized"), synthetic, _model(synthetic), algorithm)
    ref = simulate(_cfg(local_path="reference"), synthetic, _model(synthetic), algorithm)
    assert float((vec.theta - ref.theta).abs().max()) < PARAM_TOL
    assert vec.history[-1]["train/dissimilarity"] == pytest.approx(ref.history[-1]["train/dissimilarity"],
                                                                   rel=1e-4)
    assert _losses(vec) == pytest.approx(_losses(ref), abs=1e-6)
    # guard: training moved the model by much more than the tolerance
    theta0 = _model(synthetic).init(torch_generator(7, -1, "init"))
    assert float((vec.theta - theta0).abs().max()) > 1e-2


# ---- paired randomness -----------------------------------------------------------------------------------

def _record_plans(monkeypatch):
    plans = []
    real = round_.plan_round

    def recording(*args, **kwargs):
        plan = real(*args, **kwargs)
        plans.append(plan)
        return plan

    monkeypatch.setattr(round_, "plan_round", recording)  # an algorithm's own choice of clients
    monkeypatch.setattr(schedule, "plan_round", recording)  # the seeded draw (fedbench.engine.schedule)
    return plans


def _same_plans(a, b) -> bool:
    return len(a) == len(b) and all(
        all(np.array_equal(getattr(p, f), getattr(q, f)) for f in ("clients", "straggler", "epochs", "weights"))
        for p, q in zip(a, b)
    )


def _record_batches(monkeypatch):
    calls = {}
    real = schedule.minibatch_order

    def recording(seed, round_, client_id, num_samples, epochs, batch_size):
        out = real(seed, round_, client_id, num_samples, epochs, batch_size)
        calls[(round_, client_id)] = out
        return out

    monkeypatch.setattr(schedule, "minibatch_order", recording)
    return calls


def test_algorithms_under_one_seed_see_the_same_clients_stragglers_and_batches(synthetic, monkeypatch):
    cfg = _cfg(rounds=3)
    runs = {}
    for name, alg in [("fedavg", FedAvg(lr=0.01)), ("fedprox", FedProx(lr=0.01, mu=1.0)),
                      ("adaptive", FedProxAdaptiveMu(lr=0.01, mu_init=0.0))]:
        with monkeypatch.context() as m:
            plans, batches = _record_plans(m), _record_batches(m)
            simulate(cfg, synthetic, _model(synthetic), alg)
        runs[name] = (plans, batches)
    fedavg_plans = runs["fedavg"][0]
    assert len(fedavg_plans) == cfg.rounds
    assert any(p.straggler.any() for p in fedavg_plans)
    for name in ("fedprox", "adaptive"):
        assert _same_plans(runs[name][0], fedavg_plans)
    # FedAvg trains only the active clients; each of its schedules is the first E epochs of FedProx's.
    prox_batches = runs["fedprox"][1]
    assert set(runs["fedavg"][1]) < set(prox_batches)
    for key, order in runs["fedavg"][1].items():
        assert np.array_equal(order, prox_batches[key])
    for plan_r, plan in enumerate(fedavg_plans):
        for c, e in zip(plan.clients, plan.epochs):
            per_epoch = -(-int(synthetic.train.sizes[c]) // cfg.batch_size)
            assert prox_batches[(plan_r, int(c))].shape == (e * per_epoch, cfg.batch_size)


def test_different_seed_gives_different_clients(synthetic, monkeypatch):
    plans = {}
    for seed in (7, 8):
        with monkeypatch.context() as m:
            plans[seed] = _record_plans(m)
            simulate(_cfg(seed=seed), synthetic, _model(synthetic), FedAvg(lr=0.01))
    assert any(not np.array_equal(p.clients, q.clients) for p, q in zip(plans[7], plans[8]))


# ---- checkpoint and resume -------------------------------------------------------------------------------

class _StopAt:
    def __init__(self, round_=None):
        self.round_ = round_
        self.seen: list[int] = []

    def on_round_end(self, round_, row):
        self.seen.append(round_)
        if round_ == self.round_:
            raise KeyboardInterrupt


@pytest.mark.parametrize("algorithm", [FedProx(lr=0.01, mu=1.0), FedProxAdaptiveMu(lr=0.01, mu_init=1.0),
                                       FedProxVR(lr=0.01, mu=0.1, tau=4, estimator="sarah"),
                                       FedDane(lr=0.01, mu=0.5, gradient_clients=6), Scaffold(lr=0.01)],
                         ids=["fedprox", "adaptive", "fedproxvr", "feddane-c6", "scaffold-table"])
def test_resume_after_interrupt_equals_uninterrupted_run(synthetic, tmp_path, algorithm):
    cfg = _cfg(rounds=5, checkpoint_every=1)
    model = _model(synthetic)
    ckpt = tmp_path / "run" / "ckpt.pt"
    ckpt.parent.mkdir()
    full = simulate(cfg, synthetic, model, algorithm)

    interrupted = _StopAt(round_=2)
    with pytest.raises(KeyboardInterrupt):
        simulate(cfg, synthetic, model, algorithm, callbacks=(interrupted,), checkpoint=ckpt)
    assert interrupted.seen == [0, 1, 2]
    assert ckpt.exists()

    resumed_cb = _StopAt()
    resumed = simulate(cfg, synthetic, model, algorithm, callbacks=(resumed_cb,), checkpoint=ckpt)
    assert resumed_cb.seen == [2, 3, 4]  # it resumed after round 1 instead of starting over
    assert torch.equal(resumed.theta, full.theta)
    assert resumed.param_digest == full.param_digest
    assert [r["round"] for r in resumed.history] == [0, 1, 2, 3, 4, 5]
    keys = ("train/loss", "test/accuracy", "train/dissimilarity")
    assert [[r[k] for k in keys] for r in resumed.history] == [[r[k] for k in keys] for r in full.history]
    assert not ckpt.exists()  # a finished run leaves no checkpoint


def test_callback_can_stop_the_run(synthetic):
    class Stop:
        def on_round_end(self, round_, row):
            return round_ == 1

    result = simulate(_cfg(rounds=5), synthetic, _model(synthetic), FedAvg(lr=0.01), callbacks=(Stop(),))
    assert [r["round"] for r in result.history] == [0, 1, 2]  # rounds 0, 1 and the final evaluation


def test_history_rows_and_dissimilarity_every(synthetic):
    result = simulate(_cfg(rounds=3, dissimilarity_every=2), synthetic, _model(synthetic), FedAvg(lr=0.01))
    assert [r["round"] for r in result.history] == [0, 1, 2, 3]
    dissim = [r["train/dissimilarity"] for r in result.history]
    assert math.isfinite(dissim[0]) and math.isnan(dissim[1]) and math.isfinite(dissim[2])
    assert math.isfinite(dissim[3])  # the final evaluation always has it
    assert all(math.isfinite(r["train/loss"]) for r in result.history)
    assert result.history[-1]["train/loss"] == result.final.train_loss
    assert not result.diverged and result.device == "cpu"


def test_resolve_device():
    assert simulation.resolve_device("cpu") == torch.device("cpu")
    if not torch.cuda.is_available():
        assert simulation.resolve_device("auto") == torch.device("cpu")
        with pytest.raises(ValueError, match="CUDA is not available"):
            simulation.resolve_device("cuda")


def test_too_many_clients_per_round_raises(synthetic):
    with pytest.raises(ValueError, match="clients_per_round"):
        simulate(_cfg(clients_per_round=9), synthetic, _model(synthetic), FedAvg(lr=0.01))


# ---- divergence and the reporting round (appendix C.3.2) ------------------------------------------------

def test_reporting_round_converged():
    assert reporting_round([2.0, 1.5, 1.2, 1.19995, 1.1]) == (3, "converged")
    assert reporting_round([2.0, 2.00005]) == (1, "converged")  # |f_t - f_{t-1}|: an increase counts too
    assert reporting_round([2.0, 1.9998, 1.9996]) == (2, "round budget")  # steps of 2e-4 are not < 1e-4


def test_reporting_round_diverging():
    losses = [0.25 * t for t in range(14)]  # rises 0.25 a round: f_10 - f_0 = 2.5 > 1
    assert reporting_round(losses) == (10, "diverging")
    # f_t - f_{t-10} = 1 exactly is not > 1
    assert reporting_round([0.1 * t for t in range(11)]) == (10, "round budget")
    # a big jump that is not 10 rounds after a lower value is not divergence yet
    assert reporting_round([1.0, 0.5, 3.0, 2.9]) == (3, "round budget")


def test_reporting_round_non_finite_and_budget():
    assert reporting_round([1.0, 0.8, float("nan"), 0.5]) == (2, "diverged")
    assert reporting_round([1.0, 0.8, float("inf")]) == (2, "diverged")
    assert reporting_round([5.0, 4.0, 3.0, 2.5]) == (3, "round budget")
    assert reporting_round(np.array([5.0, 4.0])) == (1, "round budget")


def test_reporting_round_non_finite_first_loss():
    assert reporting_round([float("nan")]) == (0, "diverged")


def test_is_diverging():
    assert not is_diverging([])
    assert is_diverging([float("nan")])
    assert is_diverging([1.0, float("inf")])
    rising = [1.0 + 0.15 * t for t in range(11)]  # f_10 - f_0 = 1.5
    assert is_diverging(rising)
    assert not is_diverging(rising[:10])  # fewer than 11 values: no f_{t-10} yet
    assert not is_diverging([1.0] + [0.5] * 9 + [1.9])  # 1.9 - 1.0 = 0.9
    assert is_diverging([1.0] + [0.5] * 9 + [2.1])
    # the comparison is with f_{t-10} exactly, not with any earlier value
    assert is_diverging([5.0] + [0.0] * 10 + [1.5])
    assert not is_diverging([0.0] + [5.0] * 10 + [1.5])


# ---- evaluation ------------------------------------------------------------------------------------------

def _eval_dataset() -> FederatedDataset:
    g = np.random.default_rng(3)
    train_sizes, test_sizes = [4, 7, 2], [3, 0, 2]
    xs = [g.normal(size=(n, 3)).astype(np.float32) for n in train_sizes]
    ys = [g.integers(0, 3, n) for n in train_sizes]
    txs = [g.normal(size=(n, 3)).astype(np.float32) for n in test_sizes]
    tys = [g.integers(0, 3, n) for n in test_sizes]
    return FederatedDataset(name="eval", client_ids=("a", "b", "c"), train=Split.from_clients(xs, ys, (3,)),
                            test=Split.from_clients(txs, tys, (3,)), num_classes=3)


@pytest.mark.numerics
def test_evaluate_against_independent_computation():
    ds = _eval_dataset()
    model = mclr(3, 3)
    theta = torch.from_numpy(np.random.default_rng(4).normal(size=model.num_params).astype(np.float32))
    ev = evaluate(choose_kernel(model, "cpu"), theta, DeviceData.build(ds, torch.device("cpu")))

    th64 = theta.double()
    w, b = th64[:9].reshape(3, 3), th64[9:]

    def loss_and_grad(x, y):
        t = th64.clone().requires_grad_(True)
        loss = F.cross_entropy(torch.from_numpy(x).double() @ t[:9].reshape(3, 3) + t[9:], torch.from_numpy(y))
        (g,) = torch.autograd.grad(loss, t)
        return float(loss.detach()), g

    n = ds.train.sizes.astype(np.float64)
    per_device = [loss_and_grad(*ds.train.client(k)) for k in range(3)]
    losses = np.array([l for l, _ in per_device])
    grads = torch.stack([g for _, g in per_device])
    np.testing.assert_allclose(ev.device_train_loss, losses, rtol=1e-6)
    assert ev.train_loss == pytest.approx(float(n @ losses / n.sum()), rel=1e-6)

    grad_f = (torch.from_numpy(n / n.sum()) @ grads)
    expected_dissim = float(((grads - grad_f) ** 2).sum(1).mean())  # unweighted over devices
    weighted = float(torch.from_numpy(n / n.sum()) @ ((grads - grad_f) ** 2).sum(1))
    assert abs(expected_dissim - weighted) > 1e-3  # the two readings differ on this data
    assert ev.dissimilarity == pytest.approx(expected_dissim, rel=1e-5)

    correct = []
    for k in range(3):
        x, y = ds.test.client(k)
        pred = (torch.from_numpy(x).double() @ w + b).argmax(1).numpy()
        correct.append(pred == y)
    assert ev.test_accuracy == pytest.approx(np.concatenate(correct).mean(), abs=1e-12)  # pooled
    assert ev.device_test_accuracy[0] == pytest.approx(correct[0].mean(), abs=1e-12)
    assert math.isnan(ev.device_test_accuracy[1])  # device without test data
    assert ev.device_test_accuracy[2] == pytest.approx(correct[2].mean(), abs=1e-12)
    scalars = ev.scalars()
    assert set(scalars) == {"train/loss", "train/accuracy", "test/loss", "test/accuracy",
                            "train/dissimilarity", "test/error_p90"}
    finite = ev.device_test_accuracy[np.isfinite(ev.device_test_accuracy)]
    assert scalars["test/error_p90"] == pytest.approx(np.percentile(1 - finite, 90), abs=1e-12)


def test_evaluate_dissimilarity_is_zero_for_identical_devices():
    x = np.array([[1.0, -2.0, 0.5], [0.3, 0.3, -1.0]], np.float32)
    y = np.array([2, 0])
    split = Split.from_clients([x, x], [y, y], (3,))
    ds = FederatedDataset(name="twins", client_ids=("a", "b"), train=split, test=split, num_classes=3)
    model = mclr(3, 3)
    theta = torch.linspace(-1, 1, model.num_params)
    ev = evaluate(choose_kernel(model, "cpu"), theta, DeviceData.build(ds, torch.device("cpu")))
    assert ev.dissimilarity == pytest.approx(0.0, abs=1e-12)
    assert ev.device_train_loss[0] == ev.device_train_loss[1]


class _MinimalSGD:
    """Local SGD with only the required methods: the engine supplies init_clients, begin_round and
    client_result. Records what the Cohort tells it before local work."""

    keeps_partial_work = False

    def __init__(self, lr: float) -> None:
        self.lr, self.seen = lr, []

    def init(self, theta0, num_clients):
        return SimpleNamespace(theta=theta0)

    def broadcast(self, state):
        return state.theta

    def client_init(self, theta, cohort):
        grads = cohort.full_grad(theta.expand(len(cohort.clients), -1))
        self.seen.append({"round": cohort.round, "seed": cohort.seed, "weights": cohort.weights.clone(),
                          "available": cohort.available.copy(), "clients": cohort.clients.numpy().copy(),
                          "full_grad": grads, "client_grads": cohort.client_grads(cohort.clients.numpy(), theta),
                          "train_sizes": cohort.train_sizes})
        return theta.expand(len(cohort.clients), -1).clone()

    def client_step(self, w, grad_fn, theta):
        return w - self.lr * grad_fn(w)

    def server_update(self, state, local_models, weights, cohort):
        self.seen[-1]["server_weights"] = weights
        return SimpleNamespace(theta=(weights[:, None] * local_models).sum(0))


class _ExplicitSGD(_MinimalSGD):
    """The same algorithm with the optional methods written out as their defaults."""

    needs_evaluation = ("train/loss",)  # begin_round is declared with what it reads

    def init_clients(self, num_clients, theta0):
        return None

    def begin_round(self, state, evaluation):
        return state

    def client_result(self, local, bcast, cohort):
        return local, None


def test_optional_methods_default_and_cohort_describes_the_round(synthetic):
    cfg = _cfg(straggler_fraction=0.0)
    minimal = _MinimalSGD(lr=0.01)
    result = simulate(cfg, synthetic, _model(synthetic), minimal)
    fedavg = simulate(cfg, synthetic, _model(synthetic), FedAvg(lr=0.01))
    torch.testing.assert_close(result.theta, fedavg.theta, rtol=0, atol=1e-6)  # the same maths as FedAvg
    explicit = simulate(cfg, synthetic, _model(synthetic), _ExplicitSGD(lr=0.01))
    assert explicit.param_digest == result.param_digest  # the engine's defaults are the no-op methods
    assert [s["round"] for s in minimal.seen] == list(range(cfg.rounds))
    for s in minimal.seen:
        assert s["seed"] == cfg.seed and s["available"].shape == (synthetic.num_clients,) and s["available"].all()
        assert float(s["weights"].sum()) == pytest.approx(1.0)
        sizes = synthetic.train.sizes[s["clients"]]
        torch.testing.assert_close(s["weights"], torch.as_tensor(sizes / sizes.sum(), dtype=torch.float32))
        torch.testing.assert_close(s["client_grads"], s["full_grad"], rtol=0, atol=1e-6)
        np.testing.assert_array_equal(s["train_sizes"], synthetic.train.sizes)


# ---- cohort_seed: the authors' code's seeding of clients and stragglers by the round only ---------------------

def test_cohort_seed_gives_every_seed_the_same_clients_and_stragglers(synthetic, monkeypatch):
    plans, batches, params = {}, {}, {}
    for seed in (7, 8):
        with monkeypatch.context() as m:
            plans[seed], batches[seed] = _record_plans(m), _record_batches(m)
            params[seed] = simulate(_cfg(seed=seed, cohort_seed=3), synthetic, _model(synthetic),
                                    FedProx(lr=0.01, mu=1.0)).param_digest
    with monkeypatch.context() as m:
        own = _record_plans(m)
        simulate(_cfg(seed=3), synthetic, _model(synthetic), FedProx(lr=0.01, mu=1.0))
    assert _same_plans(plans[7], plans[8]) and _same_plans(plans[7], own)  # seed 3's clients and stragglers
    assert any(p.straggler.any() for p in own)
    # the minibatches and the initial model still follow the run's own seed
    shared = set(batches[7]) & set(batches[8])
    assert shared and any(not np.array_equal(batches[7][k], batches[8][k]) for k in shared)
    assert params[7] != params[8]


def test_cohort_seed_none_is_the_runs_seed(synthetic):
    a = simulate(_cfg(), synthetic, _model(synthetic), FedAvg(lr=0.01))
    b = simulate(_cfg(cohort_seed=7), synthetic, _model(synthetic), FedAvg(lr=0.01))  # _cfg's seed is 7
    c = simulate(_cfg(cohort_seed=8), synthetic, _model(synthetic), FedAvg(lr=0.01))
    assert a.param_digest == b.param_digest != c.param_digest


@pytest.mark.parametrize("bad", [-1, 1.5, "0"])
def test_cohort_seed_must_be_none_or_a_non_negative_integer(bad):
    with pytest.raises(ValueError, match="cohort_seed"):
        SimulationConfig(cohort_seed=bad)
