"""Section-bounded chunking within a token budget.

A chunk never crosses a section boundary. Inside a section, paragraphs are
packed into chunks of about the same size; a paragraph over the budget is cut
at sentence ends, and a sentence over the budget is cut hard on words. Each
chunk records how clean its cuts were (``boundary_confidence``): 1.0 at a
paragraph break or section edge, 0.7 at a sentence end, 0.3 for a hard cut.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass

from ragkit.records import Block, Chunk, Section
from ragkit.text import split_sentences

TokenCounter = Callable[[list[str]], list[int]]

PARAGRAPH, SENTENCE, HARD = 1.0, 0.7, 0.3


@dataclass
class _Piece:
    text: str
    tokens: int
    line_start: int
    line_end: int
    block: int  # index of the block it came from
    end_conf: float  # how clean a cut right after this piece is


def _line_at(block: Block, offset: int) -> int:
    return block.line_start + block.text.count("\n", 0, offset)


def _pieces(blocks: list[Block], budget: int, count: TokenCounter) -> list[_Piece]:
    out: list[_Piece] = []
    counts = count([b.text for b in blocks]) if blocks else []
    big = [i for i, n in enumerate(counts) if n > budget]
    sentence_spans = {i: split_sentences(blocks[i].text) for i in big}
    sent_texts = [blocks[i].text[a:b] for i in big for a, b in sentence_spans[i]]
    sent_counts = iter(count(sent_texts) if sent_texts else [])
    for bi, (block, n) in enumerate(zip(blocks, counts)):
        if n <= budget:
            out.append(_Piece(block.text, n, block.line_start, block.line_end, bi, PARAGRAPH))
            continue
        spans = sentence_spans[bi]
        for si, (a, b) in enumerate(spans):
            stext, sn = block.text[a:b], next(sent_counts)
            last = si == len(spans) - 1
            if sn <= budget:
                out.append(
                    _Piece(stext, sn, _line_at(block, a), _line_at(block, b), bi, PARAGRAPH if last else SENTENCE)
                )
                continue
            # hard split on words, sized from the sentence's tokens-per-word ratio
            words = list(re.finditer(r"\S+", stext))
            per = max(1, int(len(words) * budget / sn * 0.9))
            for wi in range(0, len(words), per):
                group = words[wi : wi + per]
                ga, gb = group[0].start(), group[-1].end()
                final = wi + per >= len(words)
                out.append(
                    _Piece(
                        stext[ga:gb],
                        max(1, round(sn * len(group) / len(words))),
                        _line_at(block, a + ga),
                        _line_at(block, a + gb),
                        bi,
                        (PARAGRAPH if last else SENTENCE) if final else HARD,
                    )
                )
    return out


def _join(pieces: list[_Piece]) -> str:
    parts = [pieces[0].text]
    for prev, cur in zip(pieces, pieces[1:]):
        parts.append(("\n\n" if cur.block != prev.block else " ") + cur.text)
    return "".join(parts)


def chunk_section(
    section: Section,
    blocks: list[Block],
    budget: int,
    count: TokenCounter,
    first_index: int,
    id_fn: Callable[[str, str], str],
    header: str | None = None,
) -> list[Chunk]:
    """Cut one section's blocks into chunks of at most ``budget`` tokens (text only)."""
    pieces = _pieces(blocks, budget, count)
    if not pieces:
        return []
    total = sum(p.tokens for p in pieces)
    target = total / math.ceil(total / budget)
    groups: list[list[_Piece]] = [[]]
    size = 0
    for p in pieces:
        cur = groups[-1]
        if cur and (size + p.tokens > budget or (size >= 0.85 * target and size + p.tokens > 1.1 * target)):
            groups.append([])
            size = 0
        groups[-1].append(p)
        size += p.tokens
    chunks = []
    prev_conf = PARAGRAPH
    for gi, group in enumerate(groups):
        end_conf = PARAGRAPH if gi == len(groups) - 1 else group[-1].end_conf
        idx = first_index + gi
        chunks.append(
            Chunk(
                id=id_fn(section.document_id, f"c{idx}"),
                document_id=section.document_id,
                section_id=section.id,
                index=idx,
                text=_join(group),
                header=section.breadcrumb if header is None else header,
                token_count=sum(p.tokens for p in group),
                line_start=group[0].line_start,
                line_end=group[-1].line_end,
                boundary_confidence=min(prev_conf, end_conf),
            )
        )
        prev_conf = end_conf
    return chunks


def chunk_document(
    sections: list[Section],
    blocks: dict[str, list[Block]],
    max_tokens: int,
    count: TokenCounter,
    id_fn: Callable[[str, str], str],
) -> list[Chunk]:
    """Chunks of all sections in document order; the header shares ``max_tokens``. The document's headers and
    paragraphs are counted in one call (a tokenizer's call costs more than its texts: a law of 400 sections
    counted section by section took 3× as long)."""
    texts = [s.breadcrumb for s in sections] + [b.text for s in sections for b in blocks.get(s.id, [])]
    known = dict(zip(texts, count(texts))) if texts else {}

    def counted(batch: list[str]) -> list[int]:
        missing = list(dict.fromkeys(t for t in batch if t not in known))
        if missing:
            known.update(zip(missing, count(missing)))
        return [known[t] for t in batch]

    chunks: list[Chunk] = []
    for sec in sections:
        budget = max(32, max_tokens - known[sec.breadcrumb] - 1)
        chunks.extend(chunk_section(sec, blocks.get(sec.id, []), budget, counted, len(chunks), id_fn))
    return chunks
