#!/usr/bin/env python
"""Query latency: warm and one-shot, in a session, through the HTTP and MCP servers, on object storage.

    python scripts/bench_query.py SUBCOMMAND [options]     (SUBCOMMAND --help for its options)

Subcommands:
  query    warm p50/p95 per strategy with a per-stage breakdown, one-shot processes, `ragkit --help`
  session  warm queries in one process (the interactive session) vs. cold one-shot `ragkit query` processes
  serve    `ragkit serve`: POST /v1/query from 1 and 8 clients; one-shot processes through the warm server
  mcp      a real MCP client session against `ragkit serve --mcp` (the SDK's stdio client), timed
  remote   an index on object storage (moto's S3 on loopback) vs local disk, side by side
  load     `ragkit serve` under load: queries/s and p50/p95/p99 at 1, 4, 16 clients, 1 vs 2 workers; RSS over
           minutes; a run committed during the load
  team     `ragkit serve --tokens`: the matrix of tokens × endpoints × strategies, statuses and leaked markers

Every subcommand also takes ``--json`` (each table as one JSON object per line). ``remote`` loads
tests/s3.py by path (harness.tests_module): it needs moto[server] (the test extra).
"""

from __future__ import annotations

import asyncio
import http.client
import io
import itertools
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

import harness
from harness import REPO, SCIFACT_QUERIES, arg, print_table, query_config, query_texts, ragkit_cmd, run_seconds

from ragkit.evaluate import percentile

cli = harness.CLI(__doc__)
INDEX = arg("--index", required=True)
QUERIES = arg("--queries", type=Path, default=SCIFACT_QUERIES)


# --- query ---------------------------------------------------------------------------------------------------------

STAGES = [
    ("plan", ("plan",)),
    ("embed", ("embed_query",)),
    ("dense", ("dense",)),
    ("lexical", ("lexical",)),
    ("fusion", ("fusion",)),
    ("rerank", ("rerank", "cross_encoder")),
    ("assembly", ("assemble",)),
]


@cli.command(
    "query",
    INDEX,
    QUERIES,
    arg("--n", type=int, default=100),
    arg("--strategies", default="naive,lexical,hybrid,auto,hippo,local,light,global,hierarchical"),
    arg("--cold-index", help="index for the one-shot processes (default: --index)"),
    arg("--cold-runs", type=int, default=5),
    arg("--no-retry", action="store_true", help="warm runs without the corrective retry"),
    arg(
        "--cold-query",
        action="append",
        help="question of the one-shot processes (repeatable; default: the first of --queries)",
    ),
)
def query(args) -> None:
    """Query latency: warm p50/p95 per strategy with a per-stage breakdown, one-shot processes, `ragkit --help`.

        python scripts/bench_query.py query --index <index> [--queries ../shared/data/scifact-train/queries.jsonl]
            [--n 100] [--strategies naive,lexical,hybrid,auto,hippo,local,light,global,hierarchical]
            [--cold-index <index>] [--cold-runs 5] [--cold-query "…" ...] [--no-retry]

    Warm: one process, the index opened once, every strategy run over the same queries (k = 10, features rerank
    and passage assembly included) after one untimed query per strategy; stages are the medians of the timings
    each query reports (planning, query encoding, dense search, BM25, fusion, the strategy's graph work,
    reranking, assembly; "retry"/"expansion" when the corrective retry or the planner's expansions ran).
    Cold: `ragkit query --json` as a fresh process on ``--cold-index`` (default ``--index``), median wall time and
    peak RSS (``/usr/bin/time``) over ``--cold-runs`` runs, for each ``--cold-query`` (default: the first query of
    the set) with the strategy the router chose for it, then ``--strategy lexical`` and ``ragkit --help``.
    """
    queries = query_texts(args.queries, args.n)
    ix = harness.open_index(args.index)
    ix.reader.embedder.encode_query("warm up")
    rows = []
    known = {k for _, keys in STAGES for k in keys} | {"total", "load_model"}
    for name in args.strategies.split(","):
        cfg = query_config(strategy=name, k=10, syntax=False, retry=not args.no_retry)
        ix.query(queries[0], cfg)  # the strategy's derived data (graphs, vectors) loads here
        lat, stages = [], []
        for q in queries:
            t = time.perf_counter()
            res = ix.query(q, cfg)
            lat.append((time.perf_counter() - t) * 1000)
            stages.append(res.timings_ms)
        med = {label: statistics.median(sum(s.get(k, 0.0) for k in keys) for s in stages) for label, keys in STAGES}
        side_stage = ("retry", "expansion")
        extra = [sum(v for k, v in s.items() if k not in known and not k.startswith(side_stage)) for s in stages]
        side = [sum(v for k, v in s.items() if k.startswith(side_stage)) for s in stages]
        p50, p95 = percentile(lat, 0.5), percentile(lat, 0.95)
        rows.append(
            (
                name,
                f"{p50:.1f}",
                f"{p95:.1f}",
                f"{p95 / p50:.2f}",
                *(f"{med[s]:.1f}" for s, _ in STAGES),
                f"{statistics.median(extra):.1f}",
                f"{sum(1 for x in side if x)} × {statistics.mean([x for x in side if x] or [0]):.0f}",
            )
        )
    title = f"warm query latency (ms), {len(queries)} queries, {args.index} ({ix.reader.chunks.count():,} chunks)"
    cols = ("strategy", "p50", "p95", "p95/p50", *(s for s, _ in STAGES), "graph", "retry / expansion")
    print_table(title + "; stage columns are medians", cols, rows)
    if args.cold_runs < 1:
        return
    index = args.cold_index or args.index
    cold = []
    for q in args.cold_query or queries[:1]:
        cmd = ragkit_cmd("query", "--json", "--index", index, q)
        routed = json.loads(subprocess.run(cmd, capture_output=True, text=True, check=True).stdout)["plan"]["strategy"]
        cold.append((f"ragkit query --json {q[:40]!r} (auto → {routed})", cmd))
    q = (args.cold_query or queries)[0]
    lexical = ragkit_cmd("query", "--json", "--strategy", "lexical", "--index", index, q)
    cold += [
        ("ragkit query --json --strategy lexical (same first query)", lexical),
        ("ragkit --help", ragkit_cmd("--help")),
    ]
    rows = []
    for label, cmd in cold:
        walls, peaks = zip(*(harness.timed(cmd) for _ in range(args.cold_runs)))
        rows.append((label, f"{statistics.median(walls):.2f}", f"{statistics.median(peaks):.0f}"))
    title = f"one-shot processes on {index} (median of {args.cold_runs})"
    print_table(title, ("command", "wall s", "peak RSS MiB"), rows)


# --- session -------------------------------------------------------------------------------------------------------


@cli.command(
    "session", INDEX, arg("--queries", type=Path), arg("--n", type=int, default=30), arg("--cold", type=int, default=3)
)
def session(args) -> None:
    """Warm queries in one process (as in the interactive session) vs. cold one-shot `ragkit query` processes.

        python scripts/bench_query.py session --index <index> [--queries Q.jsonl] [--n 30] [--cold 3]

    Runs ``--cold`` one-shot ``ragkit query`` processes (model load included) and, in this process, a
    session (ragkit.cli.session.Session) that answers the first N queries (without ``--queries``: one built-in
    question N times); prints the median cold wall time, the session's first (loading) query, its warm p50/p95
    and the cold/warm ratio.
    """
    from rich.console import Console

    from ragkit.cli.session import Session

    texts = query_texts(args.queries, args.n) if args.queries else ["how is overtime limited?"] * args.n
    hybrid = ("--strategy", "hybrid", "--json")
    cold = [run_seconds(ragkit_cmd("query", text, "--index", args.index, *hybrid)) for text in texts[: args.cold]]
    s = Session(harness.open_index(args.index), query_config(strategy="hybrid"), Console(file=io.StringIO()))
    times = []
    for text in texts:
        t = time.perf_counter()
        s.ask(text)
        times.append(time.perf_counter() - t)
    warm = sorted(times[1:])
    p50, p95 = statistics.median(warm), warm[int(0.95 * (len(warm) - 1))]
    rows = [
        (f"cold `ragkit query` process (median of {len(cold)})", f"{statistics.median(cold):.2f}"),
        ("session: first query (loads the embedder)", f"{times[0]:.2f}"),
        (f"session: warm p50 / p95 ({len(warm)} queries)", f"{p50:.3f} / {p95:.3f}"),
        ("cold / warm p50", f"{statistics.median(cold) / p50:.0f}×"),
    ]
    print_table(f"{args.index}: one-shot processes vs. a session (hybrid, passages rendered)", ("", "seconds"), rows)


# --- serve ---------------------------------------------------------------------------------------------------------


@cli.command(
    "serve",
    INDEX,
    QUERIES,
    arg("--n", type=int, default=100),
    arg("--clients", default="1,8"),
    arg("--runs", type=int, default=5),
)
def serve(args) -> None:
    """`ragkit serve`: POST /v1/query latency from 1 and from 8 concurrent clients, and one-shot `ragkit query`
    processes through the warm server against in process.

        python scripts/bench_query.py serve --index <index> [--queries ../shared/data/scifact-train/queries.jsonl]
            [--n 100] [--clients 1,8] [--runs 5]

    Starts `ragkit serve --port 0` on the index, sends the first ``--n`` queries of the set (default strategy,
    k 10) from each number of clients (threads, one keep-alive connection each, the queries split between them),
    then times ``--runs`` one-shot ``ragkit query --json`` processes with the server up and with it stopped.
    """
    queries = query_texts(args.queries, args.n)
    proc, info = start_server(args.index)
    one_shot = ragkit_cmd("query", "--json", "--index", args.index, queries[0])
    try:
        clients(info, queries[:5], 1)  # warm the strategies' data
        rows = []
        for n in (int(c) for c in args.clients.split(",")):
            lat, wall = clients(info, queries, n)
            rows.append((n, f"{percentile(lat, 0.5):.1f}", f"{percentile(lat, 0.95):.1f}", f"{len(lat) / wall:.1f}"))
        title = f"POST /v1/query on {args.index}, {len(queries)} queries, default strategy, k 10"
        print_table(title, ("clients", "p50 ms", "p95 ms", "queries/s"), rows)
        through = statistics.median(run_seconds(one_shot, stderr=None) for _ in range(args.runs))
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=60)
    alone = statistics.median(run_seconds(one_shot, stderr=None) for _ in range(args.runs))
    rows = [("through the warm server", f"{through:.3f}"), ("in process (no server)", f"{alone:.3f}")]
    print_table(f"one-shot `ragkit query --json` processes (median of {args.runs})", ("", "wall s"), rows)


def start_server(index: str, *extra: str) -> tuple[subprocess.Popen, dict]:
    from ragkit.config import resolve_index_dir

    port_file = resolve_index_dir(index) / "server.json"
    port_file.unlink(missing_ok=True)
    cmd = ragkit_cmd("serve", "--index", index, "--port", "0", *extra)
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
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
            body = json.dumps({"query": q, "k": 10}).encode()
            con.request("POST", "/v1/query", body=body, headers={"Content-Type": "application/json"})
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


# --- mcp -----------------------------------------------------------------------------------------------------------


@cli.command("mcp", INDEX, QUERIES, arg("--n", type=int, default=20))
def mcp(args) -> None:
    """A real MCP client session against `ragkit serve --mcp` (the SDK's stdio client), timed.

        python scripts/bench_query.py mcp --index <index> [--queries ../shared/data/scifact-train/queries.jsonl]
            [--n 20]

    Starts the server as the client's subprocess, then times: process start to initialised session (the server
    loads the index and warms up before it answers), `list_tools`, and `search` calls (k 8) over the first
    ``--n`` queries of the set.
    """
    import anyio

    out = anyio.run(mcp_session, args.index, query_texts(args.queries, args.n))
    s = sorted(out["searches"][1:]) or [0.0]
    rows = [
        ("start the server process → session initialised", f"{out['started']:.2f} s"),
        (f"list_tools ({', '.join(out['tools'])})", f"{out['listed'] * 1000:.1f} ms"),
        ("first search", f"{out['searches'][0] * 1000:.1f} ms"),
        (f"search, the next {len(s)}: p50 / max", f"{statistics.median(s) * 1000:.1f} / {s[-1] * 1000:.1f} ms"),
    ]
    print_table(f"MCP over stdio: ragkit serve --mcp --index {args.index}", ("step", "time"), rows)


async def mcp_session(index: str, queries: list[str]) -> dict:
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    cmd = ragkit_cmd("serve", "--mcp", "--index", index)
    params = StdioServerParameters(command=cmd[0], args=cmd[1:], env=dict(os.environ), cwd=str(REPO))
    t = time.perf_counter()
    async with stdio_client(params) as streams:
        async with ClientSession(*streams) as s:
            await s.initialize()
            started = time.perf_counter() - t
            t = time.perf_counter()
            tools = (await s.list_tools()).tools
            listed = time.perf_counter() - t
            searches = []
            for q in queries:
                t = time.perf_counter()
                result = await s.call_tool("search", {"query": q, "k": 8})
                searches.append(time.perf_counter() - t)
                if result.is_error:
                    raise SystemExit(f"search failed: {result.content[0].text}")
    return {"started": started, "listed": listed, "tools": [x.name for x in tools], "searches": searches}


# --- remote --------------------------------------------------------------------------------------------------------

QUESTIONS = [
    "How do I read a file into a string?",
    "What is ownership?",
    "How do I handle errors with Result?",
    "What does the borrow checker check?",
    "How do I spawn a thread?",
    "What is a trait object?",
    "How are closures captured?",
    "What is the difference between Box and Rc?",
    "How do I write tests?",
    "What are lifetimes?",
]


@cli.command(
    "remote",
    arg("--corpus", type=Path, default=harness.SHARED / "rust-book" / "src"),
    arg("--work", type=Path),
    arg("--n", type=int, default=100),
    arg("--cold-runs", type=int, default=3),
)
def remote(args) -> None:
    """Index on object storage vs local disk, side by side in one run: moto's S3 server on loopback (so the
    ratio shows what the object-store path itself costs, not a network).

        python scripts/bench_query.py remote [--corpus ../shared/data/rust-book/src] [--work DIR] [--n 100]
            [--cold-runs 3]

    Rows: a first ``ragkit index`` of the corpus, an incremental one (one file edited), a one-shot
    ``ragkit query --json`` (median of ``--cold-runs``), warm queries through one reader (p50 / p95 over
    ``--n`` questions, hybrid and auto), and the index's bytes. (``--json`` prints the figures as JSON.)
    """
    from ragkit.config import resolve_index_dir
    from ragkit.store.sizes import index_bytes

    moto_s3 = harness.tests_module("s3").moto_s3
    work = harness.workdir(args.work, "remote")
    shutil.rmtree(work)
    work.mkdir()
    folder = work / "corpus"
    shutil.copytree(args.corpus, folder)
    edited = sorted(p for p in folder.rglob("*.md"))[len(QUESTIONS)]
    with moto_s3(work / "moto.log", "bench", work / "cache"):
        warmup = work / "warmup"  # the encoder's one-time export into the fresh cache, before anything is timed
        warmup.mkdir()
        (warmup / "a.md").write_text("# A\n\nA short note.\n")
        run_seconds(ragkit_cmd("index", warmup, "--index", work / "warmup-index"))
        where = {"local disk": str(work / "local"), "S3 (moto, loopback)": "s3://bench/corpus"}
        rows: dict[str, dict[str, str]] = {name: {} for name in where}
        for name, index in where.items():
            rows[name]["first index s"] = f"{run_seconds(ragkit_cmd('index', folder, '--index', index)):.1f}"
        with edited.open("a") as fh:
            fh.write("\n\nA paragraph added between two runs.\n")
        for name, index in where.items():
            rows[name]["incremental index s"] = f"{run_seconds(ragkit_cmd('index', folder, '--index', index)):.2f}"
        for name, index in where.items():
            one_shot = ragkit_cmd("query", "--json", "--index", index, QUESTIONS[0])
            cold = sorted(run_seconds(one_shot) for _ in range(args.cold_runs))
            rows[name]["one-shot query s"] = f"{cold[len(cold) // 2]:.2f}"
            for strategy in ("hybrid", "auto"):
                p50, p95 = warm(index, strategy, args.n)
                rows[name][f"warm {strategy} p50 / p95 ms"] = f"{p50:.1f} / {p95:.1f}"
            rows[name]["index bytes"] = f"{index_bytes(resolve_index_dir(index)) / 1e6:.1f} MB"
    title = f"object storage vs local disk: {args.corpus} (one run, side by side)"
    print_table(title, ("", *where), [(key, *(rows[name][key] for name in where)) for key in rows["local disk"]])


def warm(index: str, strategy: str, n: int) -> tuple[float, float]:
    ix = harness.open_index(index)
    cfg = query_config(strategy=strategy)
    ix.query(QUESTIONS[0], cfg)  # loads
    times = []
    for i in range(n):
        t = time.perf_counter()
        ix.query(QUESTIONS[i % len(QUESTIONS)], cfg)
        times.append((time.perf_counter() - t) * 1000)
    times.sort()
    return statistics.median(times), times[int(len(times) * 0.95) - 1]


# --- load ----------------------------------------------------------------------------------------------------------

HOTPOT = harness.SHARED / "hotpotqa-100"


class Client:
    """One keep-alive HTTP/1.1 connection (asyncio streams: a load generator light enough to leave the server
    the CPU on a 2-core machine)."""

    def __init__(self, host: str, port: int):
        self.host, self.port, self.streams = host, port, None

    async def post(self, path: str, body: dict) -> tuple[int, bytes]:
        if self.streams is None:
            self.streams = await asyncio.open_connection(self.host, self.port)
        reader, writer = self.streams
        data = json.dumps(body).encode()
        head = f"POST {path} HTTP/1.1\r\nHost: {self.host}\r\nContent-Type: application/json\r\n"
        writer.write(f"{head}Content-Length: {len(data)}\r\n\r\n".encode() + data)
        await writer.drain()
        status = int((await reader.readline()).split()[1])
        length = 0
        while (line := await reader.readline()) not in (b"\r\n", b""):
            name, _, value = line.decode("latin-1").partition(":")
            length = int(value) if name.lower() == "content-length" else length
        return status, await reader.readexactly(length)

    def close(self) -> None:
        if self.streams is not None:
            self.streams[1].close()
            self.streams = None


async def drive(
    info: dict, queries: list[str], clients: int, seconds: float, body: dict, until: asyncio.Event | None = None
) -> dict:
    """``clients`` clients asking ``queries`` in turn for ``seconds`` (or ``until`` is set): requests answered,
    their latencies (ms), failed requests, (start time, run id) of each answer, and the wall time."""
    lat, failed, runs, turn = [], [], [], itertools.count()
    deadline = time.perf_counter() + seconds

    async def one() -> None:
        client = Client(info["host"], info["port"])
        while time.perf_counter() < deadline and not (until and until.is_set()):
            q = queries[next(turn) % len(queries)]
            t = time.perf_counter()
            try:
                status, data = await client.post("/v1/query", {"query": q, **body})
            except (OSError, asyncio.IncompleteReadError, ValueError, IndexError) as exc:
                failed.append(repr(exc))
                client.close()
                continue
            if status != 200:
                failed.append(f"HTTP {status}: {data[:200]!r}")
                continue
            lat.append((time.perf_counter() - t) * 1000)
            runs.append((t, json.loads(data)["metadata"]["run"]))
        client.close()

    t = time.perf_counter()
    await asyncio.gather(*(one() for _ in range(clients)))
    return {"lat": lat, "failed": failed, "runs": runs, "wall": time.perf_counter() - t}


def rss_mib(pid: int) -> float:
    """A process's resident memory (/proc)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def stop(proc: subprocess.Popen) -> None:
    proc.send_signal(signal.SIGINT)
    proc.wait(timeout=120)


@cli.command(
    "load",
    arg("--corpus", type=Path, default=HOTPOT / "corpus.jsonl"),
    arg("--queries", type=Path, default=HOTPOT / "queries.jsonl"),
    arg("--work", type=Path, help="folder of the index (default: a temporary one)"),
    arg("--seconds", type=float, default=20.0, help="seconds per cell"),
    arg("--clients", default="1,4,16"),
    arg("--strategies", default="hybrid,auto"),
    arg("--workers", default="1,2"),
    arg("--minutes", type=float, default=0.0, help="also a run of this many minutes, sampling RSS"),
    arg("--no-commit", action="store_true", help="skip the run committed during the load"),
)
def load(args) -> None:
    """`ragkit serve` under load on loopback: queries/s and p50/p95/p99 latency from 1, 4 and 16 concurrent
    clients (asyncio, one keep-alive connection each, for ``--seconds`` per cell), strategies hybrid and auto,
    with 1 and 2 worker processes side by side; then (``--minutes M``) M minutes of 4 clients sampling the RSS of
    the server and its workers; then a run committed while 4 clients query.

        python scripts/bench_query.py load [--corpus ../shared/data/hotpotqa-100/corpus.jsonl] [--seconds 20]
            [--clients 1,4,16] [--strategies hybrid,auto] [--workers 1,2] [--minutes 5] [--no-commit]
    """
    work = harness.workdir(args.work, "load")
    busy = os.getloadavg()[0]  # other processes on the machine take their share of its cores
    index = str(work / "idx")
    harness.indexed(args.corpus, Path(index))
    queries = query_texts(args.queries)
    rows = [row for workers in args.workers.split(",") for row in load_cells(index, queries, workers, args)]
    columns = (
        "workers",
        "strategy",
        "clients",
        "requests",
        "queries/s",
        "vs 1 client",
        "p50 ms",
        "p95 ms",
        "p99 ms",
        "errors",
        "server CPU",
        "queries per CPU s",
    )
    notes = [f"{os.cpu_count()} cores; 1-minute load average before the run: {busy:.1f} (other processes' too)"]
    title = f"POST /v1/query k 10 on {args.corpus.parent.name}, {args.seconds:.0f} s per cell"
    print_table(title, columns, rows, notes=notes)
    if args.minutes:
        memory_run(index, queries, args.minutes)
    if not args.no_commit:
        commit_under_load(work, index, queries)


def load_cells(index: str, queries: list[str], workers: str, args) -> list[tuple]:
    """One server with ``workers`` workers: a row per strategy × clients (with the CPU the server and its workers
    used, in cores: what the machine gave them)."""
    proc, info = start_server(index, "--workers", workers)
    pids, rows = [info["pid"], *info["workers"]], []
    try:
        for strategy in args.strategies.split(","):
            asyncio.run(drive(info, queries, 2, 3.0, {"k": 10, "strategy": strategy}))  # warm every worker
            base = None
            for n in (int(c) for c in args.clients.split(",")):
                cpu = sum(cpu_seconds(p) for p in pids)
                out = asyncio.run(drive(info, queries, n, args.seconds, {"k": 10, "strategy": strategy}))
                used = (sum(cpu_seconds(p) for p in pids) - cpu) / out["wall"]
                rate = len(out["lat"]) / out["wall"]
                base = base or rate
                cells = [f"{percentile(out['lat'], q):.1f}" for q in (0.5, 0.95, 0.99)]
                row = (workers, strategy, n, len(out["lat"]), f"{rate:.1f}", f"{rate / base:.2f}×", *cells)
                rows.append((*row, len(out["failed"]), f"{used:.2f} cores", f"{rate / used:.0f}" if used else "-"))
    finally:
        stop(proc)
    return rows


def cpu_seconds(pid: int) -> float:
    """A process's CPU time so far, user and system (/proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def memory_run(index: str, queries: list[str], minutes: float) -> None:
    """``minutes`` of 4 clients (hybrid and auto in turn), the RSS of the server and its workers each minute."""
    proc, info = start_server(index, "--workers", "2")
    rows = []
    try:
        pids = [info["pid"], *info["workers"]]
        total = 0
        for minute in range(1, int(minutes) + 1):
            for strategy in ("hybrid", "auto"):
                out = asyncio.run(drive(info, queries, 4, 30.0, {"k": 10, "strategy": strategy}))
                total += len(out["lat"])
                if out["failed"]:
                    sys.exit(f"failed requests: {out['failed'][:3]}")
            sizes = [rss_mib(p) for p in pids]
            rows.append(
                (minute, total, f"{sizes[0]:.0f}", " + ".join(f"{x:.0f}" for x in sizes[1:]), f"{sum(sizes):.0f}")
            )
    finally:
        stop(proc)
    growth = float(rows[-1][-1]) / float(rows[0][-1])
    print_table(
        f"RSS over {minutes:.0f} minutes, 2 workers, 4 clients (hybrid and auto in turn)",
        ("minute", "requests so far", "server MiB", "workers MiB", "total MiB"),
        rows,
        notes=[f"last / first minute: {growth:.3f}"],
    )


NEW_DOCUMENT = (
    "# Quokkapalooza\n\nQuokkapalooza is the yearly festival of the marsupial keepers of Rottnest Island, held in "
    "the week after the first full moon of March.\n"
)


def commit_under_load(work: Path, index: str, queries: list[str]) -> None:
    """4 clients query a copy of the index while `ragkit index` commits a run that adds a file: failed requests,
    the runs that answered, and whether the new file's word is found afterwards."""
    copy = work / "idx-commit"
    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(index, copy, ignore=shutil.ignore_patterns("server.json"))
    added = work / "added" / "quokkapalooza.md"
    added.parent.mkdir(parents=True, exist_ok=True)
    added.write_text(NEW_DOCUMENT)
    proc, info = start_server(str(copy), "--workers", "2")
    try:
        asyncio.run(drive(info, queries, 2, 3.0, {"k": 10, "strategy": "hybrid"}))

        async def during() -> tuple[dict, float, float, int]:
            until = asyncio.Event()
            queried = asyncio.ensure_future(drive(info, queries, 4, 1e9, {"k": 10, "strategy": "hybrid"}, until))
            await asyncio.sleep(2.0)
            cmd = ragkit_cmd("index", str(added), "--index", str(copy))
            quiet = asyncio.subprocess.DEVNULL
            indexer = await asyncio.create_subprocess_exec(*cmd, stdout=quiet, stderr=quiet)
            t = time.perf_counter()
            await indexer.wait()
            committed = time.perf_counter()
            await asyncio.sleep(5.0)
            until.set()
            return await queried, committed - t, committed, indexer.returncode

        out, seconds, committed, code = asyncio.run(during())
        found = [call_query(info, "Quokkapalooza marsupial festival") for _ in range(4)]
    finally:
        stop(proc)
    after = sorted({run for t, run in out["runs"] if t > committed})
    before = sorted({run for t, run in out["runs"] if t <= committed})
    rows = [
        ("`ragkit index` of the added file while 4 clients query", f"exit {code}, {seconds:.1f} s"),
        ("requests answered (2 s before, during, 5 s after)", len(out["lat"])),
        ("failed requests", len(out["failed"])),
        ("runs that answered requests sent before / after the commit", f"{before} / {after}"),
        ("the new word's document first (4 asks)", f"{sum(found)} of 4"),
    ]
    print_table(f"a run committed during the load ({copy.name}, 2 workers)", ("", "value"), rows)


def call_query(info: dict, text: str) -> bool:
    out = asyncio.run(
        Client(info["host"], info["port"]).post("/v1/query", {"query": text, "k": 1, "strategy": "lexical"})
    )
    return out[0] == 200 and json.loads(out[1])["passages"][0]["document"]["path"].endswith("quokkapalooza.md")


# --- team ----------------------------------------------------------------------------------------------------------


def team_requests(server, team, a_doc: str, b_doc: str) -> list[tuple[str, str, dict | None, int]]:
    """(label, path, body, expected status) of one token's side of the matrix (``a_doc``: a document of its own
    team, ``b_doc``: one of the other team's)."""
    out = []
    for strategy in team.STRATEGIES:
        for q in team.QUESTIONS:
            for label, extra in (
                ("", {}),
                (
                    " +answer +explain +trace",
                    {"answer": True, "answer_mode": "extract", "explain": True, "trace": True},
                ),
            ):
                out.append(
                    (f"query {strategy}{label}", "/v1/query", {"query": q, "strategy": strategy, "k": 5, **extra}, 200)
                )
    out += [
        (
            "query, filter: shared collection",
            "/v1/query",
            {"query": team.QUESTIONS[0], "filters": {"collection": "laws"}},
            200,
        ),
        (
            "query, filter: the other team",
            "/v1/query",
            {"query": team.QUESTIONS[0], "filters": {"collection": "OTHER"}},
            403,
        ),
        ("query, another model", "/v1/query", {"query": "x", "model": "/etc/passwd"}, 403),
        ("query, k over the limit", "/v1/query", {"query": "x", "k": 1000}, 413),
        ("stats", "/v1/stats", None, 200),
        ("documents", "/v1/documents?limit=100", None, 200),
        ("documents of the other team", "/v1/documents?collection=OTHER", None, 403),
        ("own document", f"/v1/documents/{a_doc}", None, 200),
        ("own document, lines", f"/v1/documents/{a_doc}/text?start=1&end=12", None, 200),
        ("own outline", f"/v1/documents/{a_doc}/outline", None, 200),
        ("other team's document", f"/v1/documents/{b_doc}", None, 404),
        ("other team's lines", f"/v1/documents/{b_doc}/text?start=1", None, 404),
        ("other team's outline", f"/v1/documents/{b_doc}/outline", None, 404),
    ]
    return out


@cli.command("team", arg("--work", type=Path, help="folder of the index (default: a temporary one)"))
def team_matrix(args) -> None:
    """`ragkit serve --tokens` on two workspaces that share people and a project (tests/team.py): every request
    of the matrix (tokens A, B, none, unknown × query with each strategy, with and without an answer, --explain
    and a trace; filters; a model; limits; stats; documents, lines, outlines of their own and the other team's)
    with its expected status, and the other team's markers (its names, identifiers, paths and document, section
    and chunk ids) found in each token's responses.

        python scripts/bench_query.py team [--work DIR]
    """
    team = harness.tests_module("team")
    work = harness.workdir(args.work, "team")
    index = work / "idx"
    if not (index / "manifest.json").exists():
        team.build_index(work / "src", index)
    tokens, env = team.tokens_file(work / "tokens.toml")
    markers = {c: team.MARKERS[c] + team.ids_of(index, c) for c in ("team-a", "team-b")}
    docs = {c: team.ids_of(index, c)[0] for c in ("team-a", "team-b")}
    rows = []
    with team.serve(index, work / "server.log", "--tokens", str(tokens), env=env) as server:
        for who, token, own, other in (
            ("A", server.token("a"), "team-a", "team-b"),
            ("B", server.token("b"), "team-b", "team-a"),
            ("no token", None, "team-a", "team-b"),
            ("unknown token", "x" * 32, "team-a", "team-b"),
        ):
            asked = team_requests(server, team, docs[own], docs[other])
            wrong, leaked, seen, t = [], set(), set(), time.perf_counter()
            for label, path, body, want in asked:
                path = path.replace("OTHER", other)
                body = json.loads(json.dumps(body).replace("OTHER", other)) if body else None
                want = want if token in (server.token("a"), server.token("b")) else 401
                status, out = server.call(path, body, token=token)
                if status != want:
                    wrong.append(f"{label}: {status}")
                text = json.dumps(out, ensure_ascii=False)
                leaked.update(team.leaks(text, markers[other], json.dumps(body) + path))
                seen.update(team.leaks(text, team.MARKERS[own]))
            seconds = time.perf_counter() - t
            good, shown = len(asked) - len(wrong), ", ".join(wrong[:3]) or "-"
            rows.append((who, len(asked), good, shown, len(leaked), len(seen), f"{seconds:.1f}"))
        log = server.log.read_text()
    secret = sum(v in log for v in env.values() if len(v) > 20)
    notes = [
        f"markers: {len(team.MARKERS['team-a'])} names, identifiers and paths per team, plus its document, section "
        "and chunk ids; own markers: how many of its own team's names the token's answers hold (the check has teeth)",
        f"token values in the server's log: {secret}; items dropped by the last check: {log.count('dropped')}",
    ]
    columns = ("token", "requests", "as expected", "unexpected", "other team's markers", "own markers", "seconds")
    print_table("ragkit serve --tokens: the matrix on two workspaces (tests/team.py)", columns, rows, notes=notes)


if __name__ == "__main__":
    cli.main()
