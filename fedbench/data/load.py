"""A built dataset loaded for training, and the frozen word table it refers to: what the train stage's runs and the
paper-scale studies train on (both fingerprints hash this module: provenance.RUN_CODE).

A dataset that is missing or unreadable is one DataError line naming its folder and the command that builds it
again: a synthetic dataset is generated (``fedbench generate``), a real variant prepared from its sources
(``fedbench data prepare``).
"""

from __future__ import annotations

import zipfile
from pathlib import Path
from typing import Any

from fedbench.data.format import FederatedDataset, load_dataset
from fedbench.data.registry import VARIANTS
from fedbench.errors import DataError


def rebuild_hint(name: str) -> str:
    """How to build dataset ``name`` again, as the end of an error line."""
    if name in VARIANTS:
        return f"rebuild it: fedbench data prepare {name} (or dvc repro -f partition@{name})"
    return f"regenerate it: fedbench generate {name} (or dvc repro -f generate@{name})"


def load(folder: str | Path, name: str) -> FederatedDataset:
    """Dataset ``name`` from ``folder``; a missing or corrupt file is one DataError line (:func:`rebuild_hint`)."""
    try:
        return load_dataset(Path(folder))
    except (OSError, EOFError, ValueError, KeyError, zipfile.BadZipFile) as exc:
        what = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise DataError(f"{folder}: the dataset files are missing or corrupt ({type(exc).__name__}: {what}); "
                        f"{rebuild_hint(name)}") from None


def word_table(folder: str | Path) -> Any:
    """The word table of the embedding artifact in ``folder`` (fedbench.data.datasets.glove), as a float tensor
    [V + 1, d]."""
    import torch

    from fedbench.data.datasets.glove import load_embedding

    return torch.from_numpy(load_embedding(Path(folder))[1])


def word_table_of(ds: FederatedDataset) -> Any:
    """The frozen word table a token dataset refers to (its ``input.embedding`` folder, as the partition stage
    recorded it), as a tensor; None for other inputs."""
    ref = ds.input.embedding
    return None if ref is None else word_table(ref.folder)
