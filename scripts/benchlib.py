"""Helpers shared by the benchmark scripts."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def corpus_source(corpus: Path, docs: int | None, work: Path) -> Path:
    """What to index: a folder as it is, or the first ``docs`` documents of a BEIR corpus.jsonl (a copy in
    ``work``; all of them when ``docs`` is None)."""
    if not corpus.is_file():
        return corpus
    src = work / "data" / "corpus.jsonl"
    src.parent.mkdir(parents=True, exist_ok=True)
    with corpus.open() as fh:
        src.write_text("".join(line for n, line in enumerate(fh) if docs is None or n < docs))
    return src


def timed(cmd: list[str], env: dict | None = None) -> tuple[float, float]:
    """Wall seconds and peak RSS (MiB) of one child process (exits with its error when it fails). The peak
    comes from ``/usr/bin/time``: the kernel's own accounting of a child forked from a big process starts at
    that process's size."""
    timer = shutil.which("time") or "/usr/bin/time"
    with tempfile.NamedTemporaryFile("r", suffix=".rss") as out:
        t = time.perf_counter()
        proc = subprocess.run(
            [timer, "-f", "%M", "-o", out.name, *cmd], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env
        )
        wall = time.perf_counter() - t
        if proc.returncode != 0:
            sys.exit(f"{' '.join(cmd)} failed:\n{proc.stderr.decode()[-2000:]}")
        return wall, int(out.read().split()[-1]) / 1024
