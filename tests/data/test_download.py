"""fedbench.data.download and sources against a real HTTP server on 127.0.0.1 serving tiny upstream-format files."""

from __future__ import annotations

import gzip
import hashlib
import io
import struct
import tarfile
import threading
import zipfile
from collections import Counter
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import pytest

from fedbench.data import download
from fedbench.data.download import ChecksumError, DownloadError, extract, fetch, file_checksum
from fedbench.data.sources import SOURCES, RemoteFile, Source, download_source, read_idx

# Two 2x3 uint8 images and their labels, in MNIST's idx layout (magic 2051 images, 2049 labels).
IMAGES = np.array([[[0, 1, 2], [3, 4, 255]], [[10, 20, 30], [40, 50, 60]]], dtype=np.uint8)
LABELS = np.array([7, 2], dtype=np.uint8)
IDX3 = struct.pack(">IIII", 2051, 2, 2, 3) + IMAGES.tobytes()
IDX1 = struct.pack(">II", 2049, 2) + LABELS.tobytes()
IDX3_GZ = gzip.compress(IDX3, mtime=0)
IDX1_GZ = gzip.compress(IDX1, mtime=0)


def _zip(members: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as z:
        for name, data in members.items():
            z.writestr(name, data)
    return buffer.getvalue()


TINY_ZIP = _zip({"gzip/a.txt": b"alpha\n", "gzip/sub/b.bin": bytes(range(5))})
FILES = {
    "/mnist/train-images-idx3-ubyte.gz": IDX3_GZ,
    "/mnist/train-labels-idx1-ubyte.gz": IDX1_GZ,
    "/emnist/gzip.zip": TINY_ZIP,
}


def md5(data: bytes) -> str:
    return hashlib.md5(data).hexdigest()


@dataclass
class ServerState:
    """What the server serves, how often each path was requested, and one-off faults per path."""

    base_url: str = ""
    files: dict[str, bytes] = field(default_factory=dict)
    hits: Counter = field(default_factory=Counter)
    faults: dict[str, list[str]] = field(default_factory=dict)


def _handler(state: ServerState) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            state.hits[self.path] += 1
            body = state.files.get(self.path)
            fault = state.faults.get(self.path, []).pop(0) if state.faults.get(self.path) else None
            if body is None or fault == "500":
                self.send_error(404 if body is None else 500)
                return
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body[: len(body) // 2] if fault == "truncate" else body)

        def log_message(self, *args) -> None:
            pass

    return Handler


@pytest.fixture(scope="module")
def _server():
    state = ServerState()
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(state))
    state.base_url = f"http://127.0.0.1:{httpd.server_address[1]}"
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True)
    thread.start()
    yield state
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture
def server(_server, monkeypatch):
    _server.files = dict(FILES)
    _server.hits.clear()
    _server.faults.clear()
    monkeypatch.setattr(download, "RETRY_DELAY_S", 0.0)
    return _server


def test_fetch_checks_md5_and_leaves_only_dest(server, tmp_path):
    dest = tmp_path / "raw" / "train-images-idx3-ubyte.gz"
    got = fetch(server.base_url + "/mnist/train-images-idx3-ubyte.gz", dest, md5=md5(IDX3_GZ), progress=True)
    assert got == dest
    assert dest.read_bytes() == IDX3_GZ
    assert server.hits["/mnist/train-images-idx3-ubyte.gz"] == 1
    assert [p.name for p in dest.parent.iterdir()] == [dest.name]


def test_cached_file_not_fetched_again(server, tmp_path):
    url, dest = server.base_url + "/mnist/train-labels-idx1-ubyte.gz", tmp_path / "labels.gz"
    for _ in range(3):
        fetch(url, dest, md5=md5(IDX1_GZ), progress=False)
    fetch(url, dest, progress=False)  # no checksum given: the existing (atomically written) file is kept
    assert server.hits["/mnist/train-labels-idx1-ubyte.gz"] == 1
    assert dest.read_bytes() == IDX1_GZ


def test_corrupt_existing_file_is_refetched(server, tmp_path, caplog):
    dest = tmp_path / "labels.gz"
    dest.write_bytes(IDX1_GZ[:-3])  # a truncated copy, as an interrupted non-atomic copy would leave
    fetch(server.base_url + "/mnist/train-labels-idx1-ubyte.gz", dest, md5=md5(IDX1_GZ), progress=False)
    assert dest.read_bytes() == IDX1_GZ
    assert server.hits["/mnist/train-labels-idx1-ubyte.gz"] == 1
    assert f"{dest} is corrupt (md5 {md5(IDX1_GZ[:-3])}, expected {md5(IDX1_GZ)})" in caplog.text


def test_wrong_bytes_raise_and_leave_nothing(server, tmp_path):
    server.files["/mnist/train-images-idx3-ubyte.gz"] = b"<html>mirror moved</html>"
    url, dest = server.base_url + "/mnist/train-images-idx3-ubyte.gz", tmp_path / "images.gz"
    with pytest.raises(ChecksumError) as info:
        fetch(url, dest, md5=md5(IDX3_GZ), retries=2, progress=False)
    message = str(info.value)
    assert message.startswith(f"{url}: checksum mismatch after 3 attempt(s): ")
    assert f"md5 expected {md5(IDX3_GZ)}, got {md5(b'<html>mirror moved</html>')}" in message
    assert server.hits["/mnist/train-images-idx3-ubyte.gz"] == 3
    assert list(tmp_path.iterdir()) == []


def test_sha256_checked_too(server, tmp_path):
    url = server.base_url + "/emnist/gzip.zip"
    sha = hashlib.sha256(TINY_ZIP).hexdigest()
    fetch(url, tmp_path / "ok.zip", md5=md5(TINY_ZIP), sha256=sha.upper(), progress=False)
    assert (tmp_path / "ok.zip").read_bytes() == TINY_ZIP
    with pytest.raises(ChecksumError, match=f"sha256 expected {'0' * 64}, got {sha}"):
        fetch(url, tmp_path / "bad.zip", md5=md5(TINY_ZIP), sha256="0" * 64, retries=0, progress=False)
    with pytest.raises(ValueError, match="md5 must be 32 hex digits, got 'abc'"):
        fetch(url, tmp_path / "x.zip", md5="abc")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ok.zip"]


def test_transient_errors_retried_404_not(server, tmp_path):
    path = "/mnist/train-labels-idx1-ubyte.gz"
    server.faults[path] = ["500", "truncate"]
    fetch(server.base_url + path, tmp_path / "labels.gz", md5=md5(IDX1_GZ), retries=2, progress=False)
    assert server.hits[path] == 3
    assert (tmp_path / "labels.gz").read_bytes() == IDX1_GZ
    server.faults[path] = ["500", "500"]
    with pytest.raises(DownloadError, match=r"HTTPError: HTTP Error 500.*\(attempt 2 of 2\)"):
        fetch(server.base_url + path, tmp_path / "again.gz", retries=1, progress=False)
    with pytest.raises(DownloadError, match=r"/nope\.gz: HTTP 404 Not Found; nothing was written"):
        fetch(server.base_url + "/nope.gz", tmp_path / "nope.gz", retries=2, progress=False)
    assert server.hits["/nope.gz"] == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["labels.gz"]


def _tiny_mnist(base_url: str, mirrors: tuple[str, ...]) -> Source:
    return Source("tiny_mnist", "two MNIST-format images", "this test", tuple(
        RemoteFile(name, tuple(f"{base_url}/{m}/{name}" for m in mirrors), md5(data))
        for name, data in (("train-images-idx3-ubyte.gz", IDX3_GZ), ("train-labels-idx1-ubyte.gz", IDX1_GZ))
    ))


def test_mirror_fallback_and_read_idx(server, tmp_path):
    folder = download_source(_tiny_mnist(server.base_url, ("dead", "mnist")), tmp_path, progress=False)
    assert folder == tmp_path / "raw" / "tiny_mnist"
    assert server.hits == Counter({
        "/dead/train-images-idx3-ubyte.gz": 1, "/mnist/train-images-idx3-ubyte.gz": 1,
        "/dead/train-labels-idx1-ubyte.gz": 1, "/mnist/train-labels-idx1-ubyte.gz": 1,
    })
    images, labels = read_idx(folder / "train-images-idx3-ubyte.gz"), read_idx(folder / "train-labels-idx1-ubyte.gz")
    assert images.dtype == np.uint8 and images.shape == (2, 2, 3)
    np.testing.assert_array_equal(images, IMAGES)
    assert labels.tolist() == [7, 2]
    download_source(_tiny_mnist(server.base_url, ("dead", "mnist")), tmp_path, progress=False)
    assert sum(server.hits.values()) == 4  # both files cached


def test_all_mirrors_failing_is_one_line_naming_urls_checksum_and_where_to_put_the_file(server, tmp_path):
    with pytest.raises(DownloadError) as info:
        download_source(_tiny_mnist(server.base_url, ("dead", "gone")), tmp_path, progress=False)
    message = str(info.value)
    dest = tmp_path / "raw" / "tiny_mnist" / "train-images-idx3-ubyte.gz"
    assert "\n" not in message
    assert message.startswith("could not fetch train-images-idx3-ubyte.gz of 'tiny_mnist' from 2 URL(s) (")
    assert f"{server.base_url}/dead/train-images-idx3-ubyte.gz: HTTP 404 Not Found" in message
    assert f"{server.base_url}/gone/train-images-idx3-ubyte.gz: HTTP 404 Not Found" in message
    assert f"expected md5 {md5(IDX3_GZ)}; put a copy fetched by hand at {dest} and rerun" in message
    with pytest.raises(KeyError, match="unknown source 'mnsit'; allowed: .*'mnist'"):
        download_source("mnsit", tmp_path)


def test_read_idx_plain_and_errors(tmp_path):
    (tmp_path / "labels").write_bytes(IDX1)
    assert read_idx(tmp_path / "labels").tolist() == [7, 2]
    floats = struct.pack(">BBBBI", 0, 0, 0x0D, 1, 2) + np.array([1.5, -2.0], ">f4").tobytes()
    (tmp_path / "floats").write_bytes(floats)
    got = read_idx(tmp_path / "floats")
    assert got.dtype == np.float32 and got.dtype.isnative and got.tolist() == [1.5, -2.0]
    (tmp_path / "short").write_bytes(IDX3[:-1])
    with pytest.raises(ValueError, match=r"header says shape \(2, 2, 3\) \(12 data bytes\) but the file has 11"):
        read_idx(tmp_path / "short")
    (tmp_path / "html").write_bytes(b"<html>")
    with pytest.raises(ValueError, match="not an idx file"):
        read_idx(tmp_path / "html")


def test_extract_served_zip(server, tmp_path):
    archive = fetch(server.base_url + "/emnist/gzip.zip", tmp_path / "gzip.zip", md5=md5(TINY_ZIP), progress=False)
    out = extract(archive, tmp_path / "emnist")
    assert (out / "gzip" / "a.txt").read_bytes() == b"alpha\n"
    assert (out / "gzip" / "sub" / "b.bin").read_bytes() == bytes(range(5))
    (out / "stale.txt").write_text("from an older archive")
    extract(archive, out)  # replaces the folder as a whole
    assert sorted(str(p.relative_to(out)) for p in out.rglob("*")) == [
        "gzip", "gzip/a.txt", "gzip/sub", "gzip/sub/b.bin"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["emnist", "gzip.zip"]


def test_extract_tar_gz_and_gz(tmp_path):
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as t:
        info = tarfile.TarInfo("cifar-10-batches-py/data_batch_1")
        info.size = 3
        t.addfile(info, io.BytesIO(b"abc"))
    (tmp_path / "c.tar.gz").write_bytes(buffer.getvalue())
    out = extract(tmp_path / "c.tar.gz", tmp_path / "cifar")
    assert (out / "cifar-10-batches-py" / "data_batch_1").read_bytes() == b"abc"
    assert file_checksum(out / "cifar-10-batches-py" / "data_batch_1") == md5(b"abc")
    (tmp_path / "train-images-idx3-ubyte.gz").write_bytes(IDX3_GZ)
    out = extract(tmp_path / "train-images-idx3-ubyte.gz", tmp_path / "plain")
    assert [p.name for p in out.iterdir()] == ["train-images-idx3-ubyte"]
    np.testing.assert_array_equal(read_idx(out / "train-images-idx3-ubyte"), IMAGES)


def test_extract_refuses_path_traversal_and_links(tmp_path):
    (tmp_path / "evil.zip").write_bytes(_zip({"ok.txt": b"1", "../escaped.txt": b"2"}))
    with pytest.raises(ValueError, match=r"member '\.\./escaped\.txt' would be written outside"):
        extract(tmp_path / "evil.zip", tmp_path / "out")
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as t:
        link = tarfile.TarInfo("innocent")
        link.type, link.linkname = tarfile.SYMTYPE, "/etc/passwd"
        t.addfile(link)
    (tmp_path / "link.tar").write_bytes(buffer.getvalue())
    with pytest.raises(ValueError, match="member 'innocent' is a link or special file"):
        extract(tmp_path / "link.tar", tmp_path / "out")
    with pytest.raises(ValueError, match=r"unsupported archive type; allowed: \.zip"):
        extract(tmp_path / "data.rar", tmp_path / "out")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["evil.zip", "link.tar"]


def test_registry_matches_paper_setups():
    mnist = SOURCES["mnist"].files
    assert [(f.filename, f.md5) for f in mnist] == [
        ("train-images-idx3-ubyte.gz", "f68b3c2dcbeaaa9fbdd348bbdeb94873"),
        ("train-labels-idx1-ubyte.gz", "d53e105ee54ea40749a09fcbcd1e9432"),
        ("t10k-images-idx3-ubyte.gz", "9fb629c4189551a2d022fa330f9573f3"),
        ("t10k-labels-idx1-ubyte.gz", "ec29112dd5afa0611ce80d1b7f02629c"),
    ]
    assert mnist[0].urls == ("https://ossci-datasets.s3.amazonaws.com/mnist/train-images-idx3-ubyte.gz",
                             "http://yann.lecun.com/exdb/mnist/train-images-idx3-ubyte.gz")
    assert SOURCES["emnist"].files[0].md5 == "58c8d27c78d21e728a6bc7b3cc06412e"
    cifar = SOURCES["cifar10"].files[0]
    assert cifar.md5 == "c58f30108f718f92721af3b95e74349a" and len(cifar.members) == 7
    assert cifar.members[5].path == "cifar-10-batches-py/test_batch"
    assert cifar.members[5].md5 == "40351d587109b95175f43aff81a1287e"
    unverified = [f.filename for s in SOURCES.values() for f in s.files if f.md5 is None]
    assert unverified == ["by_class.zip", "by_write.zip", "1994-01-100.zip", "trainingandtestdata.zip",
                          "glove.6B.zip"]
    assert all("no published checksum" in f.note for s in SOURCES.values() for f in s.files if f.md5 is None)
    with pytest.raises(ValueError, match="md5 is None, so note must say why"):
        RemoteFile("x.zip", ("http://example.invalid/x.zip",), None)
