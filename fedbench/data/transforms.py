"""Stored arrays -> model inputs: the input transforms a dataset names in ``meta.json`` (``input.transform``).

Datasets keep x as upstream has it (uint8 pixels, int64 word ids, uint8 character ids, float32 features); a
model consumes ``model_inputs(ds, split)``. Each transform reproduces what the authors fed their models:

- ``identity``: x unchanged (float32 features: synthetic data, precomputed embeddings).
- ``scale``: x / divisor, computed in float64 and rounded once to float32, which is exactly what LEAF's
  JSON holds for FEMNIST (pixels / 255 written as float64, read as float32); digits use divisor 16.
- ``standardize``: (x - mean) / (std + eps) in float32, with ``mean`` and ``std`` arrays stored in the dataset
  (per pixel, or one scalar): FedProx MNIST (litian96/FedProx data/mnist/generate_niid.py: float32 mean and
  std over all images, eps 0.001); FedProxVR Fashion-MNIST (one scalar mean and std over x / 255, eps 0.001).
  ``divisor`` (default 1) is applied first as x * float32(1 / divisor), the way TensorFlow's MNIST reader
  (used by FedProxVR for Fashion-MNIST) scales pixels.
- ``normalize``: torchvision's ToTensor then Normalize(mean, std) per channel, in float32: x / 255, then
  (x - mean_c) / std_c (FedLaAvg CIFAR-10: mean = std = 0.5).
- ``divide_by_mean``: Delta-FL's normalisation (krishnap25/simplicial-fl models/main.py reads the std from the
  'mean' key): (x / divisor - mean_s) / mean_s with per-split constants ``mean_train``, ``mean_test`` (the
  authors normalise train devices with train constants and test devices with test constants). Features
  whose mean is 0 would divide by zero; the authors' constants have the same property, so those features
  become NaN exactly as theirs would: a model must not be fed this transform's output blindly.
- ``ids``: integer ids as int64 (character and word ids; the model embeds them).

Everything here is numpy and torch-free; the engine turns the result into tensors.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from fedbench.data.format import FederatedDataset, InputSpec

SPLITS = ("train", "test", "global_test")


def _stored_x(ds: FederatedDataset, split: str) -> np.ndarray:
    if split == "train":
        return ds.train.x
    if split == "test":
        return ds.test.x
    if split == "global_test":
        if ds.global_test is None:
            raise ValueError(f"{ds.name} has no global test set")
        return ds.global_test.x
    raise ValueError(f"split {split!r} is not allowed; allowed: {', '.join(SPLITS)}")


def _identity(x: np.ndarray, params: dict[str, Any], arrays: dict[str, np.ndarray], split: str) -> np.ndarray:
    return x


def _scale(x: np.ndarray, params: dict[str, Any], arrays: dict[str, np.ndarray], split: str) -> np.ndarray:
    return (x.astype(np.float64) / float(params["divisor"])).astype(np.float32)


def _standardize(x: np.ndarray, params: dict[str, Any], arrays: dict[str, np.ndarray], split: str) -> np.ndarray:
    v = x.astype(np.float32)
    divisor = float(params.get("divisor", 1.0))
    if divisor != 1.0:
        v = v * np.float32(1.0 / divisor)
    mean = arrays["mean"].astype(np.float32)
    std = arrays["std"].astype(np.float32)
    return ((v - mean) / (std + np.float32(params["eps"]))).astype(np.float32)


def _normalize(x: np.ndarray, params: dict[str, Any], arrays: dict[str, np.ndarray], split: str) -> np.ndarray:
    v = x.astype(np.float32) / np.float32(255)
    shape = (1, -1) + (1,) * (x.ndim - 2)  # per channel: axis 1 of [n, C, H, W]
    mean = np.asarray(params["mean"], np.float32).reshape(shape)
    std = np.asarray(params["std"], np.float32).reshape(shape)
    return ((v - mean) / std).astype(np.float32)


def _divide_by_mean(x: np.ndarray, params: dict[str, Any], arrays: dict[str, np.ndarray], split: str) -> np.ndarray:
    key = "mean_test" if split == "test" else "mean_train"
    v = x.astype(np.float64) / float(params.get("divisor", 1.0))
    mean = arrays[key].astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        return ((v - mean) / mean).astype(np.float32)


def _ids(x: np.ndarray, params: dict[str, Any], arrays: dict[str, np.ndarray], split: str) -> np.ndarray:
    return x.astype(np.int64, copy=False)


TRANSFORMS: dict[str, Callable[[np.ndarray, dict, dict, str], np.ndarray]] = {
    "identity": _identity, "scale": _scale, "standardize": _standardize, "normalize": _normalize,
    "divide_by_mean": _divide_by_mean, "ids": _ids,
}


def check_transform(spec: InputSpec, arrays: dict[str, np.ndarray]) -> None:
    """Raise ValueError naming what is missing if ``spec``'s transform cannot run on ``arrays``."""
    if spec.transform not in TRANSFORMS:
        raise ValueError(f"input.transform {spec.transform!r} is not allowed; allowed: {', '.join(TRANSFORMS)}")
    needs = {"scale": (("divisor",), ()), "standardize": (("eps",), ("mean", "std")),
             "normalize": (("mean", "std"), ()), "divide_by_mean": ((), ("mean_train", "mean_test"))}
    params, array_keys = needs.get(spec.transform, ((), ()))
    missing = [p for p in params if p not in spec.transform_params] + [a for a in array_keys if a not in arrays]
    if missing:
        raise ValueError(f"input.transform {spec.transform!r} needs {missing}")


def apply_transform(spec: InputSpec, arrays: dict[str, np.ndarray], x: np.ndarray, split: str = "train") -> np.ndarray:
    """Model input for stored ``x`` of ``split`` under ``spec`` (the transform arrays in ``arrays``)."""
    check_transform(spec, arrays)
    return TRANSFORMS[spec.transform](x, spec.transform_params, arrays, split)


def model_inputs(ds: FederatedDataset, split: str) -> np.ndarray:
    """What a model consumes for ``split`` ("train", "test" or "global_test") of ``ds``: float32 features or
    pixels, or int64 ids. The identity transform returns the stored array itself (no copy)."""
    return apply_transform(ds.input, ds.transform_arrays, _stored_x(ds, split), split)
