"""Statistics of a federated dataset and its label-by-client figure (``fedbench data show``, ``reports/data/``).

Samples per client count training and test samples together, as the papers' tables do (FedProx Table 1:
devices, samples, mean and sd per device); classes per client are the distinct labels a client holds. A
dataset built on raw files that were not verified against their checksums says so in every output.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import numpy as np

from fedbench.data.format import FederatedDataset, atomic_folder
from fedbench.errors import ConfigError

FIGURE_MAX_CLIENTS = 200  # the figure shows the first 200 clients (in dataset order) when there are more
INDEX_TITLE = "# Real datasets"  # README.md's first line: the index this module writes
# what the index reads of each <name>.json
INDEX_KEYS = {"name", "verified", "clients", "test_only_clients", "samples", "train_samples", "test_samples",
              "global_test_samples", "samples_per_client", "classes_per_client"}
UNAVAILABLE_TITLE = "Not built on this machine (their sources are unavailable):"  # the index's list of those
UNAVAILABLE_LINE = re.compile(r"^- `([^`]+)`: (.*)$")  # one of them, with its reason


def _summary(values: np.ndarray) -> dict[str, float]:
    values = np.asarray(values, np.float64)
    if not len(values):
        return {"min": 0, "median": 0, "max": 0, "mean": 0, "sd": 0}
    return {"min": float(values.min()), "median": float(np.median(values)), "max": float(values.max()),
            "mean": round(float(values.mean()), 2), "sd": round(float(values.std()), 2)}


def _classes_per_client(ds: FederatedDataset) -> np.ndarray:
    out = np.zeros(ds.num_clients, np.int64)
    for k in range(ds.num_clients):
        labels = np.concatenate([ds.train.client(k)[1], ds.test.client(k)[1]])
        out[k] = len(np.unique(labels))
    return out


def dataset_stats(ds: FederatedDataset) -> dict[str, Any]:
    sizes = ds.train.sizes + ds.test.sizes
    train_clients = ds.train.sizes > 0
    stats = {
        "name": ds.name,
        "content_hash": ds.content_hash,
        "verified": bool(ds.source.get("verified", True)),
        "clients": ds.num_clients,
        "train_clients": int(train_clients.sum()),
        "test_only_clients": int(ds.test_only.sum()),
        "samples": int(sizes.sum()),
        "train_samples": int(ds.train.sizes.sum()),
        "test_samples": int(ds.test.sizes.sum()),
        "global_test_samples": 0 if ds.global_test is None else len(ds.global_test.y),
        "num_classes": ds.num_classes,
        "samples_per_client": _summary(sizes),
        "train_samples_per_train_client": _summary(ds.train.sizes[train_clients]),
        "classes_per_client": _summary(_classes_per_client(ds)),
        "input": {"kind": ds.input.kind, "shape": list(ds.feature_shape), "dtype": str(ds.train.x.dtype),
                  "transform": ds.input.transform},
        "partition": {k: v for k, v in ds.partition.items() if k != "params"},
    }
    if ds.hierarchy:
        stats["hierarchy"] = {level: len(set(values)) for level, values in ds.hierarchy.items()}
    return stats


def format_stats(stats: dict[str, Any]) -> str:
    s, c = stats["samples_per_client"], stats["classes_per_client"]
    lines = [
        f"{stats['name']}  (hash {stats['content_hash'][:12]})",
        f"  clients            {stats['clients']} ({stats['train_clients']} with training data, "
        f"{stats['test_only_clients']} test-only)",
        f"  samples            {stats['samples']} ({stats['train_samples']} train, {stats['test_samples']} test"
        + (f", global test set {stats['global_test_samples']})" if stats["global_test_samples"] else ")"),
        f"  samples per client min {s['min']:g}, median {s['median']:g}, max {s['max']:g} "
        f"(mean {s['mean']:g}, sd {s['sd']:g})",
        f"  classes per client min {c['min']:g}, median {c['median']:g}, max {c['max']:g} "
        f"(of {stats['num_classes']})",
        f"  input              {stats['input']['kind']} {stats['input']['shape']} {stats['input']['dtype']}, "
        f"transform {stats['input']['transform']}",
    ]
    if "hierarchy" in stats:
        lines.append("  hierarchy          " + ", ".join(f"{k}: {v} values" for k, v in stats["hierarchy"].items()))
    if not stats["verified"]:
        lines.append("  UNVERIFIED: built on raw files whose checksums were not verified (--no-verify)")
    return "\n".join(lines)


def label_figure(ds: FederatedDataset, path: Path) -> Path:
    """Heat map of label counts per client (train and test), clients in dataset order."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    n = min(ds.num_clients, FIGURE_MAX_CLIENTS)
    counts = np.zeros((ds.num_classes, n))
    for k in range(n):
        labels = np.concatenate([ds.train.client(k)[1], ds.test.client(k)[1]])
        counts[:, k] = np.bincount(labels, minlength=ds.num_classes)[: ds.num_classes]
    fig, ax = plt.subplots(figsize=(min(14, 4 + n * 0.06), min(10, 2 + ds.num_classes * 0.12)))
    image = ax.imshow(np.log1p(counts), aspect="auto", interpolation="nearest", cmap="viridis")
    ax.set_xlabel(f"client (first {n} of {ds.num_clients})" if n < ds.num_clients else "client")
    ax.set_ylabel("label")
    title = f"{ds.name}: samples per label and client"
    if not ds.source.get("verified", True):
        title += " (UNVERIFIED raw files)"
    ax.set_title(title)
    fig.colorbar(image, ax=ax, label="log(1 + samples)")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=80)
    plt.close(fig)
    return path


def _index(stats: list[dict[str, Any]], unavailable: dict[str, str] | None = None) -> str:
    lines = [INDEX_TITLE, "",
             "Written by `fedbench data show` and the `data_report` stage from `data/real/`. Samples per client "
             "count train and test samples.", "",
             "| dataset | clients (test-only) | samples (train / test / global test) | samples per client "
             "min / median / max (mean, sd) | classes per client min / median / max | raw files |",
             "|---|---|---|---|---|---|"]
    for s in sorted(stats, key=lambda s: s["name"]):
        p, c = s["samples_per_client"], s["classes_per_client"]
        lines.append(
            f"| `{s['name']}` | {s['clients']} ({s['test_only_clients']}) | {s['samples']} ({s['train_samples']} / "
            f"{s['test_samples']} / {s['global_test_samples']}) | {p['min']:g} / {p['median']:g} / {p['max']:g} "
            f"({p['mean']:g}, {p['sd']:g}) | {c['min']:g} / {c['median']:g} / {c['max']:g} | "
            f"{'verified' if s['verified'] else '**UNVERIFIED**'} |")
    if unavailable:
        lines += ["", UNAVAILABLE_TITLE, ""]
        lines += [f"- `{name}`: {reason}" for name, reason in sorted(unavailable.items())]
    return "\n".join(lines) + "\n"


def _write(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text)
    tmp.replace(path)


def _is_stats(path: Path) -> bool:
    """Whether ``path`` is a <name>.json this module wrote: a mapping of the index's keys, named as the file."""
    try:
        stats = json.loads(path.read_text())
    except (OSError, ValueError):
        return False
    return isinstance(stats, dict) and INDEX_KEYS <= stats.keys() and stats["name"] == path.stem


def check_out(out: Path) -> None:
    """A ConfigError naming the file unless every *.json in folder ``out`` is a statistics file and its README.md
    (if any) the index: ``write_one`` rewrites README.md from all of them."""
    if not out.is_dir():
        return
    readme = out / "README.md"
    for path in sorted(out.glob("*.json")):
        if not _is_stats(path):
            raise ConfigError(f"{path}: not a statistics file of `fedbench data show`, which rewrites {readme} from "
                              f"every *.json in {out}; give it a folder of its own, e.g. --out reports/data")
    ours = readme.is_file() and readme.read_text(errors="replace").startswith(INDEX_TITLE + "\n")
    if readme.exists() and not ours:
        raise ConfigError(f"{readme}: not the index of `fedbench data show`, which rewrites it; give it a folder of "
                          "its own, e.g. --out reports/data")


def write_one(ds: FederatedDataset, out: str | Path) -> dict[str, Any]:
    """``out``/<name>.json and <name>.png for one dataset, and README.md re-indexed from every <name>.json there;
    nothing is written when ``out`` holds other *.json files or another README.md (:func:`check_out`)."""
    out = Path(out)
    check_out(out)
    out.mkdir(parents=True, exist_ok=True)
    stats = dataset_stats(ds)
    figure = label_figure(ds, out / f".{ds.name}.tmp.png")
    figure.replace(out / f"{ds.name}.png")
    _write(out / f"{ds.name}.json", json.dumps(stats, indent=2, sort_keys=True) + "\n")
    unavailable = {name: why for name, why in _unavailable_in(out / "README.md").items() if name != ds.name}
    _write(out / "README.md", _index([json.loads(p.read_text()) for p in sorted(out.glob("*.json"))], unavailable))
    return stats



def _unavailable_in(readme: Path) -> dict[str, str]:
    """The variants an index lists as not built, with their reasons (kept when one dataset is re-indexed)."""
    if not readme.is_file():
        return {}
    lines = readme.read_text(errors="replace").splitlines()
    if UNAVAILABLE_TITLE not in lines:
        return {}
    found = (UNAVAILABLE_LINE.match(line) for line in lines[lines.index(UNAVAILABLE_TITLE) + 1:])
    return {m.group(1): m.group(2) for m in found if m}


def write_reports(datasets: list[FederatedDataset], out: str | Path,
                  unavailable: dict[str, str] | None = None) -> list[dict[str, Any]]:
    """``out`` holding <name>.json (statistics) and <name>.png (labels by client) for every dataset, and
    README.md (a table of all, then the ``unavailable`` variants with their one-line reasons), replaced as a
    whole; returns the statistics."""
    out = Path(out)
    with atomic_folder(out) as tmp:
        stats = []
        for ds in datasets:
            stats.append(dataset_stats(ds))
            (tmp / f"{ds.name}.json").write_text(json.dumps(stats[-1], indent=2, sort_keys=True) + "\n")
            label_figure(ds, tmp / f"{ds.name}.png")
        (tmp / "README.md").write_text(_index(stats, unavailable))
    return stats
