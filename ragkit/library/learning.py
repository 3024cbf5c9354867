"""Feedback and learning (private to ``Index``): ratings of logged queries, and what the index learns from them."""

from __future__ import annotations

from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import Any

from ragkit.answer import Answer
from ragkit.answer.scorer import default_model as default_answer_model
from ragkit.config import QueryConfig
from ragkit.contents import (
    section,
)
from ragkit.errors import BadQuery, UnknownId
from ragkit.learn import abstain as abstaining
from ragkit.learn import ranker as ranking
from ragkit.learn.feedback import Feedback
from ragkit.library.answering import answer
from ragkit.library.asking import query, retrieve
from ragkit.reader import IndexReader
from ragkit.store import remote


def feedback(
    index_dir: Path,
    query_id: str,
    rank: int | None,
    grade: int | str | None,
    *,
    kind: str = "explicit",
    source: str = "cli",
    token: str | None = None,
    readable: tuple[str, ...] | None = None,
) -> dict[str, Any]:
    """Feedback on passage ``rank`` of a logged query (its answer when ``rank`` is None): ``good``, ``bad`` or a
    grade 0–3; ``kind`` "open" for a passage opened after it (a weak positive). The event is returned."""
    return Feedback(index_dir).give(
        query_id, rank=rank, grade=grade, kind=kind, source=source, token=token, readable=readable
    )


def open_passage(
    reader: IndexReader,
    query_id: str,
    rank: int,
    *,
    source: str = "cli",
    token: str | None = None,
    readable: tuple[str, ...] | None = None,
) -> dict[str, Any]:
    """The section passage ``rank`` of a logged query comes from (``section``'s answer), kept in the log as a
    click on it (a weak positive)."""
    fb = Feedback(reader.index_dir)
    asked = fb.asked(query_id)
    shown = {p["rank"]: p for p in (asked or {}).get("passages", [])}
    if rank not in shown:
        raise UnknownId(f"no passage {rank} of query {query_id!r} in this index's log")
    found = section(reader, shown[rank]["section_id"], readable)
    fb.give(query_id, rank=rank, grade=1, kind="open", source=source, token=token, readable=readable, asked=asked)
    return found


def flush_log(index_dir: Path) -> int:
    """An index on object storage: upload the queries and ratings this machine logged and has not uploaded yet
    (they go up in batches); how many. A local index: nothing to do, 0."""
    return Feedback(index_dir).log.flush()


def feedback_file(index_dir: Path, path: Path) -> int:
    """Bulk feedback from JSON lines (``{"query_id", "rank", "grade" | "good"}``); how many were recorded."""
    import json

    try:
        rows = [json.loads(line) for line in Path(path).read_text().splitlines() if line.strip()]
    except (OSError, ValueError) as exc:
        raise BadQuery(f"cannot read feedback from {path}: {exc}") from exc
    return Feedback(index_dir).give_many(rows, source="file")


def feedback_export(index_dir: Path, out: Path) -> int:
    """Every logged query and feedback event into ``out`` (JSON lines); how many."""
    return Feedback(index_dir).export(out)


def learn(
    reader: IndexReader,
    labels: tuple[Path, ...] = (),
    *,
    dry_run: bool = False,
    min_queries: int = ranking.MIN_QUERIES,
    min_answers: int = abstaining.MIN_ANSWERS,
) -> list[ranking.Outcome]:
    """Fit a ranker per scope from the index's feedback (and ``labels``: BEIR folders or labelled questions),
    adopting each only when it ranks the held-out queries better (``ranking.learn``); and, where answers were
    rated, the confidence under which they abstain, per scope and language, adopted only when it decides the
    held-out rated answers better (``abstaining.learn``)."""
    judged = Feedback(reader.index_dir).judged()
    out = ranking.learn(reader, judged, retrieve, labels, dry_run=dry_run, min_queries=min_queries)
    out += abstaining.learn(
        reader, judged, _extract, partial(_abstain_threshold, reader), dry_run=dry_run, min_answers=min_answers
    )
    if any(o.adopted for o in out):
        remote.push_learned(reader.index_dir)  # an index on object storage: for every reader, not this one only
    return out


def _extract(reader: IndexReader, text: str, cfg: QueryConfig) -> Answer:
    """The extractive answer a query gets (``ragkit learn`` asks rated queries again)."""
    return answer(query(reader, text, cfg), replace(cfg, answer_mode="extract"), reader=reader)


def _abstain_threshold(reader: IndexReader, scope: str, language: str) -> float:
    """The confidence under which a query of ``scope`` in ``language`` abstains now."""
    learned = reader.rankers.abstain_thresholds(scope)
    return learned.get(language, default_answer_model().threshold_for(language, reader.manifest.embedder.name))


def unlearn(reader: IndexReader) -> int:
    """Drop the adopted rankers and learned answer thresholds (the shipped default, the hand-set weights and the
    answer model's own thresholds hold again); how many scopes had either."""
    n = ranking.reset(reader.index_dir)
    remote.push_learned(reader.index_dir)
    return n
