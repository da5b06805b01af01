"""A real `grammask serve` subprocess on a free loopback port, for the server tests."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

#: Seconds a server may take to load the model and answer /health.
START_TIMEOUT = 300


class Server:
    """`python -m grammask.cli serve ARGS` on 127.0.0.1, its log in a temporary file."""

    def __init__(self, *args: str) -> None:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.base_url = f"http://127.0.0.1:{self.port}"
        self.log_path = Path(tempfile.mkdtemp(prefix="grammask-serve-")) / "server.log"
        self._log = self.log_path.open("wb")
        cmd = [sys.executable, "-m", "grammask.cli", "serve", "--port", str(self.port), *args]
        self.proc = subprocess.Popen(cmd, stdout=self._log, stderr=subprocess.STDOUT, env=dict(os.environ))
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"grammask serve exited with {self.proc.returncode}:\n{self.log()}")
            try:
                self.get("/health")
                return
            except OSError:
                time.sleep(0.5)
        self.stop()
        raise RuntimeError(f"grammask serve did not answer within {START_TIMEOUT} s:\n{self.log()}")

    def get(self, path: str) -> dict:
        with urllib.request.urlopen(self.base_url + path, timeout=10) as response:
            return json.loads(response.read())

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")[-5000:]

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self._log.close()


@contextmanager
def running(*args: str) -> Iterator[Server]:
    server = Server(*args)
    try:
        yield server
    finally:
        server.stop()
