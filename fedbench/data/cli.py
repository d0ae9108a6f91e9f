"""``fedbench data fetch|prepare|show|export|list|profile``: real datasets by hand (DVC runs the same functions).

Torch is imported only by ``prepare`` (its partitioners draw from fedbench.seeding); ``show``, ``list`` and
``profile`` answer without it. A problem with the command's input (a name, an option, the params file, a file the
command needs that is missing) is one line and exit 2, before anything is written; a fetch that fails (the
download, a checksum, a local copy that does not verify) is one line and exit 1.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from fedbench.data.params import read_params
from fedbench.data.registry import (
    DATA_ROOT,
    PREPARATIONS,
    VARIANTS,
    dataset_folder,
    profile,
    validate_data_section,
)
from fedbench.errors import ConfigError, DataError, FedbenchError, check_folder
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


DEFAULT_PARAMS = "params.yaml"


def _data_params(path: str | None) -> dict[str, Any]:
    """The data section (validated) of params file ``path``, read as fedbench.config reads it; without --params, of
    ./params.yaml, or {} when there is none."""
    if path is None:
        if not Path(DEFAULT_PARAMS).exists():
            return {}
        path = DEFAULT_PARAMS
    data = read_params(path).get("data") or {}
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: data: expected a mapping, got {type(data).__name__}")
    validate_data_section(data.get("sources") or [], data.get("real") or [], data.get("variants"), data.get("prepare"))
    return data


def _dataset_folder(name: str, root: str) -> Path:
    """Where dataset ``name`` is under ``root``; a DataError saying how to build it when it is not there, a
    ConfigError naming the datasets when ``name`` is none of them."""
    folder = dataset_folder(name, root)
    if folder.exists():
        return folder
    from fedbench.data.synthetic import SYNTHETIC_DATASETS

    if name in VARIANTS:
        raise DataError(f"{folder}: no such dataset; build it with `fedbench data prepare {name}`")
    if name in SYNTHETIC_DATASETS:
        raise DataError(f"{folder}: no such dataset; build it with `fedbench generate {name}` or `dvc repro`")
    raise ConfigError(f"{name!r} is not a dataset; known: {', '.join([*VARIANTS, *SYNTHETIC_DATASETS])}")


def _sources_of(names: list[str]) -> list[str]:
    from fedbench.data.sources import SOURCES

    out: list[str] = []
    for name in names:
        if name in SOURCES:
            found = [name]
        elif name in VARIANTS:
            found = list(VARIANTS[name].sources)
        else:
            raise ConfigError(f"{name!r} is neither a source nor a dataset variant; sources: {', '.join(SOURCES)}; "
                              f"variants: {', '.join(VARIANTS)}")
        out += [s for s in found if s not in out]
    return out


def cmd_fetch(a: argparse.Namespace) -> None:
    from fedbench.data.stages import fetch

    sources = _sources_of(a.names)
    if a.raw is not None:
        if len(sources) != 1:
            raise ConfigError(f"--raw names the folder of one source; {' '.join(a.names)} has {len(sources)}: "
                              f"{', '.join(sources)}")
        check_folder("--raw", a.raw, f"the folder holding {sources[0]}'s files", must_exist=True)
    for source in sources:
        fetch(source, a.root, progress=not a.quiet, local=a.raw, use_local_copies=not a.download)


def cmd_prepare(a: argparse.Namespace) -> None:
    from fedbench.data.stages import prepare_dataset

    if a.name not in PREPARATIONS and a.name not in VARIANTS:
        _sources_of([a.name])  # raises the one-line error naming what is allowed
    if a.raw is not None:
        check_folder("--raw", a.raw, "the folder holding the raw files in their upstream layout", must_exist=True)
    data = _data_params(a.params)
    prepare_dataset(a.name, a.root, a.raw, verify=not a.no_verify, prepare_params=data.get("prepare"),
                    variant_params=(data.get("variants") or {}).get(a.name))


def cmd_show(a: argparse.Namespace) -> None:
    from fedbench.data.format import load_dataset
    from fedbench.data.stats import format_stats, write_one

    check_folder("--out", a.out, f"a folder for {a.name}.json, {a.name}.png and README.md, e.g. reports/data")
    ds = load_dataset(_dataset_folder(a.name, a.root))
    stats = write_one(ds, a.out)
    print(format_stats(stats))
    print(f"  written            {Path(a.out) / (ds.name + '.json')}, {Path(a.out) / (ds.name + '.png')}")


def cmd_export(a: argparse.Namespace) -> None:
    from fedbench.data.format import load_dataset
    from fedbench.data.leaf import write_leaf_json

    check_folder("--leaf-json", a.leaf_json, "a folder for train/ and test/, e.g. out/")
    train, test = write_leaf_json(load_dataset(_dataset_folder(a.name, a.root)), a.leaf_json)
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
    p.add_argument("--params", help="params file whose data section is used (default: params.yaml, where there is one)")
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
    s = sub.add_parser("show", help="statistics of a dataset and its label-by-client figure into reports/data/, "
                                    "whose README.md indexes every dataset there")
    s.add_argument("name", metavar="NAME", help="a dataset variant (or a synthetic dataset)")
    s.add_argument("--out", default="reports/data", help="folder for OUT/NAME.json (statistics) and OUT/NAME.png "
                   "(figure); OUT/README.md is rewritten as the index of every dataset's statistics in OUT, so OUT "
                   "holds no other *.json or README.md (default: reports/data)")
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
    """Exit 0; 2 on a problem with the command's input (PartitionError and the registry's checks are ValueErrors, a
    file the command needs and lacks a FileNotFoundError); 1 when a fetch fails (DownloadError, ChecksumError,
    LocalCopyError: RuntimeErrors) or the machine does (OSError); 130 on Ctrl-C."""
    args = build_parser().parse_args(argv)
    try:
        args.fn(args)
    except (FedbenchError, ValueError, FileNotFoundError) as exc:
        print(f"fedbench data {args.command}: {exc}", file=sys.stderr)
        return 2
    except (OSError, RuntimeError, KeyError) as exc:
        if isinstance(exc, KeyError) and not (exc.args and " " in str(exc.args[0])):
            raise  # a bare key is a bug, not a message: its traceback says where
        print(f"fedbench data {args.command}: {exc.args[0] if isinstance(exc, KeyError) else exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"fedbench data {args.command}: interrupted; rerun the same command (a download resumes)", file=sys.stderr)
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
