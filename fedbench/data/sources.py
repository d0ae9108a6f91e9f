"""The upstream files fedbench builds real datasets from, their checksums, and the MNIST idx reader.

URLs and md5 values are those of shared/reference/paper-setups.md:
- section 6.4 (torchvision's dataset classes): MNIST, EMNIST, CIFAR-10 and the CIFAR-10 batch files;
- section 6.1 (LEAF data/*/preprocess/get_data.sh, identical in litian96/FedProx): the raw sources of
  FEMNIST (NIST SD19), Shakespeare (Project Gutenberg #100, 1994 edition), Sent140 and GloVe.
The LEAF raw sources have no published checksum; their ``md5`` is None and ``note`` says so, so a
download of them is not verified (record the md5 of what you fetched as provenance).

Mirrors are listed in the order they are tried.
"""

from __future__ import annotations

import gzip
import math
import os
import re
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType

import numpy as np

from fedbench.data.download import DownloadError, fetch

_MD5 = re.compile(r"[0-9a-f]{32}")
NO_CHECKSUM = "no published checksum"


@dataclass(frozen=True)
class ArchiveMember:
    """A file inside a downloaded archive whose md5 is published."""

    path: str
    md5: str


@dataclass(frozen=True)
class RemoteFile:
    """One upstream file: its name on disk, its URLs (mirrors, tried in order) and its md5, if published."""

    filename: str
    urls: tuple[str, ...]
    md5: str | None
    note: str = ""
    members: tuple[ArchiveMember, ...] = ()

    def __post_init__(self) -> None:
        if not self.urls:
            raise ValueError(f"{self.filename}: at least one URL is required")
        for md5 in [self.md5, *(m.md5 for m in self.members)]:
            if md5 is not None and not _MD5.fullmatch(md5):
                raise ValueError(f"{self.filename}: md5 must be 32 lowercase hex digits, got {md5!r}")
        if self.md5 is None and not self.note:
            raise ValueError(f"{self.filename}: md5 is None, so note must say why (e.g. {NO_CHECKSUM!r})")


@dataclass(frozen=True)
class Source:
    """An upstream dataset: the files to download and where their URLs and checksums come from."""

    name: str
    description: str
    reference: str
    files: tuple[RemoteFile, ...]


def _mirrored(filename: str, mirrors: tuple[str, ...], md5: str) -> RemoteFile:
    return RemoteFile(filename, tuple(m + filename for m in mirrors), md5)


MNIST_MIRRORS = ("https://ossci-datasets.s3.amazonaws.com/mnist/", "http://yann.lecun.com/exdb/mnist/")
_LEAF = "LEAF data/*/preprocess/get_data.sh @ 09ec454 (paper-setups.md 6.1)"
_TORCHVISION = "torchvision dataset classes (paper-setups.md 6.4)"

SOURCES: MappingProxyType[str, Source] = MappingProxyType({s.name: s for s in (
    Source("mnist", "MNIST handwritten digits, idx format", _TORCHVISION, (
        _mirrored("train-images-idx3-ubyte.gz", MNIST_MIRRORS, "f68b3c2dcbeaaa9fbdd348bbdeb94873"),
        _mirrored("train-labels-idx1-ubyte.gz", MNIST_MIRRORS, "d53e105ee54ea40749a09fcbcd1e9432"),
        _mirrored("t10k-images-idx3-ubyte.gz", MNIST_MIRRORS, "9fb629c4189551a2d022fa330f9573f3"),
        _mirrored("t10k-labels-idx1-ubyte.gz", MNIST_MIRRORS, "ec29112dd5afa0611ce80d1b7f02629c"),
    )),
    Source("emnist", "EMNIST, all splits as gzipped idx files in one zip", _TORCHVISION, (
        RemoteFile("gzip.zip", (
            "https://biometrics.nist.gov/cs_links/EMNIST/gzip.zip",
            "https://www.itl.nist.gov/iaui/vip/cs_links/EMNIST/gzip.zip",  # older torchvision, same md5
        ), "58c8d27c78d21e728a6bc7b3cc06412e"),
    )),
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
    )),
    Source("femnist", "NIST Special Database 19 (128x128 PNG), LEAF's FEMNIST source", _LEAF, (
        RemoteFile("by_class.zip", ("https://s3.amazonaws.com/nist-srd/SD19/by_class.zip",), None, NO_CHECKSUM),
        RemoteFile("by_write.zip", ("https://s3.amazonaws.com/nist-srd/SD19/by_write.zip",), None, NO_CHECKSUM),
    )),
    Source("shakespeare", "Complete Works of Shakespeare, Project Gutenberg #100 (1994 file)", _LEAF, (
        RemoteFile("1994-01-100.zip", ("http://www.gutenberg.org/files/100/old/1994-01-100.zip",), None,
                   f"{NO_CHECKSUM}; LEAF's parser relies on this edition's line offsets"),
    )),
    Source("sent140", "Sentiment140 tweets (training and test CSV)", _LEAF, (
        RemoteFile("trainingandtestdata.zip", ("http://cs.stanford.edu/people/alecmgo/trainingandtestdata.zip",),
                   None, NO_CHECKSUM),
    )),
    Source("glove", "GloVe 6B word vectors (50d used by Simplicial-FL, 300d by FedProx)", _LEAF, (
        RemoteFile("glove.6B.zip", ("http://nlp.stanford.edu/data/glove.6B.zip",), None, NO_CHECKSUM),
    )),
)})


def download_source(
    source: str | Source, root: str | os.PathLike, progress: bool = True, retries: int = 2
) -> Path:
    """Fetch every file of ``source`` (a name in SOURCES, or a Source) into ``root/raw/<name>/``.

    Each file's mirrors are tried in order; files already present with the right md5 are not fetched
    again. Returns the folder. Raises DownloadError listing every URL tried and why it failed.
    """
    if isinstance(source, str):
        if source not in SOURCES:
            raise KeyError(f"unknown source {source!r}; allowed: {sorted(SOURCES)}")
        source = SOURCES[source]
    folder = Path(root) / "raw" / source.name
    for remote in source.files:
        failures = []
        for url in remote.urls:
            try:
                fetch(url, folder / remote.filename, md5=remote.md5, retries=retries, progress=progress)
                break
            except DownloadError as e:
                failures.append(f"  {url}: {e}")
        else:
            raise DownloadError(f"could not fetch {remote.filename} of {source.name!r} from any mirror:\n"
                                + "\n".join(failures))
    return folder


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
        gzipped = f.read(2) == b"\x1f\x8b"
    with (gzip.open(path, "rb") if gzipped else open(path, "rb")) as f:
        raw = f.read()
    if len(raw) < 4 or raw[0] != 0 or raw[1] != 0 or raw[2] not in _IDX_DTYPES:
        raise ValueError(f"{path}: not an idx file (magic bytes {raw[:4].hex()}; expected 0000 followed by "
                         f"a type byte in {[hex(t) for t in _IDX_DTYPES]} and a dimension count)")
    dtype, ndim = np.dtype(_IDX_DTYPES[raw[2]]), raw[3]
    header = 4 + 4 * ndim
    if len(raw) < header:
        raise ValueError(f"{path}: truncated idx header ({len(raw)} bytes, {ndim} dimensions need {header})")
    shape = tuple(int(d) for d in np.frombuffer(raw, ">u4", count=ndim, offset=4))
    expected = math.prod(shape) * dtype.itemsize
    if len(raw) - header != expected:
        raise ValueError(f"{path}: idx header says shape {shape} ({expected} data bytes) "
                         f"but the file has {len(raw) - header}")
    return np.frombuffer(raw, dtype, offset=header).reshape(shape).astype(dtype.newbyteorder("="))
