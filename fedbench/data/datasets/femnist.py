"""FEMNIST from NIST Special Database 19 (downloaded ``by_class.zip`` and ``by_write.zip``): LEAF's steps, FedProx's
ten-letter subset and Delta-FL's by-user split.

Prepared source ``femnist``, LEAF's data/femnist/preprocess exactly (real-data.md section 3), read from the two
zips without unpacking them:
1. get_file_dirs: by_class class folders whose name has 2 characters; in each, subfolders whose name contains
   'hsf' and not 'mit' (so the ``train_<hex>`` copies and ``.mit`` files are skipped); every image in them.
   by_write: every ``hsf_<n>/<writer>/<type>/<image>``. LEAF lists folders with os.listdir; here every level is
   sorted by name, and said so.
2. get_hashes / match_hashes: md5 of every image's bytes; class of a hash = its first occurrence in the
   by_class listing (LEAF scans it in reverse, later entries overwriting earlier ones); every by_write image
   takes the class of its hash (an image whose bytes are in no class folder is an error, as LEAF's KeyError).
3. group_by_writer: contiguous runs of one writer; LEAF's loop adds each writer's first image twice except for
   the very first writer's (``repeat_first_image``, default true: LEAF's, FedProx's and Delta-FL's data have it).
4. data_to_json: each image converted to 'L' and thumbnailed to 28 x 28 with LANCZOS (ANTIALIAS) and
   ``reducing_gap`` None: the plain resize Pillow did before version 7, when LEAF's data was made (Pillow 7+
   defaults to reducing_gap 2.0, which changes pixels by up to 15/255; the value and Pillow's version are
   recorded); x = pixels / 255 (kept here as uint8 with the ``scale`` transform, which gives exactly LEAF's
   floats), background ~1 and ink ~0 (not inverted like MNIST); labels '30'-'39' -> 0-9, '41'-'5a' -> 10-35,
   '61'-'7a' -> 36-61; writers in files of 100 (``all_data_<i>.json``), the last one partial.
Arrays: ``images`` uint8 [m, 784] (one per distinct image), the LEAF samples (``sample_image``, ``sample_label``)
grouped by writer (``writers`` packed, ``writer_offsets``, ``writer_hsf`` packed), and FedProx's source: every
``by_class/<61..6a>/train_<hex>/`` file (``fp_names`` packed, ``fp_image``, ``fp_label`` 0-9).

Variants:
- ``femnist_leaf``: LEAF HEAD's full-size command ``-s niid --sf 1.0 -k 0 -t sample`` (>= k, frac 0.9), all
  files (HEAD writes the last partial file);
- ``femnist_fedprox``: FedProx's my_sample.py (fedbench.data.partition.fedprox_femnist): 200 devices, 3 of the
  letters a-j each, 90/10 split; labels 0-9 (FedProx's model still has 26 outputs: real-data.md section 6);
- ``femnist_deltafl``: Delta-FL's ``-s niid --sf 1.0 -k 100 -t user --tf 0.5`` with its copy (Random(0),
  Random(1), > k) on the 3,500 writers of the files FedProx, Delta-FL and LEAF before 2021 keep (the last
  partial file dropped): test users are test-only clients; input (x / 255 - mean) / mean with per-split means
  (Delta-FL's normalisation). Delta-FL then draws int(0.5 * train users) train and as many test users per run
  seed (:func:`deltafl_subsample`), which belongs to a run, not to the dataset.
"""

from __future__ import annotations

import hashlib
import io
import zipfile
from pathlib import Path
from typing import Any

import numpy as np

from fedbench.data.build import assemble, leaf_clients
from fedbench.data.format import FederatedDataset, InputSpec
from fedbench.data.leafsteps import LeafCommand, LeafFile, run_leaf
from fedbench.data.partition.fedprox_femnist import fedprox_femnist
from fedbench.data.partition.split import shuffle_split
from fedbench.data.pool import Pool, pack_strings, unpack_strings
from fedbench.data.sources import verify_raw

MAX_WRITERS = 100  # LEAF data_to_json.py: writers per JSON file
FEDPROX_CLASSES = [f"{c:02x}" for c in range(0x61, 0x6B)]  # 'a'..'j'


def relabel(hex_class: str) -> int:
    """LEAF's relabel_class: '30'-'39' -> 0-9, '41'-'5a' -> 10-35, '61'-'7a' -> 36-61."""
    if hex_class.isdigit() and int(hex_class) < 40:
        return int(hex_class) - 30
    value = int(hex_class, 16)
    return value - 55 if value <= 90 else value - 61


class ZipTree:
    """A zip's members as a tree listed like os.listdir, but sorted."""

    def __init__(self, path: Path) -> None:
        self.zip = zipfile.ZipFile(path)
        self.path = path
        self.children_of: dict[str, set[str]] = {}
        self.files: set[str] = set()
        for name in self.zip.namelist():
            clean = name.rstrip("/")
            if not clean:
                continue
            if not name.endswith("/"):
                self.files.add(clean)
            parts = clean.split("/")
            for i in range(len(parts)):
                self.children_of.setdefault("/".join(parts[:i]), set()).add(parts[i])

    def children(self, folder: str) -> list[str]:
        if folder in self.files:
            raise NotADirectoryError(f"{self.path}:{folder} is a file where LEAF expects a folder")
        if folder not in self.children_of:
            raise FileNotFoundError(f"{self.path}: no folder {folder!r}")
        return sorted(self.children_of[folder])

    def read(self, name: str) -> bytes:
        return self.zip.read(name)


def class_files(tree: ZipTree) -> list[tuple[str, str]]:
    out = []
    for cl in tree.children("by_class"):
        if len(cl) != 2:
            continue
        for sub in tree.children(f"by_class/{cl}"):
            if "hsf" in sub and "mit" not in sub:
                out += [(cl, f"by_class/{cl}/{sub}/{img}") for img in tree.children(f"by_class/{cl}/{sub}")]
    return out


def write_files(tree: ZipTree) -> list[tuple[str, str, str]]:
    out = []
    for part in tree.children("by_write"):
        for writer in tree.children(f"by_write/{part}"):
            for wtype in tree.children(f"by_write/{part}/{writer}"):
                folder = f"by_write/{part}/{writer}/{wtype}"
                out += [(writer, f"{folder}/{img}", part) for img in tree.children(folder)]
    return out


def resize(png: bytes, reducing_gap: float | None) -> np.ndarray:
    """LEAF's image step: 'L', thumbnail to 28 x 28 with LANCZOS (ANTIALIAS), as uint8 [784]."""
    from PIL import Image

    with Image.open(io.BytesIO(png)) as img:
        gray = img.convert("L")
        gray.thumbnail((28, 28), Image.LANCZOS, reducing_gap=reducing_gap)
        pixels = np.asarray(gray, dtype=np.uint8)
    if pixels.shape != (28, 28):
        raise ValueError(f"image of size {img.size} thumbnails to {pixels.shape[::-1]}, not 28 x 28; SD19 images "
                         "are 128 x 128")
    return pixels.reshape(-1)


class _Images:
    """Distinct images by md5, resized once."""

    def __init__(self, reducing_gap: float | None) -> None:
        self.index: dict[str, int] = {}
        self.rows: list[np.ndarray] = []
        self.reducing_gap = reducing_gap

    def add(self, digest: str, png: bytes) -> int:
        if digest not in self.index:
            self.index[digest] = len(self.rows)
            self.rows.append(resize(png, self.reducing_gap))
        return self.index[digest]


def prepare(folder: Path, verify: bool = True, params: dict[str, Any] | None = None) -> Pool:
    import PIL

    params = {"repeat_first_image": True, "reducing_gap": None, **(params or {})}
    provenance = verify_raw("femnist", folder, verify)
    by_class, by_write = ZipTree(folder / "by_class.zip"), ZipTree(folder / "by_write.zip")
    classes = class_files(by_class)
    class_of: dict[str, str] = {}
    for cl, path in reversed(classes):
        class_of[hashlib.md5(by_class.read(path)).hexdigest()] = cl
    images = _Images(params["reducing_gap"])
    runs: list[tuple[str, str, list[tuple[int, int]]]] = []  # (writer, hsf, [(image, label)])
    for writer, path, part in write_files(by_write):
        png = by_write.read(path)
        digest = hashlib.md5(png).hexdigest()
        if digest not in class_of:
            raise ValueError(f"{folder / 'by_write.zip'}:{path}: its bytes are in no by_class folder (LEAF's "
                             "match_hashes fails the same way); is by_class.zip complete?")
        sample = (images.add(digest, png), relabel(class_of[digest]))
        if runs and runs[-1][0] == writer:
            runs[-1][2].append(sample)
        else:
            runs.append((writer, part, [sample, sample] if runs and params["repeat_first_image"] else [sample]))
    fp_names, fp_image, fp_label = [], [], []
    for hex_class in FEDPROX_CLASSES:
        sub = f"by_class/{hex_class}/train_{hex_class}"
        if hex_class not in by_class.children("by_class") or f"train_{hex_class}" not in by_class.children(
                f"by_class/{hex_class}"):
            continue
        for img in by_class.children(sub):
            png = by_class.read(f"{sub}/{img}")
            fp_names.append(f"{sub}/{img}")
            fp_image.append(images.add(hashlib.md5(png).hexdigest(), png))
            fp_label.append(relabel(hex_class) - 36)
    samples = [s for _, _, run in runs for s in run]
    writer_bytes, writer_name_offsets = pack_strings([w for w, _, _ in runs])
    hsf_bytes, hsf_offsets = pack_strings([h for _, h, _ in runs])
    name_bytes, name_offsets = pack_strings(fp_names)
    arrays = {
        "images": np.array(images.rows, np.uint8).reshape(-1, 784),
        "sample_image": np.array([s[0] for s in samples], np.int64),
        "sample_label": np.array([s[1] for s in samples], np.int64),
        "writers": writer_bytes, "writer_name_offsets": writer_name_offsets,
        "writer_offsets": np.concatenate([[0], np.cumsum([len(r) for _, _, r in runs])]).astype(np.int64),
        "writer_hsf": hsf_bytes, "writer_hsf_offsets": hsf_offsets,
        "fp_names": name_bytes, "fp_name_offsets": name_offsets,
        "fp_image": np.array(fp_image, np.int64), "fp_label": np.array(fp_label, np.int64),
    }
    return Pool("femnist", arrays, {"sources": [provenance]}, {
        "writers": len(runs), "samples": len(samples), "distinct_images": len(images.rows),
        "class_images": len(classes), "fedprox_images": len(fp_names), "pillow": PIL.__version__,
        "resample": "LANCZOS (ANTIALIAS)", **params})


def _leaf_files(pool: Pool, drop_last_partial_file: bool) -> tuple[list[LeafFile], list[str]]:
    writers = unpack_strings(pool["writers"], pool["writer_name_offsets"])
    hsf = unpack_strings(pool["writer_hsf"], pool["writer_hsf_offsets"])
    offsets = pool["writer_offsets"]
    files = []
    for start in range(0, len(writers), MAX_WRITERS):
        chunk = range(start, min(start + MAX_WRITERS, len(writers)))
        if drop_last_partial_file and len(chunk) < MAX_WRITERS:
            break
        files.append(LeafFile(f"all_data_{start // MAX_WRITERS}.json", [writers[w] for w in chunk],
                              [np.arange(offsets[w], offsets[w + 1], dtype=np.int64) for w in chunk],
                              [hsf[w] for w in chunk]))
    return files, hsf


def _build_leaf(variant: str, pool: Pool, p: dict[str, Any]) -> tuple[list[str], list[np.ndarray], list[np.ndarray],
                                                                      tuple[str, ...] | None, Any, np.ndarray]:
    """LEAF's steps on the writers' files: (ids, train rows, test rows, hsf per client, partition, x)."""
    files, _ = _leaf_files(pool, p["drop_last_partial_file"])
    command = LeafCommand(sample=p["sample"], fraction=p["fraction"], min_samples=p["min_samples"],
                          strict=p["strict"], split=p["split"], train_fraction=p["train_fraction"],
                          sampling_seed=p["sampling_seed"], split_seed=p["split_seed"])
    train_users, test_users = run_leaf(files, command, f"data.variants.{variant}")
    ids, train, test, hierarchy, partition = leaf_clients(variant, train_users, test_users, p)
    x = pool["images"][pool["sample_image"]]
    return ids, train, test, hierarchy, partition, x


def build_femnist_leaf(prepared: Any, params: dict[str, Any]) -> FederatedDataset:
    pool = prepared("femnist")
    p = params
    spec = InputSpec(kind="features", transform="scale", transform_params={"divisor": 255.0}, image_shape=(1, 28, 28))
    ids, train, test, hierarchy, partition, x = _build_leaf("femnist_leaf", pool, p)
    return assemble("femnist_leaf", x, pool["sample_label"], train, test, ids, 62, input=spec, partition=partition,
                    keys=np.arange(len(x)), pools=[pool], params=p,
                    hierarchy={"hsf": hierarchy} if hierarchy else None, notes=[
                        "LEAF HEAD: -s niid --sf 1.0 -k 0 -t sample (>= k, frac 0.9); seeds 0 (LEAF's unseeded "
                        "runs take the clock)"])


def build_femnist_deltafl(prepared: Any, params: dict[str, Any]) -> FederatedDataset:
    pool = prepared("femnist")
    p = params
    ids, train, test, hierarchy, partition, x = _build_leaf("femnist_deltafl", pool, p)
    train_px = x[np.concatenate(train)] if train else x[:0]
    test_px = x[np.concatenate(test)] if test else x[:0]
    constants = {"mean_train": (train_px.astype(np.float64) / 255).mean(0).astype(np.float32),
                 "mean_test": (test_px.astype(np.float64) / 255).mean(0).astype(np.float32)}
    spec = InputSpec(kind="features", transform="divide_by_mean", transform_params={"divisor": 255.0},
                     image_shape=(1, 28, 28))
    return assemble("femnist_deltafl", x, pool["sample_label"], train, test, ids, 62, input=spec,
                    partition=partition, keys=np.arange(len(x)), pools=[pool], params=p,
                    hierarchy={"hsf": hierarchy} if hierarchy else None, transform_arrays=constants, notes=[
                        "Delta-FL: -s niid --sf 1.0 -k 100 -t user --tf 0.5 (Random(0), Random(1), > k) on the "
                        "3,500 writers of the full files; test users are test-only clients",
                        "input (x / 255 - mean) / mean with per-split means computed here (the authors ship "
                        "constants of unstated origin)",
                        "per run seed the authors keep int(0.5 * train users) train and test users: "
                        "fedbench.data.datasets.femnist.deltafl_subsample"])


def build_femnist_fedprox(prepared: Any, params: dict[str, Any]) -> FederatedDataset:
    pool = prepared("femnist")
    p = params
    keys = np.array(unpack_strings(pool["fp_names"], pool["fp_name_offsets"]))
    labels = pool["fp_label"]
    if len(np.unique(labels)) < 10:
        raise ValueError(f"femnist_fedprox needs by_class/<61..6a>/train_<hex>/ images of all ten letters a-j; "
                         f"found {len(np.unique(labels))}")
    partition = fedprox_femnist(keys, labels, seed=p["seed"], num_clients=p["num_clients"],
                                classes_per_client=p["classes_per_client"], per_class_cap=p["per_class_cap"],
                                lognormal_mean=p["lognormal_mean"], lognormal_sigma=p["lognormal_sigma"])
    train, test = shuffle_split(partition, p["train_fraction"], p["seed"])
    spec = InputSpec(kind="features", transform="scale", transform_params={"divisor": 255.0}, image_shape=(1, 28, 28))
    return assemble("femnist_fedprox", pool["images"][pool["fp_image"]], labels, train, test,
                    [f"f_{u:05d}" for u in range(p["num_clients"])], 10, input=spec, partition=partition, keys=keys,
                    pools=[pool], params=p, notes=[
                        "FedProx my_sample.py: by_class train_<hex> folders of a-j, each shuffled (seeded; the "
                        "authors' is not) and cut to 4000; 3 classes per device (the paper says 5); every device "
                        "takes the first images of its classes (the authors' pointer quirk)",
                        "labels 0-9; FedProx's model has 26 outputs"])


def deltafl_subsample(ds: FederatedDataset, seed: int, fraction: float = 0.5) -> tuple[np.ndarray, np.ndarray]:
    """Delta-FL's per-run choice (simplicial-fl models/main.py setup_clients): numpy seeded with the run seed,
    int(fraction * #train users) train users and as many test users drawn without replacement (train first).
    Returns the dataset indices of the chosen train and test clients. The draw is over clients in the dataset's
    (sorted) order; the authors' follows their JSON files' order, so the same seed picks other users."""
    train_clients = np.flatnonzero(ds.train.sizes > 0)
    test_clients = np.flatnonzero(ds.test_only)
    state = np.random.RandomState(seed)
    k = int(fraction * len(train_clients))
    return (train_clients[state.choice(np.arange(len(train_clients)), k, replace=False)],
            test_clients[state.choice(np.arange(len(test_clients)), k, replace=False)])
