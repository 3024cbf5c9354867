"""Rich terminal output and the JSON schema (``ragkit.query/1``)."""

from __future__ import annotations

import re
from typing import Any

from ragkit.records import Passage, Plan, QueryResult

SCHEMA = "ragkit.query/1"
DISPLAY_CHARS = 1500


def write_json(obj: Any) -> None:
    """One JSON line on stdout, as every ``--json`` output of the CLI writes it."""
    import json
    import sys

    sys.stdout.write(json.dumps(obj, ensure_ascii=False, default=str) + "\n")
    sys.stdout.flush()


def emit_json(obj: dict[str, Any], as_json: bool) -> None:
    """A ``ragkit.query/1`` object as ``ragkit query --json`` prints it (one object) or ``--jsonl`` (a line per
    passage, then the answer's), whether a server or this process answered."""
    if as_json:
        write_json(obj)
        return
    head = {"query_id": obj.get("query_id"), "query": obj["query"]}
    for p in obj["passages"]:
        write_json({**head, **p})
    if "answer" in obj or "answer_error" in obj:
        write_json({**head, "answer": obj.get("answer"), "answer_error": obj.get("answer_error")})


def passage_dict(p: Passage, explain: bool = False) -> dict[str, Any]:
    d = {
        "rank": p.rank,
        "score": round(p.score, 6),
        "anchor_score": round(p.anchor_score, 6),
        "document": {
            "id": p.document_id,
            "path": p.path,
            "title": p.title,
            "doc_type": p.doc_type,
            "collection": p.collection,
        },
        "section": p.section,
        "section_id": p.section_id,
        "lines": [p.line_start, p.line_end],
        "pages": p.pages,
        "text": p.text,
        "chunk_ids": p.chunk_ids,
        "tokens": p.token_count,
        "coherence": p.coherence_score,
    }
    if p.ocr is not None:  # read by OCR from a scan
        d["ocr"] = {"confidence": p.ocr}
    if explain:
        d["features"] = p.features
    return d


def passage_from_dict(d: dict[str, Any]) -> Passage:
    """The passage ``passage_dict`` printed (what a server's answer holds)."""
    doc = d["document"]
    return Passage(
        rank=d["rank"],
        score=d["score"],
        anchor_score=d["anchor_score"],
        document_id=doc["id"],
        path=doc["path"],
        title=doc["title"],
        section=d["section"],
        line_start=d["lines"][0],
        line_end=d["lines"][1],
        text=d["text"],
        chunk_ids=d["chunk_ids"],
        token_count=d["tokens"],
        features=d.get("features", {}),
        coherence_score=d["coherence"],
        doc_type=doc["doc_type"],
        collection=doc["collection"],
        pages=d.get("pages"),
        section_id=d.get("section_id", ""),
        ocr=(d.get("ocr") or {}).get("confidence"),
    )


def result_from_dict(obj: dict[str, Any]) -> QueryResult:
    """What the terminal shows of a ``ragkit.query/1`` object (no hits, no answer: a server's result)."""
    return QueryResult(
        query=obj["query"],
        strategy=obj["strategy"],
        plan=Plan.from_dict(obj["plan"]),
        passages=[passage_from_dict(p) for p in obj["passages"]],
        hits=[],
        timings_ms=obj["timings_ms"],
        context_items=obj.get("context", []),
        run=obj.get("metadata", {}).get("run"),
        query_id=obj.get("query_id", ""),
    )


def trace_line(r: QueryResult) -> str:
    """One JSON line with every candidate's features (telemetry for tuning weights)."""
    import json
    import time

    return json.dumps(
        {
            "schema": "ragkit.trace/1",
            "time": time.time(),
            "query": r.query,
            "strategy": r.strategy,
            "mode": r.plan.rerank.get("mode"),
            "candidates": [
                {
                    "chunk_id": h.chunk_id,
                    "document": h.path,
                    "section": h.header,
                    "retrieval_score": h.retrieval_score,
                    "score": h.score,
                    "features": h.features,
                    "returned": any(h.chunk_id in p.chunk_ids for p in r.passages),
                }
                for h in r.hits
            ],
        },
        ensure_ascii=False,
    )


def metadata(r: QueryResult) -> dict[str, Any]:
    """Seed 001's QueryMetadata: strategy, latency per stage, tokens used, context count, LLM calls."""
    a = r.answer
    return {
        "strategy": r.strategy,
        "run": r.run,
        "timings_ms": r.timings_ms,
        "passages": len(r.passages),
        "context_count": len(a.sources) if a else 0,
        "tokens": {"prompt": a.prompt_tokens, "completion": a.completion_tokens} if a else None,
        "llm_calls": a.llm_calls if a else 0,
    }


def result_dict(r: QueryResult, explain: bool = False) -> dict[str, Any]:
    out = {
        "schema": SCHEMA,
        "query_id": r.query_id,
        "query": r.query,
        "strategy": r.strategy,
        "plan": r.plan.to_dict(),
        "passages": [passage_dict(p, explain) for p in r.passages],
        "timings_ms": r.timings_ms,
        "metadata": metadata(r),
    }
    if r.context_items:
        out["context"] = r.context_items
    if r.context is not None:
        out["packed_context"] = r.context.to_dict()
    if r.answer is not None:
        out["answer"] = answer_dict(r.answer)
    if r.answer_error is not None:
        out["answer_error"] = r.answer_error
    return out


def answer_dict(a) -> dict[str, Any]:
    return {
        "text": a.text,
        "model": a.model,
        "citations": [
            {"source": c.number, "rank": c.rank, "path": c.path, "lines": list(c.lines), "pages": c.pages}
            for c in a.citations
        ],
        "dropped_citations": a.dropped_citations,
        "sources": a.sources,
        "prompt_tokens": a.prompt_tokens,
        "completion_tokens": a.completion_tokens,
        "seconds": a.seconds,
        "first_token_seconds": a.first_token_seconds,
        "tokens_per_second": a.tokens_per_second,
        "llm_calls": a.llm_calls,
        "map_notes": a.map_notes,
        "mode": a.mode,
        "abstained": a.abstained,
        "confidence": a.confidence,
        "language": a.language,
        "quotes": [
            {"rank": q.rank, "path": q.path, "lines": list(q.lines), "pages": q.pages, "text": q.text}
            | {"start": q.start, "end": q.end}
            for q in a.quotes
        ],
        "sentences": [
            {
                "text": c.text,
                "cited": c.cited,
                "support": round(c.support, 3),
                "supported": c.supported,
                "missing": c.missing,
                "repointed": c.repointed,
            }
            for c in a.claims
        ],
        "grounded": a.grounded,
        "check_ms": a.check_ms,
        "replaced": a.replaced,
        "note": a.note,
    }


def query_terms(text: str) -> list[str]:
    """Words worth highlighting: the query's words of three or more letters, minus negated ones."""
    text = re.sub(r"(?:^|\s)-\S+", " ", text)
    return sorted({w for w in re.findall(r"\w{3,}", text.lower())}, key=len, reverse=True)


def features_table(features: dict[str, float], weights: dict[str, float]):
    from rich.table import Table

    t = Table(show_header=True, header_style="dim", box=None, padding=(0, 1))
    t.add_column("feature", style="dim")
    t.add_column("value", justify="right")
    t.add_column("weight", justify="right", style="dim")
    t.add_column("contribution", justify="right")
    for name, value in features.items():
        w = weights.get(name, 0.0)
        t.add_row(name, f"{value:.3f}", f"{w:.2f}", f"{w * value:.3f}")
    return t


def print_result(console, r: QueryResult, explain: bool = False) -> None:
    from rich.panel import Panel
    from rich.text import Text

    rr = r.plan.rerank
    if rr.get("reason"):
        console.print(
            f"[yellow]note:[/] --rerank {rr['requested']} fell back to {rr['used']}: {rr['reason']}", soft_wrap=True
        )
    if not r.passages:
        console.print("[yellow]No passages found.[/] Try other words, fewer filters, or --strategy lexical.")
        return
    for item in r.context_items:
        kind = item.get("type")
        if kind == "community":
            console.print(
                Panel(
                    Text(item["report"]),
                    title=f"community {item['id']} (similarity {item['similarity']:.2f})",
                    border_style="cyan",
                )
            )
        elif kind == "entity":
            console.print(
                Text.assemble(
                    ("entity ", "dim"),
                    (item.get("name") or item["entity"], "bold cyan"),
                    (f" ({item.get('entity_type', '')})  {item['score']:.3f}  ", "dim"),
                    (item.get("description", "").split("\n")[0][:160], "dim"),
                ),
                soft_wrap=True,
            )
        elif kind == "summary":
            console.print(
                Panel(
                    Text(item["text"]),
                    title=f"{'section' if item['level'] == 1 else 'document'} "
                    f"summary: {item['title']} (similarity {item['similarity']:.2f})",
                    border_style="cyan",
                )
            )
        elif kind == "relation":
            console.print(
                Text.assemble(
                    ("relation ", "dim"),
                    (f"{item['source']} — {item['target']}", "cyan"),
                    (f"  {item['description'][:160]}", "dim"),
                ),
                soft_wrap=True,
            )
    terms = query_terms(r.query)
    for p in r.passages:
        title = Text.assemble(
            (f"[{p.rank}] ", "bold cyan"),
            (p.path, "bold"),
            (p.location, "cyan"),
            (f"  score {p.score:.4f}", "dim"),
            (f"  OCR'd scan, confidence {p.ocr:.0f}" if p.ocr is not None else "", "yellow"),
        )
        quoted = [(q.start, q.end) for q in (r.answer.quotes if r.answer is not None else []) if q.rank == p.rank]
        limit = max([DISPLAY_CHARS, *(end for _, end in quoted)])  # a quote is shown whole, inside its passage
        body = p.text if len(p.text) <= limit else p.text[:limit].rstrip() + " …"
        text = Text(body)
        for start, end in quoted:
            text.stylize("bold green underline", start, end)
        if terms:
            text.highlight_regex(r"(?i)\b(" + "|".join(re.escape(t) for t in terms) + r")\w*", "bold yellow")
        console.print(title)
        console.print(Text(p.section, style="magenta"))
        console.print(Panel(text, border_style="dim", padding=(0, 1)))
        if explain and p.features:
            console.print(features_table(p.features, r.plan.weights))
    t = r.timings_ms
    console.print(Text(f"{len(r.passages)} passages · {r.strategy} · {t.get('total', 0):.0f} ms", style="dim"))
    if r.query_id and r.passages:
        console.print(Text(f"query {r.query_id} · ragkit feedback {r.query_id} --passage N --good|--bad", style="dim"))
