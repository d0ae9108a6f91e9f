"""``fedbench data fetch|prepare|show|export|list|profile``: real datasets by hand (DVC runs the same functions).

Torch is imported only by ``prepare`` (its partitioners draw from fedbench.seeding); ``show``, ``list`` and
``profile`` answer without it.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import yaml

from fedbench.data.registry import (
    DATA_ROOT,
    PREPARATIONS,
    VARIANTS,
    dataset_folder,
    profile,
    validate_data_section,
)
from fedbench.helptext import described

EPILOG = """examples:
  fedbench data list                                  # sources (sizes, offline or download) and variants
  fedbench data fetch mnist                           # download to data/raw/mnist/, verified
  fedbench data fetch fashion_mnist                   # Debian's copy when installed (apt-get install
                                                      #   dataset-fashion-mnist), else the download; verified
  fedbench data fetch fashion_mnist --raw ~/fmnist    # a copy of your own, verified (recompressed is fine)
  fedbench data prepare mnist_fedprox                 # prepare its sources, then build data/real/mnist_fedprox/
  fedbench data prepare femnist_fedprox --raw ~/sd19 --no-verify   # a lab's own copy (recorded as unverified)
  fedbench data show mnist5k_fedprox                  # statistics, and reports/data/mnist5k_fedprox.{json,png}
  fedbench data export femnist_leaf --leaf-json out/  # LEAF's JSON: out/train/*_train.json, out/test/*_test.json
  dvc exp run $(fedbench data profile paper)          # the paper profile: every variant, every download
environment: FEDBENCH_MIRROR=http://host:port/ fetches every file from that base, each under its upstream path.
"""


def _data_params(path: str) -> dict[str, Any]:
    """params.yaml's data section (validated), or {} when there is no params file."""
    p = Path(path)
    if not p.exists():
        return {}
    data = (yaml.safe_load(p.read_text()) or {}).get("data") or {}
    validate_data_section(data.get("sources") or [], data.get("real") or [], data.get("variants"), data.get("prepare"))
    return data


def _sources_of(names: list[str]) -> list[str]:
    from fedbench.data.sources import SOURCES

    out: list[str] = []
    for name in names:
        if name in SOURCES:
            found = [name]
        elif name in VARIANTS:
            found = list(VARIANTS[name].sources)
        else:
            raise ValueError(f"{name!r} is neither a source nor a dataset variant; sources: {', '.join(SOURCES)}; "
                             f"variants: {', '.join(VARIANTS)}")
        out += [s for s in found if s not in out]
    return out


def cmd_fetch(a: argparse.Namespace) -> None:
    from fedbench.data.stages import fetch

    sources = _sources_of(a.names)
    if a.raw is not None and len(sources) != 1:
        raise ValueError(f"--raw names the folder of one source; {' '.join(a.names)} has {len(sources)}: "
                         f"{', '.join(sources)}")
    for source in sources:
        fetch(source, a.root, progress=not a.quiet, local=a.raw, use_local_copies=not a.download)


def cmd_prepare(a: argparse.Namespace) -> None:
    from fedbench.data.stages import prepare_dataset

    data = _data_params(a.params)
    if a.name not in PREPARATIONS and a.name not in VARIANTS:
        _sources_of([a.name])  # raises the one-line error naming what is allowed
    prepare_dataset(a.name, a.root, a.raw, verify=not a.no_verify, prepare_params=data.get("prepare"),
                    variant_params=(data.get("variants") or {}).get(a.name))


def cmd_show(a: argparse.Namespace) -> None:
    from fedbench.data.format import load_dataset
    from fedbench.data.stats import format_stats, write_one

    folder = dataset_folder(a.name, a.root)
    if not folder.exists():
        from fedbench.data.synthetic import SYNTHETIC_DATASETS

        if a.name in VARIANTS:
            raise FileNotFoundError(f"{folder}: no such dataset; build it with `fedbench data prepare {a.name}`")
        if a.name in SYNTHETIC_DATASETS:
            raise FileNotFoundError(f"{folder}: no such dataset; build it with `fedbench generate {a.name}` or `dvc repro`")
        raise FileNotFoundError(f"{a.name!r} is not a dataset; known: {', '.join([*VARIANTS, *SYNTHETIC_DATASETS])}")
    ds = load_dataset(folder)
    stats = write_one(ds, a.out)
    print(format_stats(stats))
    print(f"  written            {Path(a.out) / (ds.name + '.json')}, {Path(a.out) / (ds.name + '.png')}")


def cmd_export(a: argparse.Namespace) -> None:
    from fedbench.data.format import load_dataset
    from fedbench.data.leaf import write_leaf_json

    folder = dataset_folder(a.name, a.root)
    if not folder.exists():
        hint = f"`fedbench data prepare {a.name}`" if a.name in VARIANTS else "`dvc repro` (its generate stage)"
        raise FileNotFoundError(f"{folder}: no such dataset; build it with {hint}")
    train, test = write_leaf_json(load_dataset(folder), a.leaf_json)
    print(f"{a.name}: LEAF JSON written to {train} and {test}")


def cmd_list(a: argparse.Namespace) -> None:
    from fedbench.data.sources import SOURCES

    print("sources (fedbench data fetch NAME):")
    for s in SOURCES.values():
        print(f"  {s.name:<14} {'offline' if s.offline else 'download'}: {s.size}. {s.description}")
    print("variants (fedbench data prepare NAME):")
    for v in VARIANTS.values():
        print(f"  {v.name:<27} {', '.join(v.sources)}: {v.description} [{v.paper}]")


def cmd_profile(a: argparse.Namespace) -> None:
    sources, variants = profile(a.profile)
    print(f"-S data.sources=[{','.join(sources)}] -S data.real=[{','.join(variants)}]")


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="fedbench data", description="Real federated datasets: fetch, prepare, show.",
                                formatter_class=argparse.RawDescriptionHelpFormatter, epilog=EPILOG)
    p.add_argument("--root", default=str(DATA_ROOT), help="data folder (default: data)")
    p.add_argument("--params", default="params.yaml", help="params file whose data section is used (default: params.yaml)")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    f = sub.add_parser("fetch", help="download sources (or a variant's sources) into data/raw/, verified")
    f.add_argument("names", nargs="+", metavar="NAME", help="a source or a dataset variant")
    f.add_argument("--quiet", action="store_true", help="no progress bar")
    f.add_argument("--raw", metavar="FOLDER", help="take the files from this folder (a copy of your own), verified "
                   "by their published md5 or, where recompressed, by the md5 of their decompressed contents")
    f.add_argument("--download", action="store_true",
                   help="download even when a system package's copy is installed (e.g. dataset-fashion-mnist)")
    f.set_defaults(fn=cmd_fetch)
    r = sub.add_parser("prepare", help="prepare a source, or a variant (its sources, then its partition)")
    r.add_argument("name", metavar="NAME", help="a source or a dataset variant")
    r.add_argument("--raw", help="folder with the raw files in their upstream layout (default: data/raw/<source>)")
    r.add_argument("--no-verify", action="store_true", help="do not check checksums (recorded as unverified)")
    r.set_defaults(fn=cmd_prepare)
    s = sub.add_parser("show", help="statistics of a dataset and its label-by-client figure (into reports/data/)")
    s.add_argument("name", metavar="NAME", help="a dataset variant (or a synthetic dataset)")
    s.add_argument("--out", default="reports/data", help="where the statistics and figure go (default: reports/data)")
    s.set_defaults(fn=cmd_show)
    e = sub.add_parser("export", help="write a dataset in another format (LEAF's JSON)")
    e.add_argument("name", metavar="NAME", help="a dataset variant (or a synthetic dataset)")
    e.add_argument("--leaf-json", required=True, metavar="FOLDER",
                   help="write FOLDER/train/NAME_train.json and FOLDER/test/NAME_test.json as LEAF writes them")
    e.set_defaults(fn=cmd_export)
    ls = sub.add_parser("list", help="every source and variant")
    ls.set_defaults(fn=cmd_list)
    pr = sub.add_parser("profile", help="print the `dvc exp run -S ...` arguments of a profile (offline, paper)")
    pr.add_argument("profile", choices=["offline", "paper"])
    pr.set_defaults(fn=cmd_profile)
    return described(p)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        args.fn(args)
    except (ValueError, OSError, KeyError, RuntimeError) as exc:  # DownloadError, ChecksumError, PartitionError
        message = exc.args[0] if isinstance(exc, KeyError) and exc.args else exc
        print(f"fedbench data {args.command}: {message}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"fedbench data {args.command}: interrupted; rerun the same command (a download resumes)", file=sys.stderr)
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
