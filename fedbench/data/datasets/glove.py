"""GloVe 6B word vectors (downloaded ``glove.6B.zip``) as frozen embedding artifacts.

Prepared source ``glove``: one artifact per dimension used by the papers, ``data/prepared/glove/glove.6B.50d``
(Delta-FL) and ``.../glove.6B.300d`` (FedProx), each a prepared-source folder holding ``words`` (the vocabulary
in file order, UTF-8 packed) and ``matrix`` float32 [V + 1, d]: row i is word i's vector, and the last row is
the zero vector the authors append for unknown words (LEAF/FedProx models/sent140/get_embs.py,
simplicial-fl models/sent140/get_embs.py: ``emb_floats.append([0.0] * dim)``). Lines are split on whitespace
(``line.split()``) as the authors do; floats are parsed as Python floats and stored as float32 (the authors
store float64 JSON that TensorFlow and torch read as float32).

A dataset refers to an artifact by name and content hash (``input.embedding``); :func:`load_embedding` reads it.
The word ids are the authors' ``word2id = {w: i}`` (a repeated word keeps its last row), and the unknown id is
``len(word2id)``, which is the zero row when no word repeats (GloVe 6B has none).
"""

from __future__ import annotations

import io
import zipfile
from pathlib import Path
from typing import Any

import numpy as np

from fedbench.data.format import EmbeddingRef
from fedbench.data.pool import Pool, load_pool, pack_strings, save_pool, unpack_strings
from fedbench.data.sources import verify_raw

DIMENSIONS = (50, 300)
ARCHIVE = "glove.6B.zip"


def artifact_name(dim: int) -> str:
    return f"glove.6B.{dim}d"


def parse_glove(lines: io.TextIOBase, dim: int, label: str) -> tuple[list[str], np.ndarray]:
    words, rows = [], []
    for number, line in enumerate(lines, 1):
        parts = line.split()
        if not parts:
            continue
        if len(parts) != dim + 1:
            raise ValueError(f"{label} line {number}: {len(parts) - 1} numbers, expected {dim}")
        words.append(parts[0])
        rows.append([float(v) for v in parts[1:]])
    matrix = np.array(rows + [[0.0] * dim], dtype=np.float32).reshape(-1, dim)
    return words, matrix


def prepare(folder: Path, verify: bool = True, params: dict[str, Any] | None = None) -> dict[str, Pool]:
    """{artifact name: Pool(words, matrix)} for each dimension; saved as subfolders by the prepare stage."""
    dims = tuple((params or {}).get("dimensions", DIMENSIONS))
    provenance = verify_raw("glove", folder, verify)
    out = {}
    with zipfile.ZipFile(folder / ARCHIVE) as z:
        for dim in dims:
            member = f"{artifact_name(dim)}.txt"
            try:
                raw = z.open(member)
            except KeyError:
                raise FileNotFoundError(f"{folder / ARCHIVE}: no member {member}") from None
            with io.TextIOWrapper(raw, encoding="utf-8") as lines:
                words, matrix = parse_glove(lines, dim, f"{ARCHIVE}:{member}")
            word_bytes, word_offsets = pack_strings(words)
            out[artifact_name(dim)] = Pool(artifact_name(dim), {"words": word_bytes, "word_offsets": word_offsets,
                                                                "matrix": matrix},
                                           {"sources": [provenance]}, {"words": len(words), "dim": dim,
                                                                       "unknown_row": len(words)})
    return out


def save(pools: dict[str, Pool], folder: Path) -> Path:
    from fedbench.data.format import atomic_folder

    with atomic_folder(folder, suffix=".partial") as tmp:
        for name, pool in pools.items():
            save_pool(pool, tmp / name)
    return folder


def load_embedding(folder: str | Path) -> tuple[list[str], np.ndarray]:
    """(words, float32 matrix [V + 1, d] with the zero unknown row last) of a prepared GloVe artifact."""
    pool = load_pool(folder)
    return unpack_strings(pool["words"], pool["word_offsets"]), pool["matrix"]


def reference(pool: Pool, folder: str) -> EmbeddingRef:
    matrix = pool["matrix"]
    return EmbeddingRef(name=pool.name, content_hash=pool.content_hash, rows=int(matrix.shape[0]),
                        dim=int(matrix.shape[1]), folder=folder)


def word_ids(pool: Pool) -> dict[str, int]:
    """The authors' word2id: {word: row}, a repeated word keeping its last row."""
    return {w: i for i, w in enumerate(unpack_strings(pool["words"], pool["word_offsets"]))}
