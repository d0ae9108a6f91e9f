"""One configuration of every registered algorithm, for the contract tests that run them all (CUDA == CPU,
stacked == alone)."""

from __future__ import annotations

from fedbench.availability import AvailabilityConfig

# name -> (hyperparameters (lr 0.05 unless given), SimulationConfig changes): one configuration of each registered algorithm.
CASES = {
    "fedavg": ({}, {}),
    "fedprox": ({"mu": 1.0}, {}),
    "fedprox_adaptive": ({"mu_init": 0.1}, {}),
    "delta_fl": ({"theta": 0.5, "weighting": "exact", "quantile_period": 1}, {}),
    "fedlaavg": ({}, {"availability": AvailabilityConfig(model="diurnal", period=4, beta=0.5)}),
    "sequential_sgd": ({}, {}),
    "scaffold": ({"eta_g": 1.0, "control_variate": "II"}, {}),
    "minibatch_sgd": ({}, {}),
    "fedavg_momentum": ({"beta": 0.9, "server_lr": 1.0}, {}),
    "fedadam": ({"server_lr": 0.01, "beta1": 0.9, "beta2": 0.99}, {}),
    "server_only": ({"base": "adam", "beta2": 0.99, "lr": 0.01}, {}),
    "mime": ({"variant": "mime", "base": "adam", "lr": 0.005}, {}),
    "fedproxvr": ({"mu": 0.1, "tau": 5, "estimator": "sarah"}, {"local_steps": 4, "straggler_fraction": 0.0}),
    "feddane": ({"mu": 0.5, "gradient_clients": 8}, {}),
}

# Each algorithm's stack_varying fields, with a second value to stack against the case's own.
VARIED = {
    "fedprox": {"mu": 0.5},
    "fedprox_adaptive": {"mu_init": 0.5},
    "delta_fl": {"theta": 0.8, "weighting": "filter", "quantile_period": 2},
    "scaffold": {"eta_g": 0.5, "control_variate": "I"},
    "fedavg_momentum": {"beta": 0.5, "server_lr": 0.7},
    "fedadam": {"server_lr": 0.003},
    "feddane": {"gradient_clients": 10},
}
