"""A loopback HTTP server (127.0.0.1) serving files at upstream paths, with HTTP Range and injectable faults."""

from __future__ import annotations

import re
import threading
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit


@dataclass
class Loopback:
    """What is served (path -> bytes), requests per path, Range requests seen, and one-off faults per path:
    'cut' sends half the body and closes the connection (an interrupted download), 'corrupt' flips a byte."""

    base_url: str = ""
    files: dict[str, bytes] = field(default_factory=dict)
    hits: Counter = field(default_factory=Counter)
    ranges: list[tuple[str, int]] = field(default_factory=list)
    faults: dict[str, list[str]] = field(default_factory=dict)

    def serve_at_upstream_paths(self, urls_and_bytes: dict[str, bytes]) -> None:
        for url, data in urls_and_bytes.items():
            self.files[urlsplit(url).path] = data


def _handler(state: Loopback) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:
            path = urlsplit(self.path).path
            state.hits[path] += 1
            body = state.files.get(path)
            if body is None:
                self.send_error(404)
                return
            queue = state.faults.get(path) or []
            fault = queue.pop(0) if queue else None
            if fault == "corrupt":
                body = body[:-1] + bytes([body[-1] ^ 0xFF])
            start = 0
            match = re.fullmatch(r"bytes=(\d+)-", self.headers.get("Range", ""))
            if match:
                start = int(match.group(1))
                state.ranges.append((path, start))
                if start >= len(body):
                    self.send_response(416)
                    self.send_header("Content-Range", f"bytes */{len(body)}")
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                self.send_response(206)
                self.send_header("Content-Range", f"bytes {start}-{len(body) - 1}/{len(body)}")
            else:
                self.send_response(200)
            part = body[start:]
            self.send_header("Content-Length", str(len(part)))
            self.end_headers()
            if fault == "cut":
                self.wfile.write(part[: len(part) // 2])
                self.wfile.flush()
                self.close_connection = True
                return
            self.wfile.write(part)

        def log_message(self, *args) -> None:
            pass

    return Handler


@contextmanager
def loopback() -> Iterator[Loopback]:
    state = Loopback()
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(state))
    httpd.daemon_threads = True
    state.base_url = f"http://127.0.0.1:{httpd.server_address[1]}"
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        httpd.shutdown()
        httpd.server_close()
