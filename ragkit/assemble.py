"""Passage assembly (first version).

Hits of one document and section with consecutive chunk indexes merge into one
passage, anchored on the best of them and grown towards its neighbours while
the token budget allows. Passages never cross a section. The passage score is
its anchor's score.
"""

from __future__ import annotations

from collections import defaultdict

from ragkit.records import Hit, Passage


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


def _grow(run: list[Hit], budget: int) -> list[list[Hit]]:
    """Cut a run into pieces within ``budget``: best chunk first, then its better neighbour."""
    out = []
    rest = list(run)
    while rest:
        best = max(range(len(rest)), key=lambda i: rest[i].score)
        lo = hi = best
        tokens = rest[best].token_count
        while True:
            left = rest[lo - 1] if lo > 0 else None
            right = rest[hi + 1] if hi + 1 < len(rest) else None
            options = [(c.score, side) for c, side in ((left, -1), (right, 1)) if c is not None
                       and tokens + c.token_count <= budget]
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
        # pieces left and right of the grown one are separate runs now
        rest_left, rest_right = rest[:lo], rest[hi + 1 :]
        out.extend(_grow(rest_left, budget) if rest_left else [])
        rest = rest_right
    return out


def assemble(hits: list[Hit], k: int, budget: int) -> list[Passage]:
    groups: dict[tuple[str, str], list[Hit]] = defaultdict(list)
    for h in hits:
        groups[(h.document_id, h.section_id)].append(h)
    pieces: list[list[Hit]] = []
    for group in groups.values():
        for run in _runs(group):
            pieces.extend(_grow(run, budget))
    passages = []
    for piece in pieces:
        anchor = max(piece, key=lambda h: h.score)
        first = piece[0]
        passages.append(Passage(
            rank=0, score=anchor.score, anchor_score=anchor.score, document_id=first.document_id,
            path=first.path, title=first.title, section=first.header,
            line_start=min(h.line_start for h in piece), line_end=max(h.line_end for h in piece),
            text="\n\n".join(h.text for h in piece), chunk_ids=[h.chunk_id for h in piece],
            token_count=sum(h.token_count for h in piece),
            features=dict(anchor.features),
        ))
    passages.sort(key=lambda p: (-p.score, p.path, p.line_start))
    for i, p in enumerate(passages[:k], start=1):
        p.rank = i
    return passages[:k]
