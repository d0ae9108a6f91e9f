"""What a paper-scale run costs: each paper model's measured cost per local minibatch step, per evaluated sample and
per round (fixed overheads) on this machine, and the projection of a study's cost from them.

``measure(model)`` times the real engine (fedbench.engine.simulation.simulate, one run, float32, one thread as the
train stage uses) on a dataset of the model's input shape with random content: 10 clients of 100 training samples,
batch 10, 2 rounds, with the gradient dissimilarity off (as every paper-scale study runs), three times:
- E = 1 with 10 test samples a client (a), and E = 3 (b): ``step_s`` = (t_b - t_a) / the 400 extra local steps;
- E = 1 with 1,000 more test samples a client (c): ``eval_sample_s`` = (t_c - t_a) / the 30,000 extra evaluated
  samples (three evaluations: rounds 0, 1 and the final model);
- what is left of t_a once its steps and evaluated samples are paid is the fixed cost of a round (scheduling,
  aggregation, bookkeeping), ``round_s``.
The content of the data does not change the time of these models (no data-dependent branches).

fedbench.study.costs.project turns a study's scale into seconds, training and evaluation apart (``Scale`` declares both):
- training, every round: the fixed cost of a round (``round_s``), K x (local steps of the mean client, or its fixed
  ``local_steps``) steps (``step_s``), and, where the protocol does not evaluate the training loss every round, the
  cohort's own losses the engine reads to catch a divergence (K x n forward passes, ``eval_sample_s`` each);
- evaluation: at every evaluated round (round 0, every ``eval_every`` rounds, the listed ``eval_rounds``, and the
  final model: :meth:`Scale.evaluations`, counted exactly) a fixed cost (``eval_s``) and ``eval_samples`` samples
  (``eval_sample_s``); and the gradient dissimilarity where the study has it on (``dissimilarity_every``), one
  gradient per sample of ``dissimilarity_samples`` (``grad_sample_s``).
Only the runs a claim reads count (``Scale.read``); fedbench.study.costs.project_study says how many were left out. Every run is
counted on its own (stacked runs share their local steps and are faster on a GPU, so this is an upper bound there)
and no data preparation. The per-model table here (``measured_costs.json``, batch 10, no fixed cost of an
evaluation) is the fallback; ``fedbench paper cost`` (fedbench.bench.paper_cost) measures each study at its own
shapes and batch, and ``fedbench paper list`` shows that figure where there is one. From the batch-10 table a step
of batch B costs ``step_s`` x max(1, B / 10) and a sample's gradient ``step_s`` / 10 (not measured: an estimate,
said so). The measured numbers are kept in ``fedbench/bench/measured_costs.json`` with the machine and the date;
``python -m fedbench.bench.costs`` measures them again (``--models`` for some).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import time
from pathlib import Path

from fedbench.study.costs import load_measured

MEASURED = Path(__file__).with_name("measured_costs.json")

# model -> (feature shape, classes, input kind, vocabulary size, embedding dim): the shape of the paper's data
MODEL_INPUTS: dict[str, tuple[tuple[int, ...], int, str, int, int]] = {
    "mclr": ((784,), 10, "features", 0, 0),  # FedProx MNIST / FEMNIST, SCAFFOLD EMNIST (47 classes: same order)
    "fedprox_shakespeare_lstm": ((80,), 80, "chars", 80, 0),
    "fedprox_sent140_lstm": ((25,), 2, "tokens", 1000, 300),  # GloVe 6B 300d (a 1,000-row stand-in table)
    "deltafl_emnist_linear": ((784,), 62, "features", 0, 0),
    "deltafl_emnist_cnn": ((784,), 62, "features", 0, 0),
    "deltafl_sent140_linear": ((50,), 2, "features", 0, 0),
    "deltafl_sent140_lstm": ((20,), 2, "tokens", 1000, 50),
    "deltafl_shakespeare_gru": ((20,), 53, "chars", 53, 0),
    "scaffold_mlp": ((784,), 47, "features", 0, 0),
    "cifar_cnn": ((3, 32, 32), 10, "image", 0, 0),
    "fedproxvr_cnn": ((784,), 10, "features", 0, 0),
    "leaf_femnist_cnn": ((784,), 62, "features", 0, 0),  # Mime's EMNIST-62 (LEAF's reference CNN)
}
CLIENTS, TRAIN_N, TEST_N, EXTRA_TEST_N, BATCH, ROUNDS = 10, 100, 10, 1000, 10, 2







def _dataset(model: str, test_n: int = TEST_N):
    import numpy as np

    from fedbench.data.format import FederatedDataset, InputSpec, Split, Vocabulary

    shape, classes, kind, vocab, _ = MODEL_INPUTS[model]
    rng = np.random.default_rng(0)

    def split(n: int) -> Split:
        if kind in ("chars", "tokens"):
            xs = [rng.integers(0, vocab, size=(n, *shape)).astype(np.int64) for _ in range(CLIENTS)]
            return Split.from_clients(xs, [rng.integers(0, classes, n) for _ in range(CLIENTS)], shape, dtype=None)
        xs = [rng.standard_normal((n, *shape)).astype(np.float32) for _ in range(CLIENTS)]
        return Split.from_clients(xs, [rng.integers(0, classes, n) for _ in range(CLIENTS)], shape)

    spec = InputSpec(kind=kind, transform="ids" if kind in ("chars", "tokens") else "identity",
                     vocabulary=Vocabulary(name="random", size=vocab) if vocab else None)
    return FederatedDataset(name=f"cost-{model}", client_ids=tuple(f"c{k}" for k in range(CLIENTS)),
                            train=split(TRAIN_N), test=split(test_n), num_classes=classes, input=spec,
                            label_kind="binary" if classes == 2 else "class")


def _time(model_name: str, epochs: int, test_n: int = TEST_N) -> float:
    import torch

    from fedbench.algorithms import build_algorithm
    from fedbench.engine.simulation import SimulationConfig, simulate
    from fedbench.models import build_model

    shape, classes, _, vocab, dim = MODEL_INPUTS[model_name]
    ds = _dataset(model_name, test_n)
    embedding = torch.randn(vocab + 1, dim) if dim else None
    model = build_model(model_name, shape, classes, embedding) if dim else build_model(model_name, shape, classes)
    cfg = SimulationConfig(rounds=ROUNDS, clients_per_round=CLIENTS, local_epochs=epochs, batch_size=BATCH, seed=0,
                           device="cpu", dissimilarity_every=0, checkpoint_every=10**9)
    t0 = time.perf_counter()
    simulate(cfg, ds, model, build_algorithm("fedavg", 0.01))
    return time.perf_counter() - t0


def measure(model: str, repeats: int = 3) -> dict[str, float]:
    """``step_s`` (one local minibatch step of ``BATCH``), ``eval_sample_s`` (one sample's share of one
    evaluation: loss and accuracy, no dissimilarity) and ``round_s`` (a round's fixed cost), timed on this machine
    with one torch thread; each time the least of ``repeats``."""
    import torch

    torch.set_num_threads(1)
    _time(model, 1)  # warm-up: imports, kernels, allocator

    def least(*args) -> float:
        return min(_time(model, *args) for _ in range(repeats))

    t_a, t_b, t_c = least(1), least(3), least(1, TEST_N + EXTRA_TEST_N)
    steps_a = ROUNDS * CLIENTS * math.ceil(TRAIN_N / BATCH)
    step = max(t_b - t_a, 0.0) / (2 * steps_a)
    evaluations = ROUNDS + 1
    eval_sample = max(t_c - t_a, 0.0) / (evaluations * CLIENTS * EXTRA_TEST_N)
    evaluated_a = evaluations * CLIENTS * (TRAIN_N + TEST_N)
    fixed = max(t_a - step * steps_a - eval_sample * evaluated_a, 0.0) / ROUNDS
    return {"step_s": step, "eval_sample_s": eval_sample, "round_s": fixed}





























def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description="measure each paper model's cost per local step, per evaluated sample and "
                                            "per round on this machine (one torch thread)")
    p.add_argument("--models", nargs="*", default=list(MODEL_INPUTS), choices=list(MODEL_INPUTS))
    p.add_argument("--out", default=str(MEASURED))
    a = p.parse_args(argv)
    out = load_measured(Path(a.out)) if Path(a.out).exists() else {"models": {}}
    from fedbench.bench.machine import cpu_name

    out.update(device=f"CPU, 1 torch thread ({cpu_name()}, {os.cpu_count()} cores)",
               measured_on=time.strftime("%Y-%m-%d"))
    for model in a.models:
        out["models"][model] = {k: float(f"{v:.4g}") for k, v in measure(model).items()}
        print(model, out["models"][model], flush=True)
    Path(a.out).write_text(json.dumps(out, indent=2, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
