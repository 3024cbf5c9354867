"""moto's S3 server on a free loopback port, for tests and `scripts/bench_query.py remote` (an S3 API, not a mock of
ragkit's calls)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

BUCKET = "ragkit-test"


class NoServer(RuntimeError):
    """moto's server is not installed or did not start."""


@contextmanager
def moto_s3(log: Path, bucket: str, cache: Path) -> Iterator[dict[str, str]]:
    """Start the server, point the standard AWS variables (and ``RAGKIT_CACHE``) at it, make ``bucket``;
    restore the variables and stop the server after."""
    try:
        import boto3  # comes with moto[server]
    except ImportError as exc:
        raise NoServer("moto[server] is not installed") from exc
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
        stdout=open(log, "w"),
        stderr=subprocess.STDOUT,
    )
    env = {
        "AWS_ACCESS_KEY_ID": "test",
        "AWS_SECRET_ACCESS_KEY": "test",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_ENDPOINT_URL": f"http://127.0.0.1:{port}",
        "AWS_ALLOW_HTTP": "true",
        "RAGKIT_CACHE": str(cache),
    }
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        deadline = time.time() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                if proc.poll() is not None or time.time() > deadline:
                    raise NoServer(f"moto's server did not start: {log.read_text()[-500:]}") from None
                time.sleep(0.2)
        boto3.client("s3").create_bucket(Bucket=bucket)
        yield env
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


@pytest.fixture(scope="module")
def s3(tmp_path_factory):
    """moto's S3 server on loopback with bucket ``BUCKET``, the standard AWS variables pointing at it (skipped,
    saying why, only when moto cannot start)."""
    try:
        with moto_s3(tmp_path_factory.mktemp("moto") / "moto.log", BUCKET, tmp_path_factory.mktemp("cache")) as env:
            yield env
    except NoServer as exc:
        pytest.skip(str(exc))
