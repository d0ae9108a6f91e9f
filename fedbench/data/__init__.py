"""Federated datasets: the shared on-disk format, generators, readers and downloads."""

from fedbench.data.format import FederatedDataset, Split, load_dataset, save_dataset

__all__ = ["FederatedDataset", "Split", "load_dataset", "save_dataset"]
