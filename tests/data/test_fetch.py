"""`fedbench data fetch` against a loopback server: resume, corrupt files, offline, files put there by hand."""

from __future__ import annotations

import dataclasses
import gzip
import hashlib
from types import MappingProxyType

import pytest

from fedbench.data import download, sources
from fedbench.data.cli import main as data_main
from fedbench.data.download import DownloadError, part_path
from fedbench.data.sources import download_source, raw_folder, verify_raw
from tests.data import fixtures
from tests.data.loopback import loopback

FILES = fixtures.mnist_like()
BIG = "train-images-idx3-ubyte.gz"
PATH = f"/mnist/{BIG}"


def md5(data: bytes) -> str:
    return hashlib.md5(data).hexdigest()


@pytest.fixture
def server(monkeypatch):
    with loopback() as state:
        state.serve_at_upstream_paths({r.urls[0]: FILES[r.filename] for r in sources.SOURCES["mnist"].files})
        monkeypatch.setenv("FEDBENCH_MIRROR", state.base_url)
        monkeypatch.setattr(download, "RETRY_DELAY_S", 0.0)
        mnist = sources.SOURCES["mnist"]
        fixed = dataclasses.replace(mnist, files=tuple(dataclasses.replace(r, md5=md5(FILES[r.filename]))
                                                        for r in mnist.files))
        monkeypatch.setattr(sources, "SOURCES", MappingProxyType({**sources.SOURCES, "mnist": fixed}))
        yield state


def test_interrupted_download_resumes_and_never_looks_complete(server, tmp_path):
    server.faults[PATH] = ["cut"]
    dest = raw_folder("mnist", tmp_path) / BIG
    remote = sources.SOURCES["mnist"].files[0]
    with pytest.raises(DownloadError, match=r"IncompleteRead.*bytes kept in .*\.train-images-idx3-ubyte\.gz\.part"):
        download.fetch(server.base_url + PATH, dest, md5=remote.md5, retries=0, progress=False)
    assert not dest.exists() and part_path(dest).stat().st_size == len(FILES[BIG]) // 2
    download_source("mnist", tmp_path, progress=False)  # the next fetch asks for the missing bytes only
    assert dest.read_bytes() == FILES[BIG] and not part_path(dest).exists()
    assert server.ranges == [(PATH, len(FILES[BIG]) // 2)]
    assert verify_raw("mnist", dest.parent)["files"][0]["checksum"] == "published md5 matched"


def test_cut_connection_is_retried_from_where_it_stopped(server, tmp_path):
    server.faults[PATH] = ["cut"]
    folder = download_source("mnist", tmp_path, progress=False)
    assert (folder / BIG).read_bytes() == FILES[BIG] and server.hits[PATH] == 2
    assert server.ranges == [(PATH, len(FILES[BIG]) // 2)]


def test_corrupt_download_and_corrupt_file_are_fetched_again(server, tmp_path, capsys):
    server.faults[PATH] = ["corrupt"]
    folder = download_source("mnist", tmp_path, progress=False)
    assert (folder / BIG).read_bytes() == FILES[BIG] and server.hits[PATH] == 2
    (folder / BIG).write_bytes(FILES[BIG][:-5])  # damaged afterwards: 3 of the trailer's 8 bytes left
    capsys.readouterr()
    download_source("mnist", tmp_path, progress=False)
    assert (folder / BIG).read_bytes() == FILES[BIG] and server.hits[PATH] == 3
    contents = len(gzip.decompress(FILES[BIG]))  # all of it decompresses; the stream's trailer is cut
    assert capsys.readouterr().err == (f"fedbench: {folder / BIG}: truncated gzip file (its {len(FILES[BIG]) - 5:,} "
                                       f"bytes decompress to {contents:,} bytes, and the gzip stream ends unfinished); "
                                       "fetching it again\n")


def test_offline_fails_in_one_line_and_a_file_put_by_hand_is_verified_and_used(server, tmp_path, monkeypatch,
                                                                                capsys):
    monkeypatch.setenv("FEDBENCH_MIRROR", "http://127.0.0.1:9")  # nothing listens there
    dest = raw_folder("mnist", tmp_path) / BIG
    code = data_main(["--root", str(tmp_path), "fetch", "mnist", "--quiet"])
    err = capsys.readouterr().err.strip()
    assert code == 1 and "\n" not in err
    assert err.startswith("fedbench data fetch: could not fetch train-images-idx3-ubyte.gz of 'mnist' from 2 URL(s) "
                          "(http://127.0.0.1:9/mnist/train-images-idx3-ubyte.gz: ")
    assert f"expected md5 {md5(FILES[BIG])}; put a copy fetched by hand at {dest} and rerun" in err
    for name, data in FILES.items():  # fetched by hand and put where the message says
        (dest.parent / name).write_bytes(data)
    assert data_main(["--root", str(tmp_path), "fetch", "mnist", "--quiet"]) == 0
    assert sum(server.hits.values()) == 0
    (dest.parent / BIG).write_bytes(b"<html>not the file</html>")  # a wrong file put by hand
    assert data_main(["--root", str(tmp_path), "fetch", "mnist", "--quiet"]) == 1
    assert not (dest.parent / BIG).exists()  # removed, never used


def test_offline_fetch_of_a_file_with_no_published_checksum_says_so(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("FEDBENCH_MIRROR", "http://127.0.0.1:9")  # nothing listens there
    assert data_main(["--root", str(tmp_path), "fetch", "shakespeare", "--quiet"]) == 1
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "expected no published" not in err
    assert ("; it has no published checksum (the first copy's is recorded); put a copy fetched by hand at "
            f"{raw_folder('shakespeare', tmp_path) / '1994-01-100.zip'} and rerun") in err


def test_unpublished_checksum_is_recorded_at_first_fetch_then_enforced(tmp_path, monkeypatch):
    files, _ = fixtures.gutenberg()
    name = "1994-01-100.zip"
    with loopback() as state:
        state.serve_at_upstream_paths({sources.SOURCES["shakespeare"].files[0].urls[0]: files[name]})
        monkeypatch.setenv("FEDBENCH_MIRROR", state.base_url)
        folder = download_source("shakespeare", tmp_path, progress=False)
        record = verify_raw("shakespeare", folder)["files"][0]
        assert record["checksum"] == "recorded checksum matched (no published checksum)"
        assert record["sha256"] == hashlib.sha256(files[name]).hexdigest()
        (folder / name).write_bytes(files[name] + b"x")
        with pytest.raises(sources.ChecksumError, match=r"1994-01-100.zip: sha256 .*, expected .* \(recorded"):
            verify_raw("shakespeare", folder)
        download_source("shakespeare", tmp_path, progress=False)  # refetched: it no longer matches the record
        assert (folder / name).read_bytes() == files[name] and state.hits["/files/100/old/1994-01-100.zip"] == 2
