"""Feedback: what people said about what ragkit showed them, kept in the index's event log
(``ragkit.store.events``) for ``ragkit learn``.

Every result has a ``query_id``. A surface that shows results (the CLI, the session, ``ragkit serve``'s HTTP,
MCP and web page) logs the query with the passages it showed (``query_event``); feedback then names the query
and a passage by its rank, or the answer:

- ``good`` / ``bad``, or a grade 0–3 (0 bad … 3 exactly right); ``good`` is 3, ``bad`` 0;
- a passage opened after the query (``ragkit show passage``, ``GET /v1/documents/…?query_id=``, the session's
  ``:open``) is a weak positive, grade 1, ``kind`` "open".

A query asked with an answer is logged after it, with whether the answer abstained and its confidence: a rated
answer teaches ``ragkit learn`` when to say "the documents do not say" (ragkit/learn/abstain.py).

A passage is kept by its document path, section and the content hash of its first chunk, so that feedback
survives re-indexing; each event carries its time, its ``scope`` (the collections the asker may read, or the one
a query was filtered to, or "all") and the token's name. A token may rate only what it may read, and only the
queries it asked; its feedback trains only the model of its own scope, so it never changes what another team
sees.
"""

from __future__ import annotations

import hashlib
import json
import secrets
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ragkit.errors import BadQuery, Forbidden, UnknownId
from ragkit.records import QueryResult
from ragkit.rerank.ranker import ALL
from ragkit.store.events import EventLog

GRADES = {"good": 3, "bad": 0}
OPENED = 1  # the grade of a passage opened after its query


def new_query_id() -> str:
    return secrets.token_hex(8)


def content_hash(text: str) -> str:
    return hashlib.sha1(" ".join(text.split()).encode()).hexdigest()[:16]


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def query_event(
    result: QueryResult, k: int, filters: dict[str, Any], scope: str, token: str | None, source: str
) -> dict[str, Any]:
    """The log line of a query as it was shown: its text, settings and passages (each by path, section and
    its first chunk's content hash)."""
    texts = {h.chunk_id: h.text for h in result.hits}
    passages = [
        {
            "rank": p.rank,
            "path": p.path,
            "section": p.section,
            "hash": content_hash(texts.get(p.chunk_ids[0], p.text) if p.chunk_ids else p.text),
            "collection": p.collection,
            "section_id": p.section_id,
        }
        for p in result.passages
    ]
    return {
        "type": "query",
        "id": result.query_id,
        "time": _now(),
        "query": result.query,
        "strategy": result.strategy,
        "k": k,
        "filters": {key: v for key, v in filters.items() if isinstance(v, str | int | float | bool)},
        "language": result.plan.language,
        "scope": scope,
        "token": token,
        "source": source,
        "run": result.run,
        "passages": passages,
        **({"answer": _shown_answer(result.answer)} if result.answer is not None else {}),
    }


def _shown(asked: dict[str, Any], query_id: str, rank: int | None) -> None:
    """Feedback on the answer (``rank`` None) needs a query that showed one."""
    if rank is None and "answer" not in asked:
        raise BadQuery(
            f"query {query_id} showed no answer to rate",
            hint="rate one of its passages by rank, or rate the answer of a query asked for one",
        )


def _shown_answer(answer) -> dict[str, Any]:
    """What ``ragkit learn`` needs of the answer a query showed: whether it abstained, and how sure it was."""
    return {"mode": answer.mode, "abstained": bool(answer.abstained), "confidence": answer.confidence}


@dataclass
class Judged:
    """A logged query and the feedback given on it."""

    query: dict[str, Any]
    passages: list[dict[str, Any]] = field(default_factory=list)  # feedback events on passages, oldest first
    answers: list[dict[str, Any]] = field(default_factory=list)  # feedback events on the answer

    @property
    def id(self) -> str:
        return self.query["id"]

    def grades(self) -> dict[tuple[str, str, str], int]:
        """Each judged passage's grade, by (path, section, hash): the latest explicit one, else opened (1)."""
        out: dict[tuple[str, str, str], int] = {}
        explicit: set[tuple[str, str, str]] = set()
        for e in self.passages:
            key = (e["path"], e["section"], e["hash"])
            if e.get("kind") == "open":
                if key not in explicit:
                    out[key] = max(out.get(key, 0), OPENED)
            else:
                out[key] = int(e["grade"])
                explicit.add(key)
        return out


class Feedback:
    """The feedback of the index at ``index_dir``: logging queries, taking feedback, reading it back."""

    def __init__(self, index_dir: Path):
        self.log = EventLog(index_dir)

    def log_query(self, event: dict[str, Any]) -> None:
        self.log.append([event])

    def asked(self, query_id: str) -> dict[str, Any] | None:
        """The logged query ``query_id`` (one row of the log), or None."""
        return self.log.query(query_id)

    def give(
        self,
        query_id: str,
        *,
        rank: int | None = None,
        grade: int | str | None = None,
        kind: str = "explicit",
        source: str = "cli",
        token: str | None = None,
        readable: Iterable[str] | None = None,
        asked: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """Record feedback on passage ``rank`` of query ``query_id`` (its answer when ``rank`` is None) and
        return the event. ``grade``: "good", "bad" or 0–3, always said (no default: a rating that names none is
        refused). ``readable``: a token's collections (it may rate only the queries it asked and the passages it
        may read). Raises ``UnknownId`` for a query the log does not hold, ``BadQuery`` for a rank it did not
        show or a grade that is none of those, ``Forbidden`` for another's query or a passage out of scope."""
        value = _grade(grade)
        asked = asked if asked is not None else self.asked(query_id)
        if asked is None:
            raise UnknownId(f"no query {query_id!r} in this index's log", hint="give the query_id a result carries")
        if readable is not None and asked.get("token") != token:
            raise Forbidden(f"query {query_id} was not asked with this token")
        event = self._event(asked, query_id, rank, value, kind, source, token, readable)
        self.log.append([event])
        return event

    @staticmethod
    def _event(asked, query_id, rank, value, kind, source, token, readable) -> dict[str, Any]:
        _shown(asked, query_id, rank)
        event = {
            "type": "feedback",
            "query_id": query_id,
            "time": _now(),
            "target": "answer" if rank is None else "passage",
            "grade": value,
            "kind": kind,
            "source": source,
            "token": token,
            "scope": asked.get("scope", ALL),
        }
        if rank is not None:
            shown = {p["rank"]: p for p in asked.get("passages", [])}
            if rank not in shown:
                raise BadQuery(f"query {query_id} showed passages 1–{len(shown)}, not {rank}")
            passage = shown[rank]
            if readable is not None and passage.get("collection") not in set(readable):
                raise Forbidden(f"passage {rank} of query {query_id} is outside this token's collections")
            event |= {k: passage[k] for k in ("rank", "path", "section", "hash", "collection")}
        return event

    def give_many(self, rows: Iterable[dict[str, Any]], source: str = "file") -> int:
        """Bulk feedback (``ragkit feedback --file``): rows ``{"query_id", "rank"?, "grade" | "good": bool}``,
        each saying its grade; every row is checked before any is written, and all are written at once."""
        found: dict[str, dict[str, Any] | None] = {}
        events = []
        for n, row in enumerate(rows, start=1):
            try:
                if not isinstance(row, dict) or not isinstance(row.get("query_id"), str):
                    raise BadQuery("an object with a query_id is required")
                if "grade" in row:
                    grade = row["grade"]
                elif isinstance(row.get("good"), bool):
                    grade = "good" if row["good"] else "bad"
                else:
                    raise BadQuery('say "grade" (good, bad or 0–3) or "good": true/false')
                query_id = row["query_id"]
                if query_id not in found:
                    found[query_id] = self.asked(query_id)
                if found[query_id] is None:
                    raise UnknownId(f"no query {query_id!r} in this index's log")
                rank = row.get("rank")
                events.append(
                    self._event(found[query_id], query_id, rank, _grade(grade), "explicit", source, None, None)
                )
            except (BadQuery, UnknownId) as exc:
                raise BadQuery(f"line {n}: {exc}", hint=getattr(exc, "hint", None)) from exc
        self.log.append(events)
        return len(events)

    def judged(self, scope: str | None = None) -> list[Judged]:
        """The logged queries that got feedback (of ``scope``, or all), each with its feedback."""
        out: dict[str, Judged] = {}
        for q, e in self.log.rated():
            if scope is not None and q.get("scope", ALL) != scope:
                continue
            j = out.setdefault(q["id"], Judged(q))
            (j.answers if e.get("target") == "answer" else j.passages).append(e)
        return list(out.values())

    def export(self, out: Path) -> int:
        """Every event as JSON lines into ``out``; how many."""
        n = 0
        with Path(out).open("w") as fh:
            for e in self.log.read():
                fh.write(json.dumps(e, ensure_ascii=False) + "\n")
                n += 1
        return n

    def events(self) -> Iterator[dict[str, Any]]:
        return self.log.read()


def _grade(grade: int | str | None) -> int:
    """A grade said as "good", "bad" or 0–3; ``BadQuery`` for anything else (none said included)."""
    value = GRADES.get(grade, grade) if isinstance(grade, str) else grade
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= 3:
        raise BadQuery(
            f"grade: good, bad or 0–3, not {grade!r}" if grade is not None else "say whether it was good or bad",
            hint='--good, --bad or --grade 0..3 (HTTP and MCP: "good": true/false or "grade")',
        )
    return value
