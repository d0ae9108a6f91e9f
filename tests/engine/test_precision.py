"""The declared precision modes (fedbench.engine.precision): fp32 the default and unchanged, tf32 fp32's numbers on
the CPU, bf16 a different computation within a measured distance of fp32, each mode its own record and stack."""

import dataclasses

import pytest
import torch

from fedbench.algorithms import FedProx
from fedbench.data.synthetic import synthetic
from fedbench.engine.evaluation import EvalSpec
from fedbench.engine.precision import computing, deviation
from fedbench.engine.simulation import RunSpec, SimulationConfig, check_stackable, simulate
from fedbench.models import build_model
from fedbench.study.record import params
from tests.algorithms.handmade import metrics_only

CFG = SimulationConfig(rounds=5, clients_per_round=5, local_epochs=1, batch_size=10, seed=3, device="cpu",
                       evaluations=(EvalSpec("train", every=5), EvalSpec("test", every=5)), dissimilarity_every=0)


def _run(precision: str):
    ds = synthetic("synthetic_1_1", 0, 10)
    model = build_model("mclr", ds.feature_shape, ds.num_classes)
    return simulate(dataclasses.replace(CFG, precision=precision), ds, model, FedProx(lr=0.05, mu=1.0))


def test_fp32_is_the_default_and_tf32_computes_as_fp32_on_the_cpu():
    assert SimulationConfig().precision == "fp32"
    fp32, tf32 = _run("fp32"), _run("tf32")
    assert torch.equal(fp32.theta, tf32.theta) and fp32.param_digest == tf32.param_digest  # no TF32 units here
    assert metrics_only(fp32.history) == metrics_only(tf32.history)


def test_bf16_is_another_computation_within_a_measured_distance_of_fp32():
    fp32, bf16 = _run("fp32"), _run("bf16")
    assert not torch.equal(fp32.theta, bf16.theta)  # autocast ran: bfloat16 matmul inputs round differently
    d = deviation(fp32, bf16)
    # 5 rounds of FedProx on Synthetic(1,1), mclr: bfloat16's 8-bit mantissa (relative rounding 2^-9 = 0.002) in
    # the logits' and gradients' matmuls; measured 0.0275 of the largest parameter and 0.60 accuracy points on a
    # 2-core AMD EPYC (the bound leaves room for other CPUs' bfloat16 kernels): a tolerance a study in this mode states
    assert 0 < d["max_rel"] < 0.05 and d["accuracy_points"] < 2.0, d


def test_the_global_switches_are_put_back_after_a_block_even_one_that_raises():
    before = (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32)
    with pytest.raises(RuntimeError, match="inside"), computing("tf32", torch.device("cpu")):
        assert torch.backends.cuda.matmul.allow_tf32 and torch.backends.cudnn.allow_tf32
        raise RuntimeError("inside")
    with computing("fp32", torch.device("cpu")):  # fp32: TF32 off for cuDNN too (PyTorch's default has it on)
        assert not torch.backends.cuda.matmul.allow_tf32 and not torch.backends.cudnn.allow_tf32
    assert (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32) == before


def test_a_mode_not_computed_is_one_line_naming_the_key_and_what_is_allowed():
    with pytest.raises(ValueError, match=r"^precision: 'fp16' is not allowed; allowed: fp32, tf32, bf16$"):
        SimulationConfig(precision="fp16")
    with pytest.raises(ValueError, match=r"^precision: 'bf16' with capture 'fused_step': .* allowed with them: fp32$"):
        SimulationConfig(precision="bf16", capture="fused_step")


def test_a_reduced_mode_is_recorded_and_never_stacked_with_fp32():
    algorithm = FedProx(lr=0.05, mu=1.0)
    assert "precision" not in params(CFG, algorithm)  # an fp32 run's record is as it was
    assert params(dataclasses.replace(CFG, precision="bf16"), algorithm)["precision"] == "bf16"
    ds = synthetic("synthetic_1_1", 0, 10)
    runs = [RunSpec(CFG, ds, algorithm), RunSpec(dataclasses.replace(CFG, precision="bf16", seed=4), ds, algorithm)]
    with pytest.raises(ValueError, match="precision"):
        check_stackable(runs)


def test_a_study_run_in_a_reduced_mode_names_it_in_every_figure_it_draws(tmp_path):
    """fedbench.study.contract stamps the figures a study draws when any of its runs computed in a reduced mode
    (fedbench.plotting.stamped, fedbench.engine.precision.label); an fp32 study's figures are drawn as before."""
    from types import SimpleNamespace

    from fedbench.engine.precision import TOLERANCE, label
    from fedbench.plotting import pyplot, save_figure
    from fedbench.study.contract import _precision_stamp

    def drawn(modes):
        run = SimpleNamespace(simulations={m: SimpleNamespace(config=dataclasses.replace(CFG, precision=m))
                                           for m in modes})
        fig = pyplot().figure()
        with _precision_stamp(run):
            save_figure(fig, tmp_path / f"{'-'.join(modes)}.png")
        return [t.get_text() for t in fig.texts]

    assert drawn(["fp32"]) == []
    assert drawn(["fp32", "bf16"]) == [label("bf16")]
    assert label("bf16") == (f"computed in bf16, a declared reduced precision (within {TOLERANCE['bf16']:g} of the "
                             "largest parameter of fp32's, as declared; not fp32's numbers)")
    assert drawn(["fp32"]) == []  # the stamp ends with its block
