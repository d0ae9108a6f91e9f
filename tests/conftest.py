"""Test-wide settings: one torch thread (tests run tiny tensors; threads only add contention on 2 cores)."""

import os

import torch

os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")
torch.set_num_threads(1)
# no test reads the machine's system dataset packages (e.g. Debian's dataset-fashion-mnist): a test that wants a
# local copy points this at its own folder (tests/data/test_local_copy.py)
os.environ["FEDBENCH_SYSTEM_DATASETS"] = "/nonexistent/fedbench-tests/system-datasets"
