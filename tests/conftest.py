"""Test-wide settings: one torch thread (tests run tiny tensors; threads only add contention on 2 cores)."""

import os

import torch

os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")
torch.set_num_threads(1)
