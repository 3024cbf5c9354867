"""Passage assembly and context packing.

Assembly: hits of one section with consecutive chunk indexes form runs; each
run is cut into passages anchored on their best chunk and grown towards the
better neighbour while the neighbour is relevant (normalised score ≥
``MIN_RELEVANCE`` among the candidates) and the token budget allows. Passages
never cross a section and never overlap. ``coherence_score`` is the mean
cosine similarity of consecutive chunks (1.0 for a single chunk).

Packing: the best passages that fit a token budget, grouped by document and
put back in document order, each block labelled with its source.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

import numpy as np

from ragkit.records import Hit, Passage

MIN_RELEVANCE = 0.25


def _runs(hits: list[Hit]) -> list[list[Hit]]:
    """Split hits of one section into runs of consecutive chunk indexes."""
    hits = sorted(hits, key=lambda h: h.chunk_index)
    runs = [[hits[0]]]
    for h in hits[1:]:
        if h.chunk_index == runs[-1][-1].chunk_index + 1:
            runs[-1].append(h)
        else:
            runs.append([h])
    return runs


def _grow(run: list[Hit], budget: int, relevant) -> list[list[Hit]]:
    """Cut a run into pieces within ``budget``: best chunk first, then its better relevant neighbour."""
    out = []
    rest = list(run)
    while rest:
        best = max(range(len(rest)), key=lambda i: rest[i].score)
        lo = hi = best
        tokens = rest[best].token_count
        while True:
            left = rest[lo - 1] if lo > 0 else None
            right = rest[hi + 1] if hi + 1 < len(rest) else None
            options = [
                (c.score, side)
                for c, side in ((left, -1), (right, 1))
                if c is not None and relevant(c) and tokens + c.token_count <= budget
            ]
            if not options:
                break
            _, side = max(options)
            if side < 0:
                lo -= 1
                tokens += rest[lo].token_count
            else:
                hi += 1
                tokens += rest[hi].token_count
        out.append(rest[lo : hi + 1])
        if lo:
            out.extend(_grow(rest[:lo], budget, relevant))
        rest = rest[hi + 1 :]
    return out


def coherence(piece: list[Hit]) -> float:
    vecs = [h.vector for h in piece]
    if len(piece) < 2 or any(v is None for v in vecs):
        return 1.0
    sims = [float(np.dot(a, b) / ((np.linalg.norm(a) * np.linalg.norm(b)) or 1.0)) for a, b in zip(vecs, vecs[1:])]
    return sum(sims) / len(sims)


def assemble(hits: list[Hit], k: int, budget: int) -> list[Passage]:
    if not hits:
        return []
    top, low = max(h.score for h in hits), min(h.score for h in hits)
    span = (top - low) or 1.0

    def relevant(h: Hit) -> bool:
        return (h.score - low) / span >= MIN_RELEVANCE

    groups: dict[tuple[str, str], list[Hit]] = defaultdict(list)
    for h in hits:
        groups[(h.document_id, h.section_id)].append(h)
    pieces: list[list[Hit]] = []
    for group in groups.values():
        for run in _runs(group):
            pieces.extend(_grow(run, budget, relevant))
    passages = []
    for piece in pieces:
        anchor = max(piece, key=lambda h: h.score)
        first = piece[0]
        passages.append(
            Passage(
                rank=0,
                score=anchor.score,
                anchor_score=anchor.score,
                document_id=first.document_id,
                path=first.path,
                title=first.title,
                section=first.header,
                line_start=min(h.line_start for h in piece),
                line_end=max(h.line_end for h in piece),
                text="\n\n".join(h.text for h in piece),
                chunk_ids=[h.chunk_id for h in piece],
                token_count=sum(h.token_count for h in piece),
                features=dict(anchor.features),
                coherence_score=round(coherence(piece), 4),
                doc_type=first.doc_type,
                collection=first.collection,
                pages=[min(h.page_start for h in piece), max(h.page_end for h in piece)]
                if all(h.page_start is not None for h in piece)
                else None,
                section_id=first.section_id,
            )
        )
    passages.sort(key=lambda p: (-p.score, p.path, p.line_start))
    for i, p in enumerate(passages[:k], start=1):
        p.rank = i
    return passages[:k]


def mark_scanned(passages: list[Passage], scanned: dict[str, dict[int, float]]) -> None:
    """Each passage on pages OCR read (``scanned``: document → page → confidence) says so, with the lowest
    confidence among them."""
    for p in passages:
        read = scanned.get(p.document_id)
        if read and p.pages:
            found = [read[n] for n in range(p.pages[0], p.pages[1] + 1) if n in read]
            p.ocr = min(found) if found else None


# ---------------------------------------------------------------- context packing


@dataclass
class ContextPack:
    text: str
    included: list[int] = field(default_factory=list)  # passage ranks
    dropped: list[int] = field(default_factory=list)
    tokens: int = 0
    budget: int = 0

    def to_dict(self) -> dict:
        return {
            "text": self.text,
            "included": self.included,
            "dropped": self.dropped,
            "tokens": self.tokens,
            "budget": self.budget,
        }


def source_label(p: Passage) -> str:
    parts = p.section.split(" > ")
    crumb = " > ".join([parts[0], parts[-1]]) if len(parts) > 2 else p.section
    return f"--- Source: {crumb} ---"


def pack_context(passages: list[Passage], budget: int = 8000) -> ContextPack:
    """Highest relevance first into the budget; then grouped by document, in document order."""
    chosen, dropped, used = [], [], 0
    for p in sorted(passages, key=lambda p: p.rank):
        cost = p.token_count + len(source_label(p).split()) * 2
        if used + cost <= budget:
            chosen.append(p)
            used += cost
        else:
            dropped.append(p.rank)
    first_rank: dict[str, int] = {}
    for p in chosen:
        first_rank.setdefault(p.document_id, p.rank)
    ordered = sorted(chosen, key=lambda p: (first_rank[p.document_id], p.line_start))
    text = "\n\n".join(f"{source_label(p)}\n{p.text}" for p in ordered)
    return ContextPack(text, [p.rank for p in ordered], dropped, used, budget)
