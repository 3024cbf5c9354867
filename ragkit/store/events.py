"""The index's query log: the queries people asked (with the passages and answer they were shown) and the feedback
they gave, as rows of one SQLite table keyed by id (``feedback/log.sqlite``).

It outlives every run: a run never touches it, and its events name passages by document path, section and the
content hash of their first chunk, never by row ids, so feedback still finds its passage after the index is
rebuilt (``ragkit.learn.feedback``). A query is one row (its ``query_id`` the key), a rating another (keyed by its
own id, indexed by the query it rates): a rating looks its query up by key, however long the log. Each event is
kept as deflated JSON (``ragkit feedback --export`` writes them back as JSON lines). Several processes write at
once (``ragkit serve``'s workers, a session, one-shot commands): SQLite's write-ahead log lets them, each write one
short transaction.

On object storage the table lives in the index's local mirror and goes up in batches: the events not yet
uploaded become one object ``feedback/<time>-<pid>-<random>.jsonl.gz`` once 200 wait or the oldest has waited a
minute (and when ``ragkit serve`` stops); a reader downloads the batches it has not seen (by name) when it
misses a query and before it reads the whole log. Objects of the older one-query-per-object form are read alike.
A log of the older JSON-lines form (``feedback/events.jsonl``) is taken into the table once and renamed
``events.jsonl.imported``.
"""

from __future__ import annotations

import atexit
import gzip
import hashlib
import json
import os
import secrets
import sqlite3
import threading
import time
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ragkit.errors import RagkitError
from ragkit.names import checked_name
from ragkit.store import remote

FOLDER = "feedback"
TABLE_FILE = "log.sqlite"
LEGACY = "events.jsonl"  # the log before it was a table
BATCH_EVENTS = 200  # object storage: events per uploaded batch at most
BATCH_SECONDS = 60.0  # object storage: how long an event waits for its batch at most

SCHEMA = """
CREATE TABLE IF NOT EXISTS events (
    seq INTEGER PRIMARY KEY,      -- the order events arrived in here
    id TEXT NOT NULL UNIQUE,      -- a query's query_id; a rating's own id
    type TEXT NOT NULL,           -- query | feedback
    query_id TEXT,                -- a rating: the query it rates
    data BLOB NOT NULL,           -- the event as deflated JSON
    batch TEXT,                   -- object storage: the batch it went up in (NULL: not yet)
    at REAL NOT NULL              -- when it was written here (seconds since the epoch)
);
CREATE INDEX IF NOT EXISTS events_rating ON events(query_id) WHERE query_id IS NOT NULL;
CREATE INDEX IF NOT EXISTS events_waiting ON events(batch) WHERE batch IS NULL;
CREATE TABLE IF NOT EXISTS batches (name TEXT PRIMARY KEY);  -- object storage: batches read or written here
"""

_OPEN: dict[tuple[int, str], tuple[sqlite3.Connection, threading.Lock]] = {}


def _pack(event: dict[str, Any]) -> bytes:
    return zlib.compress(json.dumps(event, ensure_ascii=False, separators=(",", ":")).encode(), 6)


def _unpack(data: bytes) -> dict[str, Any]:
    return json.loads(zlib.decompress(data))


def _id_of(event: dict[str, Any]) -> str:
    """An event's key: a query's id; a rating's own id (given one when written; an older rating without one is
    keyed by its content, so that reading it twice keeps it once)."""
    if event.get("type") == "query" and isinstance(event.get("id"), str):
        return event["id"]
    if isinstance(event.get("event_id"), str):
        return event["event_id"]
    return "h" + hashlib.sha1(json.dumps(event, sort_keys=True, ensure_ascii=False).encode()).hexdigest()[:16]


class EventLog:
    """The query log of the index at ``index_dir`` (a folder, or the mirror of an index on object storage)."""

    def __init__(self, index_dir: Path):
        self.index_dir = Path(index_dir)
        self.uri = remote.uri_of(self.index_dir)

    @property
    def path(self) -> Path:
        return self.index_dir / FOLDER / TABLE_FILE

    # ------------------------------------------------------------------ the table

    def _connection(self) -> tuple[sqlite3.Connection, threading.Lock]:
        key = (os.getpid(), str(self.path))
        if key not in _OPEN:
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                con = sqlite3.connect(self.path, timeout=30.0, isolation_level=None, check_same_thread=False)
                con.execute("PRAGMA journal_mode=WAL")
                con.execute("PRAGMA synchronous=NORMAL")
                con.executescript(SCHEMA)
            except (OSError, sqlite3.Error) as exc:
                raise RagkitError(f"cannot open the query log {self.path}: {exc}") from exc
            _OPEN[key] = (con, threading.Lock())
            self._import_legacy(con)
            if self.uri:
                atexit.register(self._flush_at_exit)
        return _OPEN[key]

    def _write(self, rows: list[tuple[str, str, str | None, bytes, str | None]]) -> int:
        """Insert ``rows`` (id, type, query_id, data, batch) in one transaction; how many were new."""
        con, lock = self._connection()
        now = time.time()
        try:
            with lock:
                con.execute("BEGIN IMMEDIATE")
                try:
                    before = con.total_changes
                    con.executemany(
                        "INSERT OR IGNORE INTO events (id, type, query_id, data, batch, at) VALUES (?, ?, ?, ?, ?, ?)",
                        [(*row, now) for row in rows],
                    )
                    con.execute("COMMIT")
                except BaseException:
                    con.execute("ROLLBACK")
                    raise
                return con.total_changes - before
        except sqlite3.Error as exc:
            raise RagkitError(f"cannot write the query log {self.path}: {exc}") from exc

    def _rows(self, sql: str, params: tuple = ()) -> list[tuple]:
        con, lock = self._connection()
        try:
            with lock:
                return con.execute(sql, params).fetchall()
        except sqlite3.Error as exc:
            raise RagkitError(f"cannot read the query log {self.path}: {exc}") from exc

    @staticmethod
    def _row(event: dict[str, Any], batch: str | None = None) -> tuple[str, str, str | None, bytes, str | None]:
        kind = str(event.get("type") or "")
        query_id = event.get("query_id") if kind == "feedback" else None
        return _id_of(event), kind, query_id if isinstance(query_id, str) else None, _pack(event), batch

    # ------------------------------------------------------------------ what callers use

    def append(self, events: list[dict[str, Any]]) -> None:
        """Keep ``events`` (in one transaction); a rating is given its own ``event_id`` first."""
        if not events:
            return
        for e in events:
            if e.get("type") == "feedback":
                e.setdefault("event_id", "f" + secrets.token_hex(8))
        self._write([self._row(e) for e in events])
        if self.uri:
            self.flush(force=False)

    def query(self, query_id: str) -> dict[str, Any] | None:
        """The logged query ``query_id`` (one row looked up by key), or None."""
        found = self._query(query_id)
        if found is None and self.uri and self.sync():
            found = self._query(query_id)
        return found

    def _query(self, query_id: str) -> dict[str, Any] | None:
        rows = self._rows("SELECT data FROM events WHERE id = ? AND type = 'query'", (query_id,))
        return _unpack(rows[0][0]) if rows else None

    def read(self) -> Iterator[dict[str, Any]]:
        """Every event, in the order they arrived here."""
        if self.uri:
            self.sync()
        for (data,) in self._rows("SELECT data FROM events ORDER BY seq"):
            yield _unpack(data)

    def rated(self) -> Iterator[tuple[dict[str, Any], dict[str, Any]]]:
        """Each rating with the query it rates, ratings in the order they arrived (ratings of a query the log
        lacks are left out)."""
        if self.uri:
            self.sync()
        rows = self._rows(
            "SELECT q.data, f.data FROM events f JOIN events q ON q.id = f.query_id AND q.type = 'query' "
            "WHERE f.type = 'feedback' ORDER BY f.seq"
        )
        queries: dict[bytes, dict[str, Any]] = {}
        for q, f in rows:
            if q not in queries:
                queries[q] = _unpack(q)
            yield queries[q], _unpack(f)

    def count(self) -> int:
        return int(self._rows("SELECT count(*) FROM events")[0][0])

    def size(self) -> int:
        """Bytes the log's table takes here (with its write-ahead file)."""
        return sum(p.stat().st_size for p in self.path.parent.glob(TABLE_FILE + "*") if p.is_file())

    # ------------------------------------------------------------------ object storage

    def flush(self, force: bool = True) -> int:
        """Object storage: upload the events not yet uploaded as one batch (``force`` off: only once
        ``BATCH_EVENTS`` wait or the oldest has waited ``BATCH_SECONDS``); how many went up."""
        if not self.uri:
            return 0
        waiting = self._rows("SELECT count(*), min(at) FROM events WHERE batch IS NULL")[0]
        if not waiting[0] or (not force and waiting[0] < BATCH_EVENTS and time.time() - waiting[1] < BATCH_SECONDS):
            return 0
        name = f"{time.time_ns()}-{os.getpid()}-{secrets.token_hex(4)}.jsonl.gz"
        con, lock = self._connection()
        with lock:  # claim the waiting events for this batch (another process claims none of them)
            con.execute("BEGIN IMMEDIATE")
            con.execute("UPDATE events SET batch = ? WHERE batch IS NULL", (name,))
            con.execute("INSERT OR IGNORE INTO batches (name) VALUES (?)", (name,))
            con.execute("COMMIT")
        rows = self._rows("SELECT data FROM events WHERE batch = ? ORDER BY seq", (name,))
        lines = b"".join(json.dumps(_unpack(d), ensure_ascii=False).encode() + b"\n" for (d,) in rows)
        try:
            remote.Remote(self.index_dir).write(f"{FOLDER}/{name}", gzip.compress(lines, 6))
        except BaseException:
            with lock:  # not uploaded: the events wait for the next batch
                con.execute("UPDATE events SET batch = NULL WHERE batch = ?", (name,))
                con.execute("DELETE FROM batches WHERE name = ?", (name,))
            raise
        return len(rows)

    def sync(self) -> int:
        """Object storage: bring the batches this mirror has not seen; how many events were new."""
        bucket = remote.Remote(self.index_dir)
        seen = {r[0] for r in self._rows("SELECT name FROM batches")}
        new = 0
        for name in sorted(set(bucket.names_under(FOLDER)) - seen):
            try:
                checked_name("feedback", name, f"{self.uri}/{FOLDER}")
            except RagkitError:
                continue  # not a batch of ragkit's: never read
            data = bucket.read(f"{FOLDER}/{name}") or b""
            if name.endswith(".gz"):
                try:
                    data = gzip.decompress(data)
                except (OSError, EOFError):
                    continue
            events = list(_parse(data.decode(errors="replace")))
            new += self._write([self._row(e, batch=name) for e in events])
            con, lock = self._connection()
            with lock:
                con.execute("INSERT OR IGNORE INTO batches (name) VALUES (?)", (name,))
        return new

    def _flush_at_exit(self) -> None:
        try:
            self.flush(force=False)
        except Exception:  # at exit a failed upload stays for the next process: nothing is lost
            pass

    def _import_legacy(self, con: sqlite3.Connection) -> None:
        """The older JSON-lines log, taken into the table once (then renamed ``events.jsonl.imported``)."""
        legacy = self.path.parent / LEGACY
        if not legacy.is_file():
            return
        try:
            events = list(_parse(legacy.read_text(errors="replace")))
            self._write([self._row(e, batch="imported" if self.uri else None) for e in events])
            os.replace(legacy, legacy.with_name(LEGACY + ".imported"))
        except OSError:
            pass  # another process took it in first


def _parse(chunk: str) -> Iterator[dict[str, Any]]:
    for line in chunk.splitlines():
        if not line.strip():
            continue
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if isinstance(event, dict):
            yield event
