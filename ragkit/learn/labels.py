"""The labelled files ``ragkit learn --labels`` reads, each query with what says whether a candidate holds its
answer: a BEIR folder (queries.jsonl and qrels/*.tsv: the judged documents by their ids) or questions in JSON
lines with their gold ``section`` (and ``law``), ``doc`` and ``pages``, or ``answer`` (ragkit/learn/ranker.py
labels the candidates with them: ``label_groups``)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ragkit.records import Hit


def labelled_queries(path: Path) -> list[tuple[str, Callable[[Hit], bool]]]:
    """The queries of a labelled file or folder, each with its judge (a candidate holds the answer or not)."""
    path = Path(path)
    return _beir(path) if path.is_dir() else _questions(path)


def _beir(folder: Path) -> list[tuple[str, Any]]:
    queries = {}
    with (folder / "queries.jsonl").open() as fh:
        for line in fh:
            if line.strip():
                q = json.loads(line)
                queries[str(q["_id"])] = q["text"]
    relevant: dict[str, set[str]] = {}
    for qrels in sorted((folder / "qrels").glob("*.tsv")):
        for n, line in enumerate(qrels.read_text().splitlines()):
            parts = line.split("\t")
            if n == 0 or len(parts) < 3 or not parts[2].strip().lstrip("-").isdigit() or int(parts[2]) <= 0:
                continue
            relevant.setdefault(parts[0], set()).add(parts[1])
    return [(queries[q], lambda h, docs=docs: h.external_id in docs) for q, docs in relevant.items() if q in queries]


def _questions(path: Path) -> list[tuple[str, Any]]:
    out = []
    for line in Path(path).read_text().splitlines():
        if not line.strip():
            continue
        q = json.loads(line)
        text = q.get("query") or q.get("text")
        if not text or q.get("answerable") is False:
            continue
        out.append((text, _judge(q)))
    return out


def _norm(text: str) -> str:
    return " ".join(re.findall(r"\w+", str(text).lower()))


def _judge(q: dict[str, Any]):
    """Whether a candidate holds a labelled question's answer: in its gold section (of its law or document),
    on its gold pages, or holding its gold answer."""
    if q.get("section"):
        sections = q["section"] if isinstance(q["section"], list) else [q["section"]]
        law = q.get("law")
        return lambda h: (
            h.header.split(" > ")[-1] in sections
            and (not law or any(part == law or part.startswith(f"{law}_") for part in Path(h.path).parts))
        )
    if q.get("pages") and q.get("doc"):
        first, last = q["pages"]
        return lambda h: (
            h.path.endswith(q["doc"])
            and h.page_start is not None
            and h.page_start <= last
            and (h.page_end or h.page_start) >= first
        )
    gold = _norm(q.get("answer", ""))
    return lambda h: bool(gold) and gold in _norm(h.text)
