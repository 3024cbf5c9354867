"""Real model servers on loopback for the tests (never a mock of one): llama-cpp-python's OpenAI-compatible
server (``python -m llama_cpp.server``) and ``ragkit models serve``, each started on a free port and stopped
after."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path


class NoServer(RuntimeError):
    """The server did not start."""


@dataclass
class Server:
    proc: subprocess.Popen
    base: str  # http://127.0.0.1:PORT/v1
    log: Path

    def spec(self, model: str) -> str:
        return f"{self.base}#{model}"

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(10)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait(proc: subprocess.Popen, base: str, log: Path, api_key: str | None, seconds: float = 120.0) -> None:
    deadline = time.time() + seconds
    request = urllib.request.Request(
        f"{base}/models", headers={"Authorization": f"Bearer {api_key}"} if api_key else {}
    )
    while True:
        try:
            with urllib.request.urlopen(request, timeout=2) as resp:
                json.loads(resp.read())
                return
        except OSError:
            if proc.poll() is not None or time.time() > deadline:
                proc.kill()
                raise NoServer(f"the server did not start: {log.read_text()[-2000:]}") from None
            time.sleep(0.3)


@contextmanager
def started(cmd: list[str], log: Path, port: int, api_key: str | None = None) -> Iterator[Server]:
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    with log.open("w") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env)
    server = Server(proc, f"http://127.0.0.1:{port}/v1", log)
    try:
        _wait(proc, server.base, log, api_key)
        yield server
    finally:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()


@contextmanager
def llama_server(model: Path, alias: str, log: Path, api_key: str | None = None) -> Iterator[Server]:
    """llama-cpp-python's server for one GGUF: chat completions and (token-level) embeddings."""
    port = free_port()
    cmd = [
        sys.executable,
        "-m",
        "llama_cpp.server",
        "--model",
        str(model),
        "--model_alias",
        alias,
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--embedding",
        "true",
        "--n_ctx",
        "2048",
        "--n_threads",
        "2",
        "--chat_format",
        "gemma",  # (the bundled GGUF is a base model without a chat template)
    ]
    if api_key:
        cmd += ["--api_key", api_key]
    with started(cmd, log, port, api_key) as server:
        yield server


@contextmanager
def ragkit_models(
    log: Path,
    *,
    embed: str | None = None,
    rerank: str | None = None,
    generate: str | None = None,
    port: int | None = None,
) -> Iterator[Server]:
    """``ragkit models serve`` with the given roles (on ``port``, else a free one)."""
    port = port or free_port()
    cmd = [sys.executable, "-m", "ragkit", "models", "serve", "--port", str(port)]
    for flag, spec in (("--embed-model", embed), ("--rerank-model", rerank), ("--model", generate)):
        if spec:
            cmd += [flag, spec]
    with started(cmd, log, port) as server:
        yield server
