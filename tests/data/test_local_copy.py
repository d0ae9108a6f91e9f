"""Local copies as a source (issue 22): a system package's copy or a --raw folder, recompressed, verified by the
md5 of its decompressed contents; corrupt, truncated, non-gzip and partly installed copies refused in one line;
offline with neither, one line saying what to install; the pipeline's unavailable marker passed on.

Tiny fixtures only: MNIST-shaped idx files of a few hundred bytes stand in for Fashion-MNIST's four files (the
source's published and contents md5s are replaced by theirs), and FEDBENCH_SYSTEM_DATASETS points the system
package folder at a temp folder."""

from __future__ import annotations

import dataclasses
import gzip
import hashlib
import io
import json
import zlib
from types import MappingProxyType

import numpy as np
import pytest

from fedbench.data import availability, sources, stages
from fedbench.data.cli import main as data_main
from fedbench.data.format import read_meta
from fedbench.data.sources import CONTENTS_MATCHED, raw_folder, verify_raw
from tests.data import fixtures
from tests.data.loopback import loopback

UPSTREAM = fixtures.mnist_like(per_class_train=12, per_class_test=3)  # gzip with mtime 0: "the published files"
CONTENTS = {name: gzip.decompress(data) for name, data in UPSTREAM.items()}
IMAGES, LABELS = "train-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"


def md5(data: bytes) -> str:
    return hashlib.md5(data).hexdigest()


def recompressed(contents: bytes) -> bytes:
    """What Debian ships: the same contents, other gzip bytes (level and header time differ)."""
    return gzip.compress(contents, compresslevel=1, mtime=1591315200)


@pytest.fixture
def system(tmp_path, monkeypatch):
    """fashion_mnist with the fixtures' checksums, the system datasets folder in tmp_path/system (empty: no
    package installed) and every download pointed at a port where nothing listens (offline)."""
    fashion = sources.SOURCES["fashion_mnist"]
    fixed = dataclasses.replace(fashion, files=tuple(
        dataclasses.replace(r, md5=md5(UPSTREAM[r.filename]), contents_md5=md5(CONTENTS[r.filename]),
                            contents_bytes=len(CONTENTS[r.filename])) for r in fashion.files))
    monkeypatch.setattr(sources, "SOURCES", MappingProxyType({**sources.SOURCES, "fashion_mnist": fixed}))
    monkeypatch.setenv(sources.SYSTEM_DATASETS_ENV, str(tmp_path / "system"))
    monkeypatch.setenv("FEDBENCH_MIRROR", "http://127.0.0.1:9")
    monkeypatch.setattr(sources, "_package_version", lambda package: "0.0~test-1")
    return tmp_path / "system" / "fashion-mnist"


def install(folder, files=None) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for name, data in (files if files is not None else {n: recompressed(c) for n, c in CONTENTS.items()}).items():
        (folder / name).write_bytes(data)


def fetch_err(root, capsys, *extra: str) -> tuple[int, str]:
    code = data_main(["--root", str(root), "fetch", "fashion_mnist", "--quiet", *extra])
    return code, capsys.readouterr().err.strip()


def test_recompressed_system_copy_is_verified_by_its_contents_and_used_offline(system, tmp_path, capsys):
    install(system)
    assert md5((system / IMAGES).read_bytes()) != md5(UPSTREAM[IMAGES])  # the compressed bytes differ
    root = tmp_path / "data"
    assert data_main(["--root", str(root), "fetch", "fashion_mnist", "--quiet"]) == 0
    assert "(from Debian package dataset-fashion-mnist 0.0~test-1, verified)" in capsys.readouterr().out
    folder = raw_folder("fashion_mnist", root)
    record = json.loads((folder / sources.CHECKSUMS).read_text())[IMAGES]
    assert record == {"md5": md5(recompressed(CONTENTS[IMAGES])), "bytes": len(recompressed(CONTENTS[IMAGES])),
                      "sha256": hashlib.sha256(recompressed(CONTENTS[IMAGES])).hexdigest(),
                      "contents_md5": md5(CONTENTS[IMAGES]), "contents_bytes": len(CONTENTS[IMAGES]),
                      "checksum": CONTENTS_MATCHED, "url": (system / IMAGES).as_uri(),
                      "copy": "Debian package dataset-fashion-mnist 0.0~test-1"}
    provenance = verify_raw("fashion_mnist", folder)
    assert provenance["verified"] is True
    assert {f["checksum"] for f in provenance["files"]} == {CONTENTS_MATCHED}
    assert {f["copy"] for f in provenance["files"]} == {"Debian package dataset-fashion-mnist 0.0~test-1"}
    before = {p.name: p.stat().st_mtime_ns for p in folder.iterdir()}
    stages.fetch("fashion_mnist", root, progress=False)  # present and verified: nothing copied again
    assert {p.name: p.stat().st_mtime_ns for p in folder.iterdir()} == before
    stages.prepare_source("fashion_mnist", root)
    assert stages.Prepared(root)("fashion_mnist").verified


def test_upstream_bytes_in_a_local_copy_match_the_published_md5(system, tmp_path):
    install(system, UPSTREAM)
    folder = stages.fetch("fashion_mnist", tmp_path / "data", progress=False)
    assert {f["checksum"] for f in verify_raw("fashion_mnist", folder)["files"]} == {"published md5 matched"}


def test_a_folder_given_with_raw_is_a_local_copy_too(system, tmp_path, capsys):
    mine = tmp_path / "mine"
    install(mine)
    root = tmp_path / "data"
    assert data_main(["--root", str(root), "fetch", "fashion_mnist", "--quiet", "--raw", str(mine)]) == 0
    files = verify_raw("fashion_mnist", raw_folder("fashion_mnist", root))["files"]
    assert {f["copy"] for f in files} == {f"folder given with --raw: {mine.resolve()}"}
    # prepared straight from the folder, without --no-verify: verified by contents, the folder named
    pool_folder = stages.prepare_source("fashion_mnist", tmp_path / "other", raw=mine)
    meta = json.loads((pool_folder / "meta.json").read_text())["provenance"]["sources"][0]
    assert meta["verified"] is True and {f["copy"] for f in meta["files"]} == {f"files in {mine.resolve()}"}
    assert {f["checksum"] for f in meta["files"]} == {CONTENTS_MATCHED}
    (mine / LABELS).write_bytes(recompressed(CONTENTS[LABELS][:-1] + b"\x07"))
    with pytest.raises(sources.ChecksumError, match=f"{LABELS}: decompressed contents md5 "):
        stages.prepare_source("fashion_mnist", tmp_path / "other", raw=mine)


def test_contents_that_differ_are_refused_naming_the_file_both_digests_and_the_fix(system, tmp_path, capsys):
    bad = CONTENTS[IMAGES][:-1] + bytes([CONTENTS[IMAGES][-1] ^ 1])
    install(system)
    (system / IMAGES).write_bytes(recompressed(bad))
    code, err = fetch_err(tmp_path / "data", capsys)
    assert code == 1 and "\n" not in err
    assert err == (f"fedbench data fetch: {system / IMAGES}: decompressed contents md5 {md5(bad)} "
                   f"({len(bad):,} bytes), expected {md5(CONTENTS[IMAGES])} ({len(CONTENTS[IMAGES]):,} bytes, the "
                   "upstream contents); reinstall it (apt-get install --reinstall dataset-fashion-mnist) or fetch "
                   "the download instead (fedbench data fetch fashion_mnist --download)")
    assert not raw_folder("fashion_mnist", tmp_path / "data").exists()  # nothing half-written


@pytest.mark.parametrize("damage, message", [
    (lambda data: data[:len(data) // 2], "truncated gzip file (its "),
    (lambda data: b"<html>404 Not Found</html>", "not a gzip file (first bytes 3c68, expected 1f8b)"),
    (lambda data: b"", "not a gzip file (first bytes none: empty file, expected 1f8b)"),
])
def test_truncated_or_non_gzip_files_are_refused_in_one_line(system, tmp_path, capsys, damage, message):
    install(system)
    (system / IMAGES).write_bytes(damage(recompressed(CONTENTS[IMAGES])))
    code, err = fetch_err(tmp_path / "data", capsys)
    assert code == 1 and "\n" not in err
    assert err.startswith(f"fedbench data fetch: {system / IMAGES}: {message}")
    assert err.endswith("; reinstall it (apt-get install --reinstall dataset-fashion-mnist) or fetch the download "
                        "instead (fedbench data fetch fashion_mnist --download)")


def _labels_gz() -> tuple[bytes, bytes]:
    """A real gzip file the size of Fashion-MNIST's training labels (60,008 bytes decompressed: the idx header and
    60,000 labels in 0..9, drawn from a fixed seed), and its contents; about 29.5 kB, as Debian's 29,491 bytes."""
    rng = np.random.default_rng(0)
    contents = bytes.fromhex("000008010000ea60") + rng.integers(0, 10, 60_000, dtype=np.uint8).tobytes()
    return gzip.compress(contents, compresslevel=9, mtime=0), contents


def test_a_truncated_gzip_file_says_how_much_of_it_decompressed(tmp_path):
    """Issue 29.6: a file truncated to 20,000 of its 29,491 bytes was reported as ending "after 0 decompressed
    bytes" (gzip.open's read() raised and dropped what it had decompressed)."""
    whole, contents = _labels_gz()
    assert 29_000 < len(whole) < 30_000
    path = tmp_path / LABELS
    path.write_bytes(whole[:20_000])
    # what the first 20,000 bytes decompress to, from zlib in one call (it returns what it can of a cut stream)
    expected = len(zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(whole[:20_000]))
    assert 0 < expected < len(contents) and contents.startswith(gzip.GzipFile(fileobj=io.BytesIO(whole)).read(expected))
    with pytest.raises(sources.LocalCopyError) as info:
        sources.contents_digest(path)
    assert str(info.value) == (f"{path}: truncated gzip file (its 20,000 bytes decompress to {expected:,} bytes, and "
                               "the gzip stream ends unfinished)")
    path.write_bytes(whole)
    assert sources.contents_digest(path) == (md5(contents), 60_008)
    path.write_bytes(whole + gzip.compress(b"more", mtime=0) + bytes(8))  # two members, then zero padding
    assert sources.contents_digest(path) == (md5(contents + b"more"), 60_012)
    flipped = bytearray(whole)
    flipped[-8] ^= 1  # the trailer's CRC-32: every byte decompresses, the check fails
    path.write_bytes(bytes(flipped))
    with pytest.raises(sources.LocalCopyError) as info:
        sources.contents_digest(path)
    last = (len(whole) - 1) // sources.GZIP_CHUNK * sources.GZIP_CHUNK  # the last piece read holds the trailer
    assert str(info.value) == (f"{path}: corrupt gzip data (Error -3 while decompressing data: incorrect data check) "
                               f"in its bytes {last:,}-{len(whole):,} of {len(whole):,}, after "
                               f"{len(zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(whole[:last])):,} "
                               "decompressed bytes")


def test_a_truncated_fetched_file_is_named_and_fetched_again(system, tmp_path, capsys):
    """A file of data/raw cut short (a copy interrupted, a disk filled) is not the upstream one: the next fetch says
    which file, that it is truncated and how far it decompresses, and that it fetches it again, then does."""
    install(system)
    root = tmp_path / "data"
    folder = stages.fetch("fashion_mnist", root, progress=False)
    good = (folder / LABELS).read_bytes()
    (folder / LABELS).write_bytes(good[:len(good) // 2])
    capsys.readouterr()
    stages.fetch("fashion_mnist", root, progress=False)
    n = len(zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(good[:len(good) // 2]))
    assert capsys.readouterr().err == (
        f"fedbench: {folder / LABELS}: truncated gzip file (its {len(good) // 2:,} bytes decompress to {n:,} bytes, "
        "and the gzip stream ends unfinished); fetching it again from Debian package dataset-fashion-mnist "
        "0.0~test-1\n")
    assert (folder / LABELS).read_bytes() == good


def test_a_partly_installed_package_names_what_is_missing(system, tmp_path, capsys):
    install(system)
    (system / LABELS).unlink()
    (system / IMAGES).unlink()
    code, err = fetch_err(tmp_path / "data", capsys)
    assert code == 1 and "\n" not in err
    assert err.startswith(f"fedbench data fetch: {system}: Debian package dataset-fashion-mnist 0.0~test-1 lacks "
                          f"{IMAGES}, {LABELS} of 'fashion_mnist' (2 of 4 files present); reinstall it")


def test_offline_with_no_local_copy_says_what_to_install_and_leaves_nothing(system, tmp_path, capsys):
    code, err = fetch_err(tmp_path / "data", capsys)
    assert code == 1 and "\n" not in err
    assert err.startswith("fedbench data fetch: could not fetch train-images-idx3-ubyte.gz of 'fashion_mnist' from "
                          "1 URL(s) (http://127.0.0.1:9/train-images-idx3-ubyte.gz: ")
    assert err.endswith(f"; or install a local copy: apt-get install dataset-fashion-mnist (used from {system})")
    assert list(raw_folder("fashion_mnist", tmp_path / "data").iterdir()) == []  # no checksums.json holding {}


def test_download_is_used_when_no_local_copy_is_installed_and_with_download(system, tmp_path, monkeypatch):
    install(system, {n: b"not used" for n in CONTENTS})  # a broken package, bypassed by --download
    with loopback() as state:
        state.serve_at_upstream_paths({r.urls[0]: UPSTREAM[r.filename] for r in sources.SOURCES["fashion_mnist"].files})
        monkeypatch.setenv("FEDBENCH_MIRROR", state.base_url)
        assert data_main(["--root", str(tmp_path / "data"), "fetch", "fashion_mnist", "--quiet", "--download"]) == 0
        assert sum(state.hits.values()) == 4
    files = verify_raw("fashion_mnist", raw_folder("fashion_mnist", tmp_path / "data"))["files"]
    assert {f["checksum"] for f in files} == {"published md5 matched"} and not any("copy" in f for f in files)


def test_pipeline_records_an_unavailable_source_and_passes_it_on(system, tmp_path):
    root = tmp_path / "data"
    folder = stages.fetch("fashion_mnist", root, progress=False, pass_unavailable=True)
    line = ("fashion_mnist is not on this machine and could not be fetched; apt-get install dataset-fashion-mnist "
            "or `fedbench data fetch fashion_mnist` where 127.0.0.1:9 is reachable")
    assert (folder / availability.MARKER).read_text() == line + "\n"
    assert sorted(p.name for p in folder.iterdir()) == [availability.MARKER]
    with pytest.raises(FileNotFoundError, match="fashion_mnist is not on this machine"):
        stages.prepare_source("fashion_mnist", root)  # by hand: an error, not a marker
    prepared = stages.prepare_source("fashion_mnist", root, pass_unavailable=True)
    assert sorted(p.name for p in prepared.iterdir()) == [availability.MARKER]
    real = stages.partition("fashion_mnist_fedproxvr", root, pass_unavailable=True)
    assert sorted(p.name for p in real.iterdir()) == [availability.MARKER]
    assert availability.variant_unavailable(root, "fashion_mnist_fedproxvr") == line
    with pytest.raises(FileNotFoundError, match="is not a complete fedbench dataset"):
        read_meta(real)  # nothing there looks like data
    stages.report(["fashion_mnist_fedproxvr"], root, tmp_path / "reports")
    assert f"- `fashion_mnist_fedproxvr`: {line}" in (tmp_path / "reports" / "README.md").read_text()
    install(system)  # the package installed afterwards: the next run of the stages builds the variant
    stages.fetch("fashion_mnist", root, progress=False, pass_unavailable=True)
    assert not (folder / availability.MARKER).exists()
    stages.prepare_source("fashion_mnist", root, pass_unavailable=True)
    assert availability.variant_unavailable(root, "fashion_mnist_fedproxvr") == line  # until it is rebuilt
    small = {"num_clients": 10, "phase1_per_label": 1, "tf_validation_size": 0}  # 150 tiny images, not 65,000
    stages.partition("fashion_mnist_fedproxvr", root, small, pass_unavailable=True)
    assert availability.variant_unavailable(root, "fashion_mnist_fedproxvr") is None
    assert read_meta(real)["source"]["verified"] is True and not (real / availability.MARKER).exists()


def test_a_corrupt_local_copy_fails_the_pipeline_stage(system, tmp_path):
    install(system)
    (system / IMAGES).write_bytes(b"\x1f\x8b truncated")
    with pytest.raises(sources.LocalCopyError, match="corrupt gzip data|truncated gzip file"):
        stages.fetch("fashion_mnist", tmp_path / "data", progress=False, pass_unavailable=True)


def test_fashion_mnist_contents_digests_are_those_measured_on_debians_package():
    contents = {r.filename: (r.contents_md5, r.contents_bytes) for r in sources.SOURCES["fashion_mnist"].files}
    assert contents == {
        "train-images-idx3-ubyte.gz": ("f4a8712d7a061bf5bd6d2ca38dc4d50a", 47_040_016),
        "train-labels-idx1-ubyte.gz": ("9018921c3c673c538a1fc5bad174d6f9", 60_008),
        "t10k-images-idx3-ubyte.gz": ("8181f5470baa50b63fa0f6fddb340f0a", 7_840_016),
        "t10k-labels-idx1-ubyte.gz": ("15d484375f8d13e6eb1aabb0c3f46965", 10_008),
    }
    idx = 16 + 60_000 * 28 * 28  # the idx header (magic, count, rows, cols) and the pixels
    assert contents["train-images-idx3-ubyte.gz"][1] == idx and contents["train-labels-idx1-ubyte.gz"][1] == 8 + 60_000


def test_prepare_reads_an_installed_package_in_place_when_nothing_was_fetched(system, tmp_path):
    root = tmp_path / "data"
    with pytest.raises(FileNotFoundError, match="missing raw file of 'fashion_mnist'"):
        stages.prepare_source("fashion_mnist", root)  # no package, nothing fetched
    install(system)
    out = stages.prepare_source("fashion_mnist", root)
    meta = json.loads((out / "meta.json").read_text())["provenance"]["sources"][0]
    assert meta["verified"] is True and {f["checksum"] for f in meta["files"]} == {CONTENTS_MATCHED}
    assert {f["copy"] for f in meta["files"]} == {f"Debian package dataset-fashion-mnist 0.0~test-1 ({system})"}
    assert not raw_folder("fashion_mnist", root).exists()  # read where the package put it


def test_a_recompressed_file_put_by_hand_in_the_raw_folder_is_verified_by_contents(system, tmp_path):
    folder = raw_folder("fashion_mnist", tmp_path / "data")
    install(folder)  # no package, offline: the hand-put copies are all there is
    stages.fetch("fashion_mnist", tmp_path / "data", progress=False)
    files = verify_raw("fashion_mnist", folder)["files"]
    assert {f["checksum"] for f in files} == {CONTENTS_MATCHED}
    assert {f["copy"] for f in files} == {f"put by hand at {folder / n}" for n in CONTENTS}
    (folder / LABELS).write_bytes(recompressed(CONTENTS[LABELS] + b"\x00"))  # other contents: refetched, offline
    (folder / sources.CHECKSUMS).unlink()
    with pytest.raises(sources.Unavailable, match=f"could not fetch {LABELS}"):
        stages.fetch("fashion_mnist", tmp_path / "data", progress=False)
