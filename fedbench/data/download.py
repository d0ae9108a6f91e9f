"""Download upstream files with checksum checks, and unpack archives, never leaving half-written results.

``fetch`` streams into a ``.part`` file beside the destination and renames it into place only once the
checksum matches, so a file at ``dest`` is always complete; an interrupted download keeps its part file and
the next fetch resumes it (HTTP Range). A file already at ``dest`` is kept when its checksum matches (or when
no checksum is given: the rename means it was written whole) and is deleted and fetched again when it does
not. ``FEDBENCH_MIRROR`` replaces every upstream host (see :func:`mirrored`). ``extract`` unpacks into a temporary sibling folder that is renamed
into place, and refuses archive members that would land outside it.

Only the standard library is used for the transfer (urllib); tqdm draws the progress bar.
"""

from __future__ import annotations

import fcntl
import gzip
import hashlib
import http.client
import logging
import os
import shutil
import tarfile
import time
import urllib.error
import urllib.parse
import urllib.request
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path, PurePosixPath

from tqdm import tqdm

from fedbench.data.format import atomic_folder

log = logging.getLogger(__name__)

CHUNK_BYTES = 1 << 20  # read and hash 1 MiB at a time
RETRY_DELAY_S = 1.0  # sleep before retry i is i * RETRY_DELAY_S, after a network error only
USER_AGENT = "fedbench-download/0.1 (python urllib)"
MIRROR_ENV = "FEDBENCH_MIRROR"  # base URL under which every upstream file keeps its path
_DIGEST_LENGTH = {"md5": 32, "sha256": 64}


class DownloadError(RuntimeError):
    """A URL could not be fetched (HTTP error, network failure, truncated transfer)."""


class ChecksumError(DownloadError):
    """The bytes served do not have the expected checksum."""


def file_checksum(path: str | os.PathLike, algorithm: str = "md5") -> str:
    """Hex digest of a file's bytes; ``algorithm`` is "md5" or "sha256"."""
    h = hashlib.new(algorithm)
    with open(path, "rb") as f:
        while chunk := f.read(CHUNK_BYTES):
            h.update(chunk)
    return h.hexdigest()


def _expected_digests(md5: str | None, sha256: str | None) -> dict[str, str]:
    expected = {name: value.lower() for name, value in (("md5", md5), ("sha256", sha256)) if value}
    for name, value in expected.items():
        if len(value) != _DIGEST_LENGTH[name] or any(c not in "0123456789abcdef" for c in value):
            raise ValueError(f"{name} must be {_DIGEST_LENGTH[name]} hex digits, got {value!r}")
    return expected


def _mismatches(path: Path, expected: dict[str, str]) -> dict[str, str]:
    """{algorithm: actual digest} for each expected digest that ``path`` does not have."""
    actual = {name: file_checksum(path, name) for name in expected}
    return {name: actual[name] for name in expected if actual[name] != expected[name]}


def _is_transient(error: Exception) -> bool:
    """Network trouble worth retrying; HTTP client errors such as 404 are not."""
    if isinstance(error, urllib.error.HTTPError):
        return error.code in (408, 429) or error.code >= 500
    return isinstance(error, (urllib.error.URLError, TimeoutError, ConnectionError, http.client.HTTPException))


def mirrored(urls: tuple[str, ...] | list[str]) -> tuple[str, ...]:
    """The URLs to try: ``urls`` as given, or, when ``FEDBENCH_MIRROR`` is set (``http://host:port/``), each
    URL's path under that base instead (duplicates dropped), so a lab mirror or a local server serving the
    upstream paths stands in for every upstream host."""
    base = os.environ.get(MIRROR_ENV, "").strip()
    if not base:
        return tuple(urls)
    out: list[str] = []
    for url in urls:
        parts = urllib.parse.urlsplit(url)
        if parts.scheme not in ("http", "https"):
            out.append(url)
            continue
        candidate = base.rstrip("/") + parts.path
        if candidate not in out:
            out.append(candidate)
    return tuple(out)


def part_path(dest: Path) -> Path:
    """Where an unfinished download of ``dest`` is kept (resumed by the next fetch; never looks complete)."""
    return dest.with_name(f".{dest.name}.part")


def _stream(url: str, part: Path, timeout: float, progress: bool, label: str) -> None:
    """Append the body of ``url`` to ``part``, asking for the missing bytes only when ``part`` holds some
    (HTTP Range); a server that answers 200 instead of 206 sends everything, so ``part`` is rewritten. Raises
    IncompleteRead if fewer bytes arrive than announced (what arrived is kept for the next attempt)."""
    offset = part.stat().st_size if part.exists() else 0
    headers = {"User-Agent": USER_AGENT}
    if offset:
        headers["Range"] = f"bytes={offset}-"
    request = urllib.request.Request(url, headers=headers)
    try:
        response = urllib.request.urlopen(request, timeout=timeout)
    except urllib.error.HTTPError as e:
        if e.code == 416 and offset:  # nothing after offset: the part already holds the whole file
            return
        raise
    with response:
        resumed = offset and response.status == 206 and (response.headers.get("Content-Range") or "").startswith(
            f"bytes {offset}-")
        start = offset if resumed else 0
        length = response.headers.get("Content-Length")
        total = start + int(length) if length is not None else None
        received = 0
        with open(part, "ab" if resumed else "wb") as out, tqdm(
                total=total, initial=start, unit="B", unit_scale=True, unit_divisor=1024, desc=label,
                disable=not progress, leave=False) as bar:
            while chunk := response.read(CHUNK_BYTES):
                out.write(chunk)
                received += len(chunk)
                bar.update(len(chunk))
            out.flush()
            os.fsync(out.fileno())
    if total is not None and start + received != total:
        raise http.client.IncompleteRead(b"", total - start - received)


@contextmanager
def _download_lock(dest: Path) -> Iterator[None]:
    """Hold an exclusive lock on ``dest``'s part file while downloading, so two processes never write it."""
    part = part_path(dest)
    with open(part, "ab") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            raise DownloadError(f"{dest}: another process is downloading it now ({part} is locked); "
                                "wait for it to finish") from None
        try:
            yield
        finally:
            if part.exists() and part.stat().st_size == 0:
                part.unlink()


def fetch(
    url: str,
    dest: str | os.PathLike,
    md5: str | None = None,
    sha256: str | None = None,
    retries: int = 2,
    timeout: float = 60,
    progress: bool = True,
) -> Path:
    """Download ``url`` to the file ``dest`` unless a file with the right checksum is already there.

    The bytes go to ``.<name>.part`` beside ``dest`` and are renamed into place only once the checksum
    matches, so a file at ``dest`` is always complete. An interrupted download leaves its part file, and the
    next fetch asks the server for the remaining bytes only. Network errors and checksum mismatches are
    retried ``retries`` times (HTTP 4xx other than 408/429 is not); a mismatch deletes the part. Raises
    ChecksumError (naming the URL, expected and actual digests) or DownloadError; in both cases nothing is
    left at ``dest``.
    """
    dest = Path(dest)
    expected = _expected_digests(md5, sha256)
    if retries < 0:
        raise ValueError(f"retries must be >= 0, got {retries}")
    if dest.is_file():
        wrong = _mismatches(dest, expected)
        if not wrong:
            return dest
        log.warning("%s is corrupt (%s); deleting it and downloading %s again",
                    dest, ", ".join(f"{k} {v}, expected {expected[k]}" for k, v in wrong.items()), url)
        dest.unlink()
    dest.parent.mkdir(parents=True, exist_ok=True)
    part = part_path(dest)
    last_error: Exception | None = None
    with _download_lock(dest):
        for attempt in range(retries + 1):
            try:
                _stream(url, part, timeout, progress, dest.name)
                wrong = _mismatches(part, expected)
                if not wrong:
                    os.replace(part, dest)
                    return dest
                part.unlink()
                details = "; ".join(f"{k} expected {expected[k]}, got {v}" for k, v in wrong.items())
                last_error = ChecksumError(f"{url}: checksum mismatch after {attempt + 1} attempt(s): {details}. "
                                           f"The server sent different bytes (changed upstream file or broken "
                                           f"mirror); the download was deleted and nothing was written to {dest}")
            except Exception as e:
                if not _is_transient(e):
                    if isinstance(e, urllib.error.HTTPError):
                        raise DownloadError(f"{url}: HTTP {e.code} {e.reason}; nothing was written to {dest}") from e
                    raise
                kept = part.stat().st_size if part.exists() else 0
                where = (f"{kept} bytes kept in {part} to resume from" if kept
                         else f"nothing was written to {dest}")
                reason = " ".join(f"{type(e).__name__}: {e}".split())
                last_error = DownloadError(f"{url}: {reason} (attempt {attempt + 1} of {retries + 1}); {where}")
                last_error.__cause__ = e
                if attempt < retries:
                    time.sleep(RETRY_DELAY_S * (attempt + 1))
    assert last_error is not None
    raise last_error


def _archive_kind(archive: Path) -> str:
    name = archive.name.lower()
    for suffix, kind in ((".zip", "zip"), (".tar.gz", "tar"), (".tgz", "tar"), (".tar", "tar"), (".gz", "gz")):
        if name.endswith(suffix):
            return kind
    raise ValueError(f"{archive}: unsupported archive type; allowed: .zip, .tar.gz, .tgz, .tar, .gz")


def _safe_member(name: str, archive: Path) -> None:
    """Refuse member names that are absolute or climb out of the extraction folder."""
    path = PurePosixPath(name.replace("\\", "/"))
    if path.is_absolute() or ".." in path.parts or (path.parts and ":" in path.parts[0]):
        raise ValueError(f"{archive}: member {name!r} would be written outside the extraction folder")


def _unpack(archive: Path, kind: str, into: Path) -> None:
    if kind == "zip":
        with zipfile.ZipFile(archive) as z:
            for member in z.namelist():
                _safe_member(member, archive)
            z.extractall(into)
    elif kind == "tar":
        with tarfile.open(archive) as t:
            members = t.getmembers()
            for member in members:
                _safe_member(member.name, archive)
                if not (member.isfile() or member.isdir()):
                    raise ValueError(f"{archive}: member {member.name!r} is a link or special file; "
                                     "only regular files and folders are extracted")
            if hasattr(tarfile, "data_filter"):
                t.extractall(into, members=members, filter="data")
            else:  # Python without extraction filters; members were checked above
                t.extractall(into, members=members)
    else:
        with gzip.open(archive, "rb") as src, open(into / archive.name[: -len(".gz")], "wb") as out:
            shutil.copyfileobj(src, out, CHUNK_BYTES)


def extract(archive: str | os.PathLike, dest_dir: str | os.PathLike) -> Path:
    """Unpack ``archive`` (.zip, .tar.gz, .tgz, .tar or single-file .gz) so ``dest_dir`` holds its contents.

    Unpacks into a temporary sibling folder renamed into place at the end, replacing any earlier
    ``dest_dir``; an interrupted or refused extraction leaves no ``dest_dir``. A .gz file becomes one
    file named without the .gz suffix.
    """
    archive, dest_dir = Path(archive), Path(dest_dir)
    kind = _archive_kind(archive)
    if not archive.is_file():
        raise FileNotFoundError(f"{archive}: no such archive")
    with atomic_folder(dest_dir, suffix=".partial") as tmp:
        _unpack(archive, kind, tmp)
    return dest_dir
