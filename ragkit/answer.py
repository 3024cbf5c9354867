"""Grounded answers: numbered sources in the prompt, citations [n] mapped back to passages.

The default model is a small base model without a chat template, so the
prompt is plain text the model completes: instructions, one worked example,
the numbered sources (passages in rank order while they fit the model's
context window minus the answer budget; a passage that does not fit whole is
cut to what fits when it is the first), the question, "Answer:". A plain
completion model also gets the answer's first words, "According to [", so
that it starts by naming a source: the 270M default model follows the
example's style but hardly ever cites on its own (measured on hotpotqa-100,
see scripts/README.md). Citations in the answer that name no source are removed
from the text and counted.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from ragkit.records import Passage

PROMPT = """Answer the question using only the numbered sources. After each fact, cite its source as [n]. \
If the sources do not contain the answer, say that they do not.

Sources:
[1] Eiffel Tower (landmarks.md:1-3)
The Eiffel Tower in Paris was completed in 1889 for the World's Fair.

[2] Gustave Eiffel (people.md:4-6)
Gustave Eiffel's engineering company designed and built the tower.

Question: Who built the Eiffel Tower, and when was it finished?
Answer: According to [2], Gustave Eiffel's company built the Eiffel Tower. According to [1], it was completed in 1889.

Sources:
{sources}
{notes}
Question: {question}
Answer:"""
# the answer's first words for plain completion models when there are sources (see the module docstring)
ANSWER_PREFIX = " According to ["
STOP = ["\nQuestion:", "\nSources:", "\n\n[", "\n\n\n"]  # the model moves on: a new question, copied sources
REPEAT_PENALTY = 1.15  # the small default model loops without it (hotpotqa-100: more gold answers, fewer bad marks)
# GraphRAG global map step (seed 001): one call per community report
MAP_PROMPT = """Community report:
{report}

Question: {question}
Write the points of the report that help answer the question, one per line starting with "- ". \
If nothing in the report helps, write "no relevant information".
Points:"""
NO_INFO = "no relevant information"
MAP_TOKENS = 120
MARGIN_TOKENS = 16
_CITE = re.compile(r"\[(\d+(?:\s*[,;]\s*\d+)*)\]")


@dataclass
class Source:
    number: int
    passage: Passage

    def block(self, text: str | None = None) -> str:
        p = self.passage
        return f"[{self.number}] {p.section} ({p.path}{p.location})\n{text or p.text}"


@dataclass
class Citation:
    number: int
    rank: int  # the passage's rank in the result
    path: str
    lines: tuple[int, int]
    pages: list[int] | None = None  # a PDF passage's first and last page
    location: str = ""  # ":12-30" or " p. 12–13", as the passage shows it


@dataclass
class Answer:
    text: str
    citations: list[Citation]
    dropped_citations: int
    model: str
    prompt_tokens: int
    completion_tokens: int
    seconds: float
    first_token_seconds: float | None
    sources: list[int] = field(default_factory=list)  # passage ranks given to the model, by source number
    llm_calls: int = 1
    map_notes: int = 0  # global map-reduce: reports that had something relevant

    @property
    def tokens_per_second(self) -> float:
        gen = self.seconds - (self.first_token_seconds or 0.0)
        return round(self.completion_tokens / gen, 2) if gen > 0 else 0.0


def build_prompt(
    question: str,
    passages: list[Passage],
    count_tokens: Callable[[str], int],
    n_ctx: int,
    answer_tokens: int,
    notes: list[str] = (),
) -> tuple[str, list[Source]]:
    """The prompt and the sources in it: passages by rank while they fit ``n_ctx - answer_tokens``.

    ``notes``: points from the map step of a global answer, placed after the sources (they count first).
    """
    notes_text = ("\nNotes from the community reports:\n" + "\n".join(notes) + "\n") if notes else ""
    room = (
        n_ctx
        - answer_tokens
        - count_tokens(PROMPT.format(sources="", notes=notes_text, question=question))
        - MARGIN_TOKENS
    )
    sources: list[Source] = []
    blocks: list[str] = []
    for p in sorted(passages, key=lambda p: p.rank):
        src = Source(len(sources) + 1, p)
        block = src.block()
        cost = count_tokens(block) + 2
        if cost > room:
            if sources:
                continue  # a later, shorter passage may still fit
            block = _cut_to(src, room, count_tokens)
            if block is None:
                break
            cost = count_tokens(block) + 2
        sources.append(src)
        blocks.append(block)
        room -= cost
    return PROMPT.format(sources="\n\n".join(blocks), notes=notes_text, question=question), sources


def _cut_to(src: Source, room: int, count_tokens: Callable[[str], int]) -> str | None:
    words = src.passage.text.split()
    lo, hi, best = 1, len(words), None
    while lo <= hi:  # the longest word prefix whose block fits
        mid = (lo + hi) // 2
        block = src.block(" ".join(words[:mid]) + " …")
        if count_tokens(block) + 2 <= room:
            best, lo = block, mid + 1
        else:
            hi = mid - 1
    return best


def cite(text: str, sources: list[Source]) -> tuple[str, list[Citation], int]:
    """``text`` without citations to no source, the valid citations (first use first), and the dropped count."""
    by_number = {s.number: s for s in sources}
    found: dict[int, Citation] = {}
    dropped = 0

    def keep(m: re.Match) -> str:
        nonlocal dropped
        nums = [int(n) for n in re.split(r"\s*[,;]\s*", m.group(1))]
        good = [n for n in nums if n in by_number]
        dropped += len(nums) - len(good)
        for n in good:
            p = by_number[n].passage
            found.setdefault(n, Citation(n, p.rank, p.path, (p.line_start, p.line_end), p.pages, p.location))
        return "[" + ", ".join(str(n) for n in good) + "]" if good else ""

    cleaned = _CITE.sub(keep, text)
    return re.sub(r"[ \t]+([.,;:])", r"\1", cleaned).strip(), list(found.values()), dropped


def answer(
    generator,
    question: str,
    passages: list[Passage],
    max_tokens: int = 512,
    temperature: float = 0.3,
    on_text: Callable[[str], None] | None = None,
    notes: list[str] = (),
) -> Answer:
    """Generate a cited answer from ``passages``; ``on_text`` receives the text as it streams."""
    prompt, sources = build_prompt(question, passages, generator.count_tokens, generator.n_ctx, max_tokens, notes)
    prefix = ANSWER_PREFIX if sources and getattr(generator, "chat", None) is None else ""
    lead = prefix.lstrip()  # the prompt's words that begin the answer's text
    if on_text and lead:
        on_text(lead)
    t = time.perf_counter()
    first = None
    parts: list[str] = []
    for piece in generator.stream(
        prompt + prefix, max_tokens=max_tokens, stop=STOP, temperature=temperature, repeat_penalty=REPEAT_PENALTY
    ):
        if first is None:
            first = time.perf_counter() - t
        parts.append(piece)
        if on_text:
            on_text(piece)
    seconds = time.perf_counter() - t
    raw = "".join(parts)
    text, citations, dropped = cite(lead + raw, sources)
    return Answer(
        text=text,
        citations=citations,
        dropped_citations=dropped,
        model=generator.name,
        prompt_tokens=generator.prompt_tokens(prompt + prefix),
        completion_tokens=generator.count_tokens(raw),
        seconds=round(seconds, 3),
        first_token_seconds=round(first, 3) if first is not None else None,
        sources=[s.passage.rank for s in sources],
    )


def map_reduce(
    generator,
    question: str,
    passages: list[Passage],
    reports: list[str],
    max_tokens: int = 512,
    temperature: float = 0.3,
    on_text: Callable[[str], None] | None = None,
) -> Answer:
    """GraphRAG global answer (seed 001): map each community report to the points relevant to the question
    (or "no relevant information"), then reduce: one cited answer from the passages and the kept points."""
    notes: list[str] = []
    for report in reports:
        out = generator.complete(
            MAP_PROMPT.format(report=report[:2000], question=question),
            max_tokens=MAP_TOKENS,
            stop=["\n\n", "Question:"],
            temperature=0.0,
        )
        points = [ln.strip() for ln in out.split("\n") if ln.strip().startswith("-")]
        if points and NO_INFO not in out.lower():
            notes.extend(points)
    a = answer(generator, question, passages, max_tokens, temperature, on_text, notes)
    a.llm_calls = len(reports) + 1
    a.map_notes = len(notes)
    return a
