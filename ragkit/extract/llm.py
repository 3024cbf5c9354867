"""LLM entity and relation extraction (``--extract llm``): the GGUF model writes JSON per chunk.

The prompt is a plain one-shot completion (the default model is a small base
model without a chat template). Output that is not a JSON object with an
``entities`` list is skipped and counted, never fatal. Entities whose name
does not occur in the chunk are dropped (small models invent names); the
rest become the same mention / co-occurrence rows the rule extractor makes,
so everything downstream (canonical entities, communities, strategies) is
shared.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from ragkit.errors import Cancelled
from ragkit.extract.entities import normalize
from ragkit.records import EntityRows
from ragkit.text import split_sentences

TYPES = {
    "person",
    "organisation",
    "organization",
    "place",
    "location",
    "date",
    "law",
    "term",
    "event",
    "work",
    "product",
}
MAX_TOKENS = 256
PROMPT = """Extract the named entities and their relations from the text as JSON.

Text: Marie Curie worked at the University of Paris with Pierre Curie in 1903.
JSON: {{"entities": [{{"name": "Marie Curie", "type": "person"}}, {{"name": "University of Paris", \
"type": "organisation"}}, {{"name": "Pierre Curie", "type": "person"}}, {{"name": "1903", "type": "date"}}], \
"relations": [{{"source": "Marie Curie", "target": "Pierre Curie", "description": "worked together in 1903"}}, \
{{"source": "Marie Curie", "target": "University of Paris", "description": "worked at"}}]}}

Text: {text}
JSON:"""
STOP = ["\n\n", "\nText:"]


@dataclass
class LlmStats:
    chunks: int = 0
    invalid: int = 0  # outputs that were not the JSON asked for
    salvaged: int = 0  # outputs cut off mid-JSON whose complete entities were kept
    dropped_entities: int = 0  # names not found in the chunk


def prompt_for(text: str) -> str:
    return PROMPT.format(text=" ".join(text.split()))


def parse_output(raw: str) -> dict | None:
    """The first JSON object in the model's output, if it has an ``entities`` list.

    Small models often loop until ``max_tokens`` cuts the JSON off; then the
    complete inner objects are salvaged (``{"name": …}`` entities, ``{"source": …,
    "target": …}`` relations) and the result is marked ``"salvaged": True``.
    """
    start = raw.find("{")
    if start < 0:
        return None
    try:
        obj, _ = json.JSONDecoder().raw_decode(raw[start:])
    except json.JSONDecodeError:
        return _salvage(raw[start:])
    if not isinstance(obj, dict) or not isinstance(obj.get("entities"), list):
        return None
    return obj


def _salvage(raw: str) -> dict | None:
    if '"entities"' not in raw:
        return None
    entities, relations = [], []
    for m in re.finditer(r"\{[^{}\[\]]*\}", raw):
        try:
            item = json.loads(m.group(0))
        except json.JSONDecodeError:
            continue
        if isinstance(item, dict) and isinstance(item.get("name"), str):
            entities.append(item)
        elif isinstance(item, dict) and "source" in item and "target" in item:
            relations.append(item)
    if not entities:
        return None
    return {"entities": entities, "relations": relations, "salvaged": True}


def rows_from_output(obj: dict, chunk, document_id: str, stats: LlmStats) -> EntityRows:
    """Mention and co-occurrence rows of one chunk from the model's JSON (names grounded in the text)."""
    text = chunk.text
    low = text.lower()
    sentences = split_sentences(text) or [(0, len(text))]
    out = EntityRows()
    names: dict[str, str] = {}
    for e in obj.get("entities", []):
        name = e.get("name") if isinstance(e, dict) else None
        if not isinstance(name, str) or not normalize(name):
            continue
        pos = low.find(name.lower())
        if pos < 0:
            stats.dropped_entities += 1
            continue
        key = normalize(name)
        if key in names:  # small models repeat themselves
            continue
        kind = str(e.get("type", "")).lower()
        kind = {"organization": "organisation", "location": "place"}.get(kind, kind)
        span = next(((a, b) for a, b in sentences if a <= pos < b + 1), (None, None))
        names[key] = name
        out.mentions.append(
            {
                "chunk_id": chunk.id,
                "document_id": document_id,
                "entity": key,
                "raw": key,
                "surface": text[pos : pos + len(name)],
                "type": kind if kind in TYPES else "name",
                "sent_start": span[0],
                "sent_end": span[1],
            }
        )
    pairs = set()
    for r in obj.get("relations", []) or []:
        if not isinstance(r, dict):
            continue
        a, b = normalize(str(r.get("source", ""))), normalize(str(r.get("target", "")))
        if a in names and b in names and a != b and tuple(sorted((a, b))) not in pairs:
            a, b = sorted((a, b))
            pairs.add((a, b))
            desc = str(r.get("description") or "")[:300]
            out.cooccur.append(
                {
                    "chunk_id": chunk.id,
                    "document_id": document_id,
                    "a": a,
                    "b": b,
                    "weight": 1.0,
                    "note": f"{names[a]} — {names[b]}: {desc}" if desc else None,
                }
            )
    return out


def extract_chunks(
    chunks, document_id: str, generator, stats: LlmStats, progress=None, done: dict[str, str] | None = None
) -> EntityRows:
    """Entities and relations of one document's chunks, one model call per chunk (``done``: outputs so far)."""
    rows = EntityRows()
    for c in chunks:
        stats.chunks += 1
        raw = (done or {}).pop(c.id, None)
        if raw is None:
            raw = generator.complete(prompt_for(c.text), max_tokens=MAX_TOKENS, stop=STOP)
        obj = parse_output(raw)
        if obj is None:
            stats.invalid += 1
        else:
            stats.salvaged += bool(obj.get("salvaged"))
            rows.extend(rows_from_output(obj, c, document_id, stats))
        if progress:
            progress(1)
    return rows


SAMPLE = 2  # chunks timed before asking


def run(parsed, chunks, generator, confirm, reporter) -> LlmStats:
    """LLM extraction over a run's new chunks: estimate from a timed sample, confirm, extract with progress.

    ``confirm(message) -> bool`` decides whether to go on (the CLI asks on a terminal).
    """
    import time

    sample = chunks[:SAMPLE]
    t = time.perf_counter()
    done = {c.id: generator.complete(prompt_for(c.text), max_tokens=MAX_TOKENS, stop=STOP) for c in sample}
    per = (time.perf_counter() - t) / max(1, len(sample))
    message = (
        f"LLM extraction with {generator.name}: {len(chunks)} chunk(s), about "
        f"{_duration(per * len(chunks))} ({per:.1f} s per chunk, measured on {len(sample)})"
    )
    if not confirm(message):
        raise Cancelled("LLM extraction cancelled", hint="Use --extract rules for the fast rule-based extractor.")
    stats = LlmStats()
    by_doc: dict[str, list] = {}
    for c in chunks:
        by_doc.setdefault(c.document_id, []).append(c)
    reporter.start("extract", len(chunks))
    for pd in parsed:
        pd.entities = extract_chunks(
            by_doc.get(pd.document.id, []),
            pd.document.id,
            generator,
            stats,
            progress=lambda n: reporter.advance("extract", n),
            done=done,
        )
    reporter.finish("extract")
    return stats


def _duration(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"
