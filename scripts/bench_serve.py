#!/usr/bin/env python
"""`ragkit serve`: POST /v1/query latency from 1 and from 8 concurrent clients, and one-shot `ragkit query`
processes through the warm server against in process.

    python scripts/bench_serve.py --index <index> [--queries ../shared/data/scifact-train/queries.jsonl]
        [--n 100] [--clients 1,8] [--runs 5]

Starts `ragkit serve --port 0` on the index, sends the first ``--n`` queries of the set (default strategy,
k 10) from each number of clients (threads, one keep-alive connection each, the queries split between them),
then times ``--runs`` one-shot ``ragkit query --json`` processes with the server up and with it stopped.
"""

from __future__ import annotations

import argparse
import http.client
import json
import signal
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

from ragkit.config import resolve_index_dir  # noqa: E402
from ragkit.evaluate import percentile  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_Q = ROOT.parent / "shared/data/scifact-train/queries.jsonl"


def start(index: str) -> tuple[subprocess.Popen, dict]:
    port_file = resolve_index_dir(index) / "server.json"
    port_file.unlink(missing_ok=True)
    proc = subprocess.Popen(
        [sys.executable, "-m", "ragkit", "serve", "--index", index, "--port", "0"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    deadline = time.time() + 300
    while not port_file.exists():
        if proc.poll() is not None or time.time() > deadline:
            sys.exit(f"the server did not start: {proc.stderr.read().decode()[-2000:]}")
        time.sleep(0.1)
    return proc, json.loads(port_file.read_text())


def clients(info: dict, queries: list[str], n_clients: int) -> tuple[list[float], float]:
    """Per-request milliseconds and the wall seconds of the whole run."""
    lat: list[float] = []
    lock = threading.Lock()

    def work(part: list[str]) -> None:
        con = http.client.HTTPConnection(info["host"], info["port"], timeout=300)
        for q in part:
            t = time.perf_counter()
            con.request(
                "POST",
                "/v1/query",
                body=json.dumps({"query": q, "k": 10}).encode(),
                headers={"Content-Type": "application/json"},
            )
            resp = con.getresponse()
            resp.read()
            ms = (time.perf_counter() - t) * 1000
            if resp.status != 200:
                raise SystemExit(f"HTTP {resp.status} for {q!r}")
            with lock:
                lat.append(ms)
        con.close()

    threads = [threading.Thread(target=work, args=(queries[i::n_clients],)) for i in range(n_clients)]
    t = time.perf_counter()
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    return lat, time.perf_counter() - t


def one_shot(index: str, q: str, runs: int) -> float:
    walls = []
    for _ in range(runs):
        t = time.perf_counter()
        subprocess.run(
            [sys.executable, "-m", "ragkit", "query", "--json", "--index", index, q],
            check=True,
            stdout=subprocess.DEVNULL,
        )
        walls.append(time.perf_counter() - t)
    return statistics.median(walls)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--index", required=True)
    ap.add_argument("--queries", type=Path, default=DEFAULT_Q)
    ap.add_argument("--n", type=int, default=100)
    ap.add_argument("--clients", default="1,8")
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    queries = [json.loads(line)["text"] for line in args.queries.open() if line.strip()][: args.n]
    proc, info = start(args.index)
    try:
        tab = Table(title=f"POST /v1/query on {args.index}, {len(queries)} queries, default strategy, k 10")
        for col in ("clients", "p50 ms", "p95 ms", "queries/s"):
            tab.add_column(col, justify="right")
        clients(info, queries[:5], 1)  # warm the strategies' data
        for n in (int(c) for c in args.clients.split(",")):
            lat, wall = clients(info, queries, n)
            tab.add_row(str(n), f"{percentile(lat, 0.5):.1f}", f"{percentile(lat, 0.95):.1f}", f"{len(lat) / wall:.1f}")
        Console(width=160).print(tab)
        through = one_shot(args.index, queries[0], args.runs)
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=60)
    alone = one_shot(args.index, queries[0], args.runs)
    t2 = Table(title=f"one-shot `ragkit query --json` processes (median of {args.runs})")
    t2.add_column("", justify="left")
    t2.add_column("wall s", justify="right")
    t2.add_row("through the warm server", f"{through:.3f}")
    t2.add_row("in process (no server)", f"{alone:.3f}")
    Console(width=160).print(t2)


if __name__ == "__main__":
    main()
