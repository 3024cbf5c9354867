#!/usr/bin/env python
"""A shared index is data (issue 50), measured against an earlier checkout in one run.

    python scripts/bench_trust.py SUBCOMMAND --before <checkout> [options]     (SUBCOMMAND --help for its options)

Subcommands:
  crafted   DuckDB stores crafted to read the reader's files (a view over read_text, read_csv, read_parquet or
            glob, a table macro, a default reading a setting; one more each): per checkout, the files of the
            reader read, how each was met (a typed error or an answer), tracebacks printed by ``ragkit stats``,
            and the issue's case through ``ragkit serve`` (GET /v1/documents)
  names     manifests naming ``..``, absolute paths, another index's store, a LanceDB table outside: accepted
            per checkout, on a local folder and on S3 (moto's server), and files written outside the mirror
  rating    a rating with N logged queries (100,000): ``Index.feedback`` and ``POST /v1/feedback`` p50 / p95 ms,
            and the log's bytes per query

Each checkout runs in its own child process with its package first on the path (a git worktree of an earlier
commit for ``--before``) and this checkout's scripts/harness.py, whose open_index runs a checkout before issue 64
through its ragkit.api. Every subcommand also takes ``--json``.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import harness
from harness import REPO, arg, print_table

cli = harness.CLI(__doc__)
SECRET = "reader-secret-5e2b9"
BEFORE = arg("--before", type=Path, required=True, help="another checkout of ragkit (e.g. a git worktree)")
WORK = arg("--work", type=Path, default=None)

# run in a child process: sys.argv[1] the checkout, [2] what to do, [3] its JSON arguments, [4] this checkout's
# scripts/ (harness.open_index); prints RESULT {...}
CHILD = r"""
import json, sys, time, traceback
sys.path.insert(0, sys.argv[4]); sys.path.insert(0, sys.argv[1])
from pathlib import Path
import harness
from ragkit.config import QueryConfig
what, a = sys.argv[2], json.loads(sys.argv[3])
out = {}
if what == "read":  # every read a reader makes of an index: what it answered, or the error it raised
    for name, call in (
        ("documents", lambda ix: ix.documents(50, 0)),
        ("stats", lambda ix: ix.stats()),
        ("query", lambda ix: ix.query(a["query"], QueryConfig(strategy="local", k=3, log=False)).passages),
    ):
        try:
            ix = harness.open_index(a["index"])
            out[name] = {"answered": json.dumps(call(ix), default=str)}
        except Exception as exc:
            out[name] = {"error": type(exc).__name__, "message": str(exc)[:300]}
elif what == "log":  # n logged queries like the one asked, in batches of 1,000
    from ragkit.learn.feedback import Feedback, query_event
    ix = harness.open_index(a["index"])
    cfg = QueryConfig(k=10)
    result = ix.query(a["query"], cfg)
    event = query_event(result, 10, {}, "all", None, "cli")
    log = Feedback(ix.path).log
    ids = []
    for start in range(0, a["n"], 1000):
        batch = [dict(event, id=f"{i:016x}") for i in range(start, min(start + 1000, a["n"]))]
        log.append(batch)
        ids += [e["id"] for e in batch]
    out["ids"] = ids[:: max(1, len(ids) // a["ratings"])][: a["ratings"]]
elif what == "rate":
    ix = harness.open_index(a["index"])
    ms = []
    for qid in a["ids"]:
        t = time.perf_counter()
        ix.feedback(qid, rank=1, grade="good", source="cli")
        ms.append((time.perf_counter() - t) * 1000)
    out["ms"] = ms
print("RESULT " + json.dumps(out))
"""


def child(checkout: Path, what: str, args: dict, env: dict | None = None) -> dict:
    out = subprocess.run(
        [sys.executable, "-c", CHILD, str(checkout), what, json.dumps(args), str(Path(__file__).resolve().parent)],
        capture_output=True,
        text=True,
        env={**os.environ, "HF_HUB_OFFLINE": "1", **(env or {})},
    )
    line = next((ln for ln in out.stdout.splitlines() if ln.startswith("RESULT ")), None)
    if line is None:
        sys.exit(f"the checkout at {checkout} failed ({what}):\n{out.stderr[-3000:]}")
    return json.loads(line[len("RESULT ") :])


def checkouts(before: Path) -> list[tuple[str, Path]]:
    return [("before", before.resolve()), ("after", REPO)]


def sample_index(work: Path) -> Path:
    """The bundled sample indexed once (the real models), the index every case starts from."""
    index = work / "clean"
    if not (index / "manifest.json").is_file():
        harness.index_into([REPO / "ragkit" / "samples" / "handbook"], index)
    return index


def _store(index: Path) -> Path:
    manifest = json.loads((index / "manifest.json").read_text())
    return index / (manifest.get("store") or "store.duckdb")


def crafts(secret: Path) -> dict[str, list[str]]:
    d = secret.parent
    return {
        "view over read_text in documents' place": [
            "ALTER TABLE documents RENAME TO documents_real",
            f"CREATE VIEW documents AS SELECT * REPLACE (title || (SELECT content FROM read_text('{secret}')) AS "
            "title) FROM documents_real",
        ],
        "view over read_csv": [
            "ALTER TABLE documents RENAME TO documents_real",
            f"CREATE VIEW documents AS SELECT * REPLACE (title || (SELECT max(a) FROM read_csv('{d}/secret.csv')) "
            "AS title) FROM documents_real",
        ],
        "view over read_parquet": [
            "ALTER TABLE documents RENAME TO documents_real",
            f"CREATE VIEW documents AS SELECT * REPLACE (title || (SELECT max(a) FROM read_parquet('{d}/s.parquet')) "
            "AS title) FROM documents_real",
        ],
        "view over glob": [
            "ALTER TABLE documents RENAME TO documents_real",
            f"CREATE VIEW documents AS SELECT * REPLACE (title || (SELECT string_agg(file, ',') FROM glob('{d}/*')) "
            "AS title) FROM documents_real",
        ],
        "table macro behind a view": [
            f"CREATE MACRO leak() AS TABLE SELECT content FROM read_text('{secret}')",
            "ALTER TABLE documents RENAME TO documents_real",
            "CREATE VIEW documents AS SELECT * REPLACE (title || (SELECT content FROM leak()) AS title) "
            "FROM documents_real",
        ],
        "a setting in a default": [
            "CREATE TABLE notes (a VARCHAR DEFAULT (current_setting('home_directory')))",
            "INSERT INTO notes DEFAULT VALUES",
        ],
    }


def _craft(path: Path, statements: list[str]) -> None:
    import duckdb

    con = duckdb.connect(str(path))
    try:
        for s in statements:
            con.execute(s)
    finally:
        con.close()


def _cli_stats(checkout: Path, index: Path) -> tuple[int, bool, str]:
    env = {**os.environ, "PYTHONPATH": str(checkout), "HF_HUB_OFFLINE": "1"}
    out = subprocess.run(
        [sys.executable, "-m", "ragkit", "stats", "--index", str(index)],
        capture_output=True,
        text=True,
        env=env,
        cwd=checkout,  # (``python -m`` puts the working folder first on the path)
    )
    text = out.stdout + out.stderr
    return out.returncode, "Traceback" in text, text


class NotServed(Exception):
    """``ragkit serve`` exited before it answered: its exit code and the first line it printed."""

    def __init__(self, code: int | None, text: str):
        super().__init__(text[-1500:])
        self.code, self.first_line = code, (text.strip().splitlines() or [""])[0]


class Served:
    """``ragkit serve`` of one checkout on a free loopback port, while the block runs."""

    def __init__(self, checkout: Path, index: Path, log: Path, env: dict | None = None):
        self.checkout, self.index, self.log, self.env = checkout, index, log, env or {}

    def __enter__(self) -> Served:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        env = {**os.environ, "PYTHONPATH": str(self.checkout), "HF_HUB_OFFLINE": "1", **self.env}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "ragkit", "serve", "--index", str(self.index), "--port", str(port)],
            env=env,
            cwd=self.checkout,
            stdout=subprocess.DEVNULL,
            stderr=open(self.log, "w"),
        )
        self.url = f"http://127.0.0.1:{port}"
        deadline = time.time() + 180
        while time.time() < deadline:
            try:
                if self.call("/healthz")[0] == 200:
                    return self
            except OSError:
                pass
            if self.proc.poll() is not None:
                break
            time.sleep(0.3)
        self.__exit__()
        raise NotServed(self.proc.returncode, self.log.read_text())

    def __exit__(self, *exc) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()

    def call(self, path: str, body: dict | None = None) -> tuple[int, str]:
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.url + path, data=data, headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=120) as resp:
                return resp.status, resp.read().decode()
        except urllib.error.HTTPError as exc:
            return exc.code, exc.read().decode()


def _secret(work: Path) -> Path:
    import duckdb

    folder = work / "outside"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "secret.txt").write_text(SECRET)
    (folder / "secret.csv").write_text(f"a\n{SECRET}\n")
    duckdb.sql(f"COPY (SELECT '{SECRET}' AS a) TO '{folder / 's.parquet'}' (FORMAT parquet)")
    return folder / "secret.txt"


@cli.command("crafted", BEFORE, WORK)
def crafted(args) -> None:
    """Each crafted store read by each checkout (the index's documents, stats and a local-strategy query; ``ragkit
    stats``; the first case also through ``ragkit serve``'s GET /v1/documents): how it was met, and whether the
    reader's file was read."""
    work = harness.workdir(args.work, "trust")
    clean = sample_index(work)
    secret = _secret(work)
    rows = []
    for what, statements in crafts(secret).items():
        for label, checkout in checkouts(args.before):
            index = work / f"crafted-{label}"
            shutil.rmtree(index, ignore_errors=True)
            shutil.copytree(clean, index)
            _craft(_store(index), statements)
            found = child(checkout, "read", {"index": str(index), "query": "overtime limits"})
            met = {k: v.get("error") or "answered" for k, v in found.items()}
            read = sum(SECRET in json.dumps(v) or str(secret.parent) in v.get("answered", "") for v in found.values())
            code, tb, text = _cli_stats(checkout, index)
            read += SECRET in text
            served = "–"
            if what.startswith("view over read_text"):
                try:
                    with Served(checkout, index, work / f"serve-{label}.log") as srv:
                        status, body = srv.call("/v1/documents")
                    served = f"{status}" + (" (the file's text in titles)" if SECRET in body else "")
                    read += SECRET in body
                except NotServed as exc:
                    served = f"not started: exit {exc.code}, {exc.first_line[:60]}"
            calls = ", ".join(f"{k}: {v}" for k, v in met.items())
            rows.append((what, label, read, calls, f"exit {code}" + (", traceback" if tb else ""), served))
    print_table(
        "crafted stores: the reader's file read, and how each read was met",
        (
            "store",
            "code",
            "reads of the file",
            "api (documents, stats, query)",
            "ragkit stats",
            "serve GET /v1/documents",
        ),
        rows,
        width=200,
    )


NAMES = {
    "store ../outside.duckdb": ("store", "../outside.duckdb"),
    "store as an absolute path": ("store", "ABSOLUTE"),
    "another index's store": ("store", "../other/store.1.duckdb"),
    "graph ../graph.1": ("graph", "../other/graph.1"),
    "LanceDB table ../../other/lance/chunks": ("lance_table", "../../other/lance/chunks"),
}


def _manifest(data: dict, key: str, value: str, outside: Path) -> dict:
    value = str(outside / "outside.duckdb") if value == "ABSOLUTE" else value
    if key == "lance_table":
        return {**data, "last_run": {**data["last_run"], "lance_table": value}}
    return {**data, key: value}


@cli.command("names", BEFORE, WORK)
def names(args) -> None:
    """Manifests naming files outside the index, read by each checkout: locally, and from S3 (moto) into a new
    mirror (accepted: the reader answered from them; written outside: files the pull put beside the mirror)."""
    work = harness.workdir(args.work, "trust")
    clean = sample_index(work)
    other = work / "other"
    if not other.is_dir():
        shutil.copytree(clean, other)
    shutil.copy(_store(clean), work / "outside.duckdb")
    data = json.loads((clean / "manifest.json").read_text())
    rows = []
    for what, (key, value) in NAMES.items():
        for label, checkout in checkouts(args.before):
            index = work / f"names-{label}" / "idx"
            shutil.rmtree(index.parent, ignore_errors=True)
            shutil.copytree(clean, index)
            shutil.copytree(other, index.parent / "other")
            shutil.copy(work / "outside.duckdb", index.parent / "outside.duckdb")
            (index / "manifest.json").write_text(json.dumps(_manifest(data, key, value, work)))
            found = child(checkout, "read", {"index": str(index), "query": "overtime limits"})
            accepted = sum("answered" in v for v in found.values())
            errors = sorted({v["error"] for v in found.values() if "error" in v})
            rows.append((what, "local", label, accepted, ", ".join(errors) or "–", "–"))
    rows += _names_s3(args, work, clean, data)
    print_table(
        "manifests naming files outside the index",
        ("manifest names", "where", "code", "reads accepted (of 3)", "errors", "files written outside the mirror"),
        rows,
        width=180,
    )


def _names_s3(args, work: Path, clean: Path, data: dict) -> list[tuple]:
    s3 = harness.tests_module("s3")
    import boto3

    rows = []
    with s3.moto_s3(work / "moto.log", "trust", work / "moto-cache"):
        client = boto3.client("s3")
        for path in sorted(clean.rglob("*")):
            if path.is_file():
                client.upload_file(str(path), "trust", f"idx/{path.relative_to(clean)}")
        for what, (key, value) in NAMES.items():
            if key == "lance_table":
                continue  # (Lance reads the bucket itself: no file of the mirror)
            for label, checkout in checkouts(args.before):
                cache = work / f"s3-cache-{label}-{len(rows)}"
                shutil.rmtree(cache, ignore_errors=True)
                manifest = _manifest(data, key, value, work)
                client.put_object(Bucket="trust", Key="idx/manifest.json", Body=json.dumps(manifest).encode())
                client.put_object(Bucket="trust", Key="outside.duckdb", Body=(work / "outside.duckdb").read_bytes())
                found = child(
                    checkout, "read", {"index": "s3://trust/idx", "query": "overtime"}, {"RAGKIT_CACHE": str(cache)}
                )
                mirrors = [p for p in (cache / "remote").iterdir()] if (cache / "remote").is_dir() else []
                outside = [p for p in cache.rglob("*") if p.is_file() and not any(m in p.parents for m in mirrors)]
                accepted = sum("answered" in v for v in found.values())
                errors = sorted({v["error"] for v in found.values() if "error" in v})
                rows.append((what, "s3", label, accepted, ", ".join(errors) or "–", len(outside)))
    return rows


@cli.command(
    "rating", BEFORE, WORK, arg("--queries", type=int, default=100_000), arg("--ratings", type=int, default=20)
)
def rating(args) -> None:
    """``--queries`` logged queries (a real query's log line, ids varied), then ``--ratings`` ratings of queries
    spread over the log: in process (``Index.feedback``) and through ``ragkit serve`` (POST /v1/feedback)."""
    work = harness.workdir(args.work, "trust")
    clean = sample_index(work)
    rows = []
    for label, checkout in checkouts(args.before):
        index = work / f"rating-{label}"
        shutil.rmtree(index, ignore_errors=True)
        shutil.copytree(clean, index)
        shutil.rmtree(index / "feedback", ignore_errors=True)
        t = time.perf_counter()
        ids = child(checkout, "log", {"index": str(index), "query": "overtime limits", "n": args.queries,
                                      "ratings": args.ratings * 2})["ids"]  # fmt: skip
        log_s = time.perf_counter() - t
        ms = child(checkout, "rate", {"index": str(index), "ids": ids[: args.ratings]})["ms"]
        with Served(checkout, index, work / f"rating-serve-{label}.log") as srv:
            http = []
            for qid in ids[args.ratings :]:
                t = time.perf_counter()
                status, body = srv.call("/v1/feedback", {"query_id": qid, "rank": 1, "good": True})
                http.append((time.perf_counter() - t) * 1000)
                assert status == 200, body
        size = sum(p.stat().st_size for p in (index / "feedback").glob("*") if p.is_file())
        rows.append((label, f"{args.queries:,}", f"{log_s:.0f}", *_p(ms), *_p(http), f"{size / args.queries:,.0f}"))
    print_table(
        "a rating with a long query log",
        ("code", "logged queries", "logging s", "api p50 ms", "api p95 ms", "HTTP p50 ms", "HTTP p95 ms",
         "log bytes per query"),
        rows,
        width=170,
    )  # fmt: skip


def _p(ms: list[float]) -> tuple[str, str]:
    ms = sorted(ms)
    return f"{statistics.median(ms):.1f}", f"{ms[min(len(ms) - 1, int(0.95 * len(ms)))]:.1f}"


if __name__ == "__main__":
    cli.main()
