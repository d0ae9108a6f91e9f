"""A study priced from its drawn schedule (fedbench.bench.drawn_cost, issue 49 item 1): the formula's exact sums on
a hand-made schedule and hand-made unit, the drawn chains equal to the engine's round plan, arms at their own rows."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from fedbench.bench import drawn_cost
from fedbench.study.scale import Scale

SCALE = Scale(model="mclr", runs=2, rounds=3, clients_per_round=2, client_samples=20, local_epochs=1, batch_size=10,
              eval_samples=100, eval_every=2, cohort_signal=True, dissimilarity_every=1, dissimilarity_samples=50)
UNIT = drawn_cost.Unit(steps=((2.0, 0.010), (4.0, 0.014)), rounds=((1.0, 0.5), (2.0, 0.7)),
                       evals=((1, 0.1, 0.001), (2, 0.15, 0.002)), grad_sample_s=0.01)


def test_a_stack_is_priced_chain_by_chain():
    drawn = drawn_cost.Drawn(chain=np.array([5, 2, 3]), row_steps=np.array([12, 4, 7]),
                             cohort_samples=np.array([40.0, 30.0, 50.0]))
    got = drawn_cost.stack_seconds(SCALE, 2, drawn, UNIT, 2)
    # 4 rows: the secant of (2, 10 ms) and (4, 14 ms): a = 6 ms a chain step, b = 2 ms a row-step
    assert got["steps"] == pytest.approx(0.006 * 10 + 0.002 * 23)
    assert got["round_fixed"] == pytest.approx(3 * 0.7)
    # evaluations at rounds 0, 2 and the final model, at the 2-run point; dissimilarity 4 times a run
    assert got["evaluation"] == pytest.approx(3 * (0.15 + 2 * 100 * 0.002))
    assert got["dissimilarity"] == pytest.approx(2 * 4 * 50 * 0.01)
    assert got["cohort_signal"] == pytest.approx(120 * 0.002)
    assert (got["chain"], got["row_steps"]) == (10, 23)
    one = drawn_cost.stack_seconds(SCALE, 2, drawn, UNIT, 1)  # one of the two runs computes the dissimilarity
    assert one["dissimilarity"] == pytest.approx(1 * 4 * 50 * 0.01) and one["steps"] == got["steps"]


def test_a_step_whose_time_falls_with_rows_is_latency():
    unit = dataclasses.replace(UNIT, steps=((10.0, 0.1), (200.0, 0.05)))
    assert unit.step_line(100) == (pytest.approx(0.1 + 90 / 190 * -0.05), 0.0)
    assert unit.step_line(5) == (0.1, 0.0)  # few rows (a sequential arm): the step's latency, not rows x per-row
    assert unit.round_at(4) == pytest.approx(0.5 + 3 * 0.2)  # along the last segment


def test_the_drawn_chain_is_the_engines_round_plan():
    from fedbench.bench.work import planned_work
    from fedbench.engine.simulation import SimulationConfig

    sizes = np.array([3, 45, 7, 120, 19, 60, 2, 33])
    drawn = drawn_cost.draw_stack(SCALE, 7, sizes)  # seeds 0-4, 0, 1
    chains, rows = [], []
    for seed in (0, 1, 2, 3, 4, 0, 1):
        cfg = SimulationConfig(rounds=3, clients_per_round=2, local_epochs=1, batch_size=10, seed=seed)
        w = planned_work(cfg, sizes, True, 3)
        chains.append(w.chain)
        rows.append(w.row_steps)
    assert drawn.chain.tolist() == np.max(chains, axis=0).tolist()
    assert drawn.row_steps.tolist() == np.sum(rows, axis=0).tolist()


def test_fixed_steps_need_no_draw_and_an_arm_of_few_rows_pays_the_latency():
    scale = dataclasses.replace(SCALE, clients_per_round=1, local_steps=1000, rounds=2, dissimilarity_every=0,
                                cohort_signal=False)
    drawn = drawn_cost.draw_stack(scale, 5, np.full(10, 50))
    assert drawn.chain.tolist() == [1000, 1000] and drawn.row_steps.tolist() == [5000, 5000]
    unit = dataclasses.replace(UNIT, steps=((100.0, 0.0066), (200.0, 0.0065)))
    got = drawn_cost.stack_seconds(scale, 5, drawn, unit, 0)
    assert got["steps"] == pytest.approx(2000 * 0.0066)  # 5 rows: a 100-row step's time, not 5 x its per-row cost


def test_the_profile_is_priced_from_the_committed_h200_table(monkeypatch):
    from fedbench.study.paper_profile import study_scales

    table = drawn_cost.load_table(drawn_cost.H200_TABLE)
    scales = study_scales(5)["fedprox_mnist"]
    got = drawn_cost.price_study("fedprox_mnist", scales, table)
    assert got["stacks"] == 1 and got["sizes"][0].startswith("lognormal")  # FedAvg stacks with FedProx (D1)
    merged = drawn_cost.price_study("fedprox_mnist", scales, table, merged=True)
    assert merged["stacks"] == 1 and merged["chain"] == got["chain"] and merged["hours"] == got["hours"]
    monkeypatch.setitem(drawn_cost.ARM_CLASSES, "fedprox_mnist", 2)  # as before FedAvg.stacks_as: two stacks
    apart = drawn_cost.price_study("fedprox_mnist", scales, table)
    assert apart["stacks"] == 2 and apart["chain"] > got["chain"]


def test_client_sizes_are_the_prepared_datas_where_it_is_built(tmp_path):
    from fedbench.data.format import save_dataset
    from fedbench.data.synthetic import generate_synthetic
    from fedbench.study.paper_profile import STUDIES, study_scales

    scale = study_scales(5)["fedprox_mnist"][0]
    published, source = drawn_cost.client_sizes("fedprox_mnist", scale, tmp_path)  # nothing built there
    assert len(published) == 1000 and source.startswith("lognormal")
    ds = generate_synthetic(1.0, 1.0, False, num_devices=7, seed=0)
    save_dataset(ds, tmp_path / "real" / STUDIES["fedprox_mnist"].variant)
    sizes, source = drawn_cost.client_sizes("fedprox_mnist", scale, tmp_path)
    assert sizes.tolist() == ds.train.sizes.tolist() and source.startswith("the prepared data")
