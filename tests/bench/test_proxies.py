"""The GPU targets' CPU proxies (fedbench.bench.proxies, issue 49 item 5): the exact counts of the engine today on
tiny configurations, so that a change in the engine's round moves them and fails here until the expected count is
updated on purpose (a count going down is the progress the issue asks for)."""

from __future__ import annotations

from fedbench.bench import proxies

TINY = proxies.RoundSetup(devices=10, clients_per_round=3)


def test_the_block_is_the_engines():
    from fedbench.engine.simulation import SCHEDULE_BLOCK

    assert proxies.SCHEDULE_BLOCK == SCHEDULE_BLOCK


def test_host_syncs_a_round_and_a_block_are_the_divergence_signals_one_read_a_block():
    got = proxies.round_syncs(TINY, runs=1)
    # the divergence signal stays on the device and its window is read back once a block (one .tolist()), in the
    # block's last round: none in a round between evaluations, 1 in a block of SCHEDULE_BLOCK rounds (2 and 40 when it
    # was read every round)
    assert got["per_round"] == 0 and got["per_block"] == 1 and got["block"] == proxies.SCHEDULE_BLOCK
    assert got["lines"] == {}
    assert proxies.round_syncs(TINY, runs=3)["per_block"] == 1  # the stack's runs in the same read


def test_ops_outside_the_local_steps_grow_with_the_runs_of_a_stack():
    one, three = (proxies.round_ops(TINY, runs) for runs in (1, 3))
    assert one["outside"] == 16 and three["outside"] == 56  # +20 a run: server update, cohort, signal per run
    assert one["inside"] == three["inside"] == 25  # one local step of the merged cohort: shared by the runs
    assert three["outside_by_name"]["mm"] == 3 * one["outside_by_name"]["mm"]


def test_the_cuda_paths_ops_outside_the_steps_do_not_grow_with_the_runs():
    one, three, ten = (proxies.round_ops(TINY, runs, batched=True) for runs in (1, 3, 10))
    # the signal's losses of every run in one batched pass (one bmm, one log_softmax); the cohorts uploaded together
    # (one _to_copy: the float32 weights); client_init and server_update once for the stack's runs (vmap: one clone,
    # one bmm), each run's rows handed back as views: 19 from two runs on (+20 a run on the CPU's path)
    assert (one["outside"], three["outside"], ten["outside"]) == (16, 19, 19)
    assert three["outside_by_name"] == ten["outside_by_name"]
    assert three["outside_by_name"]["clone"] == three["outside_by_name"]["cat"] == 1  # client_init; the merged cohort
    assert three["outside_by_name"]["bmm"] == 2 and "mm" not in three["outside_by_name"]  # signal; weighted mean
    assert three["outside_by_name"]["index"] == 5  # the signal's x and y, the merge's order, broadcast and hand-back
    assert one["inside"] == three["inside"] == ten["inside"] == 25


def test_evaluation_passes_grow_with_the_cnn_runs_on_the_cpu_and_not_on_the_cuda_path():
    passes = [proxies.eval_passes(runs, clients=3, samples=2)["passes"] for runs in (1, 3)]
    assert passes == [2, 6]  # the CPU: train and test, a forward a model (bit for bit as each run alone)
    batched = [proxies.eval_passes(runs, clients=3, samples=2, batched=True)["passes"] for runs in (1, 3)]
    assert batched == [2, 2]  # as CUDA evaluates (D5): train and test, one forward for every model of the stack


def test_the_synthetic_chain_is_the_lockstep_chain_of_the_engines_schedule():
    from fedbench.bench.lockstep import chain, run_steps
    from fedbench.bench.studies import fedprox_study
    from fedbench.bench.workload import group_stacks
    from fedbench.engine.simulation import RunSpec, build_stack
    from fedbench.models import build_model

    got = proxies.synthetic_chain(rounds=3, seeds=(0,))
    assert got["runs"] == 28 and got["stacks"] == [28]  # FedAvg's 10 runs train as FedProx with mu = 0: one stack
    assert got["chain"] == 17_440 and got["one_stack_chain"] == 17_440 and got["row_steps"] == 518_756
    w = fedprox_study((0,))
    specs = [RunSpec(w.config(r, 3, "cpu"), w.dataset(r.dataset), w.algorithm(r)) for r in w.runs]
    model = build_model("mclr", specs[0].dataset.feature_shape, specs[0].dataset.num_classes)
    steps = [run_steps(build_stack(model, [s])[1][0], 3) for s in specs]  # the engine's own draws, minibatches too
    assert chain(steps, group_stacks(specs, tuple(range(len(specs))))) == got["chain"]
    assert chain(steps, [list(range(len(specs)))]) == got["one_stack_chain"]
    apart = [[i for i, s in enumerate(specs) if type(s.algorithm) is cls] for cls in {type(s.algorithm) for s in specs}]
    assert sorted(map(len, apart)) == [10, 18] and chain(steps, apart) == 34_880  # the classes apart (before D1)


def test_the_dissimilarity_is_a_backward_a_model_on_the_cpu_and_one_on_the_cuda_path():
    assert [proxies.dissimilarity_passes(m)["backward_calls"] for m in (1, 3)] == [1, 3]
    assert [proxies.dissimilarity_passes(m, batched=True)["backward_calls"] for m in (1, 3)] == [1, 1]


def test_the_paper_studies_compute_the_dissimilarity_only_for_the_runs_a_claim_reads():
    got = proxies.dissimilarity_runs(seeds=5)  # FedAvg and the best mu at 0% (paper_profile.DISSIMILARITY_READ)
    assert got["fedprox_sent140"] == {"computed": 10, "read": 10}


def test_a_study_that_declares_the_runs_it_reads_computes_the_dissimilarity_only_there():
    variants, stragglers = ["fedavg", "fedprox_mu0", "fedprox_mu0p01"], [0.0, 0.5, 0.9]
    assert proxies.computing_dissimilarity({}, variants, stragglers, 5) == 45  # left out: every run
    read = {"dissimilarity_variants": ["fedavg", "fedprox_mu0p01"], "dissimilarity_stragglers": [0.0]}
    assert proxies.computing_dissimilarity(read, variants, stragglers, 5) == 10  # FedAvg and the best mu at 0%
    assert proxies.computing_dissimilarity({"dissimilarity_stragglers": [0.0]}, variants, stragglers, 5) == 15


def test_targets_say_met_or_not():
    result = {"syncs_per_round": 2.0, "syncs_per_block": 40, "ops_outside_steps_per_round": {"1": 20.0, "10": 197.0},
              "ops_outside_steps_slope": 19.7, "synthetic_chain_steps": 3_024_240,
              "synthetic_chain": {"rounds": 200}, "eval_passes_per_round": {"1": 2, "15": 30},
              "eval_passes_per_round_cpu_default": {"1": 2, "15": 30},
              "dissimilarity_backward_calls": {"1": 1, "15": 15},
              "dissimilarity_runs": {"fedprox_sent140": {"computed": 45, "read": 10}},
              "projected_gpu_hours": {"total": 355.9}, "projected_synthetic_s": 494.0,
              "projected_synthetic_one_stack_s": 254.0}
    rows = proxies.targets(result)
    assert [r["met"] for r in rows] == [False] * 8
    result |= {"syncs_per_round": 0.0, "syncs_per_block": 1, "ops_outside_steps_per_round": {"1": 30.0, "10": 30.0},
               "ops_outside_steps_slope": 0.0, "synthetic_chain_steps": 1_512_120,
               "eval_passes_per_round": {"1": 2, "15": 2}, "dissimilarity_backward_calls": {"1": 1, "15": 1},
               "dissimilarity_runs": {"fedprox_sent140": {"computed": 10, "read": 10}},
               "projected_gpu_hours": {"total": 7.5}}
    assert [r["met"] for r in proxies.targets(result)] == [True] * 8
    lines = proxies.table(result | {"targets": rows})
    assert lines[2].startswith("| host syncs a round | 2 | 0 | no |") and "494 s stacked as today" in lines[-1]


def test_the_ops_target_allows_no_more_than_30_a_stack_round():
    result = {"syncs_per_round": 0.0, "syncs_per_block": 0, "ops_outside_steps_per_round": {"1": 30.0, "10": 34.0},
              "ops_outside_steps_slope": 0.4, "synthetic_chain_steps": 1, "synthetic_chain": {"rounds": 20},
              "eval_passes_per_round": {"1": 2, "15": 2}, "dissimilarity_runs": {},
              "projected_gpu_hours": {}, "projected_synthetic_s": None}
    rows = {r["proxy"].split(" (")[0]: r["met"] for r in proxies.targets(result)}
    assert rows["ATen ops outside the local steps a round"] is False  # 34 ops a stack-round: above 30
    assert rows["the synthetic study's chain"] is None  # 20 rounds: not the study's 200


def test_a_decaying_lr_needs_one_graph_a_block_where_it_reaches_the_loop_as_a_tensor(monkeypatch):
    from fedbench.algorithms.fedprox import FedProx

    assert proxies.graph_keys(rounds=4) == {"rounds": 4, "lr_decay": 0.99, "runs": 2, "graphs": 1}
    monkeypatch.setattr(FedProx, "step_scalars", ())  # lr a Python number again: a graph a round
    assert proxies.graph_keys(rounds=4)["graphs"] == 4
    assert proxies.graph_keys(rounds=4, lr_decay=1.0)["graphs"] == 1  # a constant lr: one graph either way


# issue 53's rows: launches and FLOPs a local step per model family, padded row-steps at row buckets

def test_the_static_paths_aten_ops_a_chain_step_per_model_family():
    from fedbench.bench import step_launches

    # FedProx (mu 1) at the paper models' sizes, one row: views excluded, each about one CUDA launch
    assert step_launches.static_ops("mclr") == 25
    assert step_launches.static_ops("cnn", batch=2) == 97
    assert step_launches.static_ops("gru") == 728
    assert step_launches.static_ops("sent140_lstm") == 2146
    assert step_launches.static_ops("mclr", rows=3, steps=4) == 25  # the same ops a step at any rows and steps
    assert [step_launches.layers(f) for f in ("cnn", "gru", "sent140_lstm")] == [0, 1, 2]


def test_the_fused_kernels_launches_a_chain_step_in_tritons_interpreter():
    import importlib.util
    import json
    import os
    import subprocess
    import sys

    import pytest

    if importlib.util.find_spec("triton") is None:
        pytest.skip("Triton is not installed")
    code = ("import json; from fedbench.bench.step_launches import fused_launches as f; "
            "print(json.dumps([f('mclr', rows=2, steps=3), f('gru'), f('cnn', steps=1, batch=2)]))")
    done = subprocess.run([sys.executable, "-c", code], env={**os.environ, "TRITON_INTERPRET": "1"},
                          capture_output=True, text=True, timeout=300, check=True)
    # mclr: one launch a chain step; the GRU: 2 S L + 2 L + 1 + 1 = 44 at 20 timesteps and 1 layer; the CNN: 15
    assert json.loads(done.stdout.strip().splitlines()[-1]) == [1.0, 44.0, 15.0]


def test_executed_flops_over_the_models_training_flops_for_mclr():
    from fedbench.bench import step_launches

    got = step_launches.flops_ratio("mclr", rows=2)
    # 60 features x 10 classes, batch 10: 2 x 600 forward + 2 x 600 weight gradient = 2,400 a sample; the static
    # step's FlopCounterMode sees 400 more a row-step (40 a sample: 10 classes x 2 FLOPs of the (1 x 10) bias-column
    # product of forward and gradient)
    assert got["model_per_row_step"] == 24_000.0 and got["executed_per_row_step"] == 24_400.0


def test_row_buckets_and_their_row_steps():
    import numpy as np

    from fedbench.engine.static import bucket_sizes, bucketed_row_steps

    assert bucket_sizes(50) == (1, 2, 3, 4, 5, 7, 9, 12, 15, 19, 24, 30, 38, 48, 50)
    assert bucket_sizes(1) == (1,) and bucket_sizes(8, growth=2.0) == (1, 2, 4, 8)
    # steps 7..1 at 7 rows: a_t = 7, 6, ..., 1; buckets 7, 7, 5, 4, 3, 2, 1 = 29 row-steps for 28 useful
    assert bucketed_row_steps(np.arange(1, 8), 7) == 29
    assert bucketed_row_steps(np.array([5, 3, 3, 1]), 4) == 12  # every a_t a bucket: no padding


def test_padded_row_steps_of_a_stack_in_lockstep_and_at_row_buckets():
    import dataclasses

    import numpy as np

    from fedbench.bench.row_padding import ratios, stack_padding
    from fedbench.engine.simulation import SimulationConfig

    cfg = SimulationConfig(rounds=2, clients_per_round=7, local_epochs=1, batch_size=10, device="cpu")
    sizes = np.arange(10, 71, 10)  # every client each round: steps 1, ..., 7
    got = stack_padding([(cfg, sizes, True)], rounds=2)
    assert got == {"useful": 56, "lockstep": 98, "bucketed": 58}
    two = stack_padding([(cfg, sizes, True), (dataclasses.replace(cfg, seed=1), sizes, True)], rounds=1)
    # 14 rows of steps 7, 7, 6, 6, ..., 1, 1: a_t = 14, 12, ..., 2 on buckets 14 (15 capped), 12, 12, 9, 7, 4, 2
    assert two == {"useful": 56, "lockstep": 98, "bucketed": 60}
    assert ratios(got)["lockstep_ratio"] == 98 / 56


def test_issue_53s_rows_say_met_or_not():
    row = {"static_ops_per_step": 25.0, "fused_launches_per_step": 1.0, "layers": 0, "timesteps": 0,
           "flops": {"ratio": 1.02}}
    steps = {"mclr": row, "cnn": {**row, "fused_launches_per_step": 26.0},
             "shakespeare_lstm": {**row, "fused_launches_per_step": 330.0, "layers": 2, "timesteps": 80},
             "sent140_lstm": {**row, "fused_launches_per_step": None, "layers": 2, "timesteps": 25},
             "gru": {**row, "fused_launches_per_step": 51.0, "layers": 1, "timesteps": 20, "flops": {"ratio": 1.2}}}
    pad = {"lockstep_ratio": 4.0, "bucketed_ratio": 1.1, "rounds": 20}
    rows = proxies.step_rows({"step_launches": steps, "row_padding": {"femnist": pad, "shakespeare": pad,
                                                                       "synthetic": {**pad, "bucketed_ratio": 1.3}}})
    assert [r[3] for r in rows] == [True, False, True, None, False, True, True, False, False]
    assert [r[2] for r in rows][:5] == ["<= 4 (fused: 1)", "<= 25", "<= 330", "<= 110", "<= 50"]
