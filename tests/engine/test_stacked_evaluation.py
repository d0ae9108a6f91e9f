"""Stacked evaluation (fedbench.engine.simulation._evaluate, fedbench.engine.metrics.evaluate_many): the runs of a
stack that evaluate the same splits of the same data are evaluated in one batched pass, and every run's history is
the one it has alone, bit for bit on the CPU. Runs that each evaluate their own seeded sample share one pass on the
union of their samples where UNION_PASS_DEVICES says (CUDA); forced on the CPU here, each run's numbers then equal
its own pass's within a tolerance derived below (float32 logits of a product of another shape)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

from fedbench.algorithms import FedProx
from fedbench.data.synthetic import generate_synthetic
from fedbench.engine import simulation
from fedbench.engine.evaluation import EvalSpec
from fedbench.engine.kernels import choose_kernel
from fedbench.engine.metrics import DeviceData, evaluate_many
from fedbench.engine.simulation import RunSpec, SimulationConfig, simulate, simulate_stack
from fedbench.models import build_model

PROTOCOLS = {
    "sampled clients and samples": (EvalSpec("train", samples_sample=60), EvalSpec("test", every=2, clients_sample=4)),
    "sampled test, full train": (EvalSpec("train"), EvalSpec("test", clients_sample=5)),
    "full": (EvalSpec("train"), EvalSpec("test")),
}


@pytest.fixture(scope="module")
def dataset():
    return generate_synthetic(1, 1, num_devices=12, seed=0, lognormal_mean=3.0, lognormal_sigma=0.7, min_samples=20)


@pytest.mark.parametrize("protocol", sorted(PROTOCOLS))
def test_a_stack_evaluates_in_one_pass_and_each_run_as_alone(protocol, dataset, monkeypatch):
    model = build_model("mclr", dataset.feature_shape, dataset.num_classes)
    cfg = SimulationConfig(rounds=4, clients_per_round=4, local_epochs=2, batch_size=10, straggler_fraction=0.3,
                           device="cpu", evaluations=PROTOCOLS[protocol], dissimilarity_every=2)
    specs = [RunSpec(dataclasses.replace(cfg, seed=s), dataset, FedProx(lr=0.05, mu=m)) for s in (1, 2, 3)
             for m in (0.0, 1.0)]
    alone = [simulate(s.cfg, s.dataset, model, s.algorithm) for s in specs]
    passes = []
    real = simulation.evaluate_many

    def counting(kernel, thetas, *args, **kwargs):
        passes.append(thetas.shape[0])
        return real(kernel, thetas, *args, **kwargs)

    monkeypatch.setattr(simulation, "evaluate_many", counting)
    stacked = simulate_stack(model, specs)
    # round 0: every run's model in one pass, unless each run draws its own sample (then one pass a run on the CPU)
    assert passes[0] == (len(specs) if protocol == "full" else 1)
    for a, b in zip(alone, stacked):
        assert torch.equal(a.theta, b.theta) and len(a.history) == len(b.history)
        for ra, rb in zip(a.history, b.history):
            assert ra.keys() == rb.keys()
            for key, value in ra.items():
                if key in ("wall_time_s", "eval_time_s"):
                    continue
                assert value == rb[key] or (np.isnan(value) and np.isnan(rb[key])), (key, ra["round"])
        assert np.array_equal(a.final.device_test_accuracy, b.final.device_test_accuracy, equal_nan=True)


U = 2.0**-24  # float32 unit roundoff


def _tolerance(thetas: torch.Tensor, x_aug: torch.Tensor, max_loss: float) -> float:
    """|own pass - union pass| of a mean loss. A logit z = w . x_aug (d + 1 = 61 terms) summed in any order is within
    gamma_61 sum_i |w_i x_i| <= gamma_61 ||w|| ||x_aug|| of the exact value (Higham, Accuracy and Stability, 3.1;
    gamma_n = n u / (1 - n u)), so two orders differ by at most twice that; the cross-entropy moves by at most 2 max_c
    |dz_c| (its gradient p - e_y has L1 norm <= 2), and each pass's log-sum-exp adds a few roundings of the loss and
    the logits (8 u (L + |z|) for both passes); a mean over samples moves by at most the largest move."""
    gamma = 61 * U / (1 - 61 * U)
    wx = float(thetas.view(thetas.shape[0], 61, -1).norm(dim=1).max() * x_aug.norm(dim=1).max())
    return 2 * 2 * gamma * wx + 8 * U * (max_loss + wx)


def test_the_union_pass_where_enabled_is_one_pass_within_the_derived_tolerance(dataset, monkeypatch):
    model = build_model("mclr", dataset.feature_shape, dataset.num_classes)
    cfg = SimulationConfig(rounds=4, clients_per_round=4, local_epochs=2, batch_size=10, device="cpu",
                           evaluations=PROTOCOLS["sampled clients and samples"], dissimilarity_every=0)
    specs = [RunSpec(dataclasses.replace(cfg, seed=s), dataset, FedProx(lr=0.05, mu=1.0)) for s in (1, 2, 3)]
    models = []

    class Keep:
        def on_model(self, round_, theta):
            models.append(theta.clone())

    alone = [simulate(s.cfg, s.dataset, model, s.algorithm, callbacks=(Keep(),)) for s in specs]
    passes = []
    real = simulation.evaluate_many

    def counting(kernel, thetas, *args, **kwargs):
        passes.append(thetas.shape[0])
        return real(kernel, thetas, *args, **kwargs)

    monkeypatch.setattr(simulation, "evaluate_many", counting)
    monkeypatch.setattr(simulation, "UNION_PASS_DEVICES", ("cpu", "cuda"))
    stacked = simulate_stack(model, specs)
    assert passes[0] == len(specs)
    x_aug = choose_kernel(model, "cpu").prepare(DeviceData.build(dataset, torch.device("cpu")).x_train)
    thetas = torch.stack(models + [model.init(torch.Generator().manual_seed(0))])
    losses = [row[k] for a in alone for row in a.history for k in ("train/loss", "test/loss") if k in row]
    tol = _tolerance(thetas, x_aug, max(losses))
    assert 0 < tol < 1e-3 * min(losses)  # a bound far below the losses themselves
    for a, b in zip(alone, stacked):
        assert torch.equal(a.theta, b.theta)  # training is untouched
        for ra, rb in zip(a.history, b.history):
            for key in ("train/loss", "test/loss"):
                if key in ra:
                    assert abs(ra[key] - rb[key]) <= tol, (key, ra["round"], ra[key] - rb[key])
            for key in ("train/accuracy", "test/accuracy"):
                if key in ra:
                    assert ra[key] == rb[key], (key, ra["round"])


def test_each_model_on_its_own_samples_equals_its_own_pass(dataset):
    model = build_model("mclr", dataset.feature_shape, dataset.num_classes)
    kernel = choose_kernel(model, "cpu")
    data = DeviceData.build(dataset, torch.device("cpu"))
    g = torch.Generator().manual_seed(0)
    thetas = 0.1 * torch.randn(3, model.num_params, generator=g)
    rng = np.random.default_rng(0)
    n_train, n_test = len(dataset.train.y), len(dataset.test.y)
    samples = [{"train": np.sort(rng.choice(n_train, 40, replace=False)), "test": np.sort(rng.choice(n_test, 30, replace=False))},
               {"test": np.sort(rng.choice(n_test, 25, replace=False))},  # the full training split
               {"train": np.sort(rng.choice(n_train, 10, replace=False))}]  # the full test split
    together = evaluate_many(kernel, thetas, data, False, splits=("train", "test"), samples=samples)
    for i, s in enumerate(samples):
        (own,) = evaluate_many(kernel, thetas[i: i + 1], data, False, splits=("train", "test"), samples=s)
        tol = _tolerance(thetas, kernel.prepare(data.x_train), max(own.train_loss, own.test_loss))
        for f in ("train_loss", "test_loss"):
            assert abs(getattr(own, f) - getattr(together[i], f)) <= tol, (i, f)
        for f in ("train_accuracy", "test_accuracy"):
            assert getattr(own, f) == getattr(together[i], f), (i, f)
        assert np.allclose(own.device_train_loss, together[i].device_train_loss, rtol=0, atol=tol, equal_nan=True)
        assert np.array_equal(own.device_test_accuracy, together[i].device_test_accuracy, equal_nan=True)
    with pytest.raises(ValueError, match="2 sample plans for 3 models"):
        evaluate_many(kernel, thetas, data, False, samples=samples[:2])


@pytest.mark.parametrize("name,kernel", [("cifar_cnn", "vmap"), ("cifar_cnn", "loop"),
                                         ("fedprox_sent140_lstm", "rnn"), ("fedprox_sent140_lstm", "loop")])
def test_m_models_in_one_pass_equal_a_pass_a_model_within_float32(name, kernel, monkeypatch):
    """Issue 49, D5: where BATCHED_EVAL_DEVICES says (CUDA), every kernel evaluates M models in one pass a chunk (vmap
    over the models; the rnn kernel's forward with the models as rows). Forced on the CPU here: each model's losses
    equal its own pass's within float32 rounding (a batched convolution or recurrence sums in another order, so not
    bit for bit: the CPU keeps a pass a model), its correctness exactly, and the pass count does not grow with M."""
    import fedbench.engine.kernels.generic as generic
    from fedbench.bench.federation import bench_model
    from fedbench.bench.proxies import ForwardCount

    spec = bench_model(name)
    model = spec.build()
    k = choose_kernel(model, "cpu", kernel)
    thetas = torch.stack([model.init(torch.Generator().manual_seed(i)) for i in range(3)])
    g = torch.Generator().manual_seed(0)
    x = (torch.randint(0, 50, (9, *spec.feature_shape), generator=g) if spec.vocabulary
         else torch.randn(9, *spec.feature_shape, generator=g))
    y = torch.randint(0, spec.num_classes, (9,), generator=g)
    with ForwardCount() as alone, torch.no_grad():
        own = [k.per_example(th, x, y) for th in thetas]
    monkeypatch.setattr(generic, "BATCHED_EVAL_DEVICES", ("cpu", "cuda"))
    with ForwardCount() as together, torch.no_grad():
        loss, correct = k.per_example(thetas, x, y)
    assert (alone.count, together.count) == (3, 1)
    for i, (l_i, c_i) in enumerate(own):
        torch.testing.assert_close(loss[i], l_i, rtol=1e-5, atol=1e-6)
        assert torch.equal(correct[i], c_i)


def test_the_cpu_evaluates_a_pass_a_model_bit_for_bit():
    import fedbench.engine.kernels.generic as generic

    assert "cpu" not in generic.BATCHED_EVAL_DEVICES


@pytest.mark.parametrize("model_name", ["mclr", "cifar_cnn"])
def test_runs_with_their_own_dissimilarity_sample_share_one_segmented_backward_where_enabled(model_name, monkeypatch):
    """Issue 49, D5: on the devices of UNION_PASS_DEVICES (CUDA) runs whose dissimilarity is taken on their own
    seeded sample are no longer evaluated alone: every (run, client) pair is a segment of one backward a chunk.
    Forced on the CPU here: one evaluation call for the stack, and each run's dissimilarity equal to its own
    pass's within float32 rounding (the CPU keeps a pass a run)."""
    import fedbench.engine.kernels.generic as generic
    from fedbench.bench.federation import bench_model, make_federation

    if model_name == "mclr":
        data = generate_synthetic(1, 1, num_devices=8, seed=0, lognormal_mean=3.0, lognormal_sigma=0.7, min_samples=20)
        model = build_model("mclr", data.feature_shape, data.num_classes)
    else:
        spec = bench_model("cifar_cnn")
        model = spec.build()
        data = make_federation(spec, model, 4, sizes=np.array([3, 5, 2, 4]))
    cfg = SimulationConfig(rounds=2, clients_per_round=2, local_steps=2, batch_size=5, device="cpu",
                           dissimilarity_every=1, dissimilarity_samples=3, checkpoint_every=10**9)
    specs = [RunSpec(dataclasses.replace(cfg, seed=s), data, FedProx(lr=0.05, mu=1.0)) for s in (1, 2, 3)]
    alone = [simulate(s.cfg, s.dataset, model, s.algorithm) for s in specs]
    calls = []
    real = simulation.evaluate_many

    def counting(kernel, thetas, *args, **kwargs):
        calls.append(thetas.shape[0])
        return real(kernel, thetas, *args, **kwargs)

    monkeypatch.setattr(simulation, "evaluate_many", counting)
    monkeypatch.setattr(simulation, "UNION_PASS_DEVICES", ("cpu", "cuda"))
    monkeypatch.setattr(generic, "BATCHED_EVAL_DEVICES", ("cpu", "cuda"))
    stacked = simulate_stack(model, specs)
    assert calls[0] == 3  # round 0: the three runs in one call
    for a, b in zip(alone, stacked):
        assert torch.equal(a.theta, b.theta)  # training is untouched
        da = [row["train/dissimilarity"] for row in a.history]
        db = [row["train/dissimilarity"] for row in b.history]
        np.testing.assert_allclose(db, da, rtol=1e-5, atol=1e-7)


def test_the_dissimilarity_of_m_models_is_one_segmented_backward_where_enabled(monkeypatch):
    """Issue 49, D5: the dissimilarity's client gradients at M models (a kernel without its own segment_grads_many)
    as one segmented backward over the M x S (model, client) pairs on BATCHED_EVAL_DEVICES (CUDA); forced on the
    CPU: equal to a backward a model within float32 rounding, with one grad call a chunk instead of M."""
    import fedbench.engine.kernels.generic as generic
    from fedbench.bench.federation import bench_model, make_federation

    spec = bench_model("cifar_cnn")
    model = spec.build()
    data = DeviceData.build(make_federation(spec, model, 4, sizes=np.array([3, 5, 2, 4])), torch.device("cpu"))
    kernel = choose_kernel(model, "cpu", "vmap")
    thetas = torch.stack([model.init(torch.Generator().manual_seed(i)) for i in range(3)])
    grads = []
    real = kernel.grad

    def counting(theta, *args):
        grads.append(theta.shape[0])
        return real(theta, *args)

    monkeypatch.setattr(kernel, "grad", counting)
    apart = [e.dissimilarity for e in evaluate_many(kernel, thetas, data, True, splits=())]
    assert len(grads) == 3
    monkeypatch.setattr(generic, "BATCHED_EVAL_DEVICES", ("cpu", "cuda"))
    together = [e.dissimilarity for e in evaluate_many(kernel, thetas, data, True, splits=())]
    assert len(grads) == 4 and grads[-1] == 3 * 4  # one call: 3 models x 4 clients as rows
    np.testing.assert_allclose(together, apart, rtol=1e-5)
