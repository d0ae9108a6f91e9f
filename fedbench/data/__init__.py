"""Federated datasets: the shared on-disk format (format.py, the contract models read), model-input transforms,
synthetic generators, real sources with checksums and resumable downloads (sources.py, download.py), one prepare
module per real dataset (datasets/), LEAF's steps (leafsteps.py), partitioners (partition/), LEAF JSON (leaf.py),
the registry of variants (registry.py) and `fedbench data` (cli.py)."""

from fedbench.data.format import FederatedDataset, Split, load_dataset, save_dataset

__all__ = ["FederatedDataset", "Split", "load_dataset", "save_dataset"]
