"""Issue 30, item 2 and issue 50, item 1: params.yaml's experiments run through the one runner
(fedbench.study.runner.run_simulations), declared as the main job's simulations (fedbench.study.experiments.simulation)
and kept in the main job study's store. A stack of these runs, read back from the store, has the numbers of the same runs declared by hand as claim-study Simulations and
run with no store, bit for bit: the declaration and the record change no number (the train stage's numbers did not
move when it moved onto this runner: every one of its 170 runs recomputed the same)."""

from __future__ import annotations

import functools

import pytest

from fedbench.config import load_config
from fedbench.pipeline import generate
from fedbench.study.experiments import RunKey, train_runs

pytest.importorskip("torch")


def test_a_stack_of_train_stage_runs_is_the_same_as_its_simulations(tmp_path):
    from fedbench.algorithms import build_algorithm
    from fedbench.data.format import load_dataset
    from fedbench.engine.simulation import SimulationConfig
    from fedbench.models import build_model
    from fedbench.study.runner import Simulation, run_simulations

    cfg = load_config("params.yaml", {"train.rounds": 3, "train.seeds": [0, 1], "train.workers": 1})
    data, runs = tmp_path / "data", tmp_path / "runs"
    folder = generate(cfg, "synthetic_1_1", data)
    keys = [RunKey("synthetic_1_1", v, 0.5, s) for v in ("fedavg", "fedprox_mu1") for s in (0, 1)]
    summaries = train_runs(cfg, keys, data, runs, progress=False)

    t = cfg.train_for("synthetic_1_1")
    ds = load_dataset(folder)
    sims = [Simulation(
        f"{k.variant}/seed={k.seed}",
        SimulationConfig(rounds=t.rounds, clients_per_round=t.clients_per_round, local_epochs=t.local_epochs,
                         batch_size=t.batch_size, straggler_fraction=k.stragglers, sampling=t.sampling,
                         straggler_epochs=t.straggler_epochs, seed=k.seed, device=t.device,
                         dissimilarity_every=t.eval_every, dissimilarity_samples=t.dissimilarity_samples or None,
                         capture=t.capture),
        functools.partial(load_dataset, folder), build_model(t.model, ds.feature_shape, ds.num_classes),
        build_algorithm(cfg.algorithms[k.variant].name, t.lr, **cfg.algorithms[k.variant].hyper)) for k in keys]
    outcomes = run_simulations(sims, workers=1)

    for s, o in zip(summaries, outcomes):
        assert o.param_digest == s["param_digest"], o.name
        for metric in ("train/loss", "test/accuracy", "train/dissimilarity"):
            assert o.series(metric) == [row[metric] for row in s["history"]], (o.name, metric)
    assert len({o.param_digest for o in outcomes}) == 4  # four different runs, not one repeated
