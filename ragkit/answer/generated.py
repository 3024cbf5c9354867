"""Written answers: numbered sources in the prompt, citations [n] mapped back to passages (every sentence is
then checked against what it cites: ragkit/answer/verify.py).

The prompt is plain text a model completes (or one user turn for a chat model): instructions in the question's
language and the language to answer in, the numbered sources (passages in rank order while they fit the
model's context window minus the answer budget; a passage that does not fit whole is cut to what fits when it
is the first), the question, "Answer:". No worked example: a small model copied its facts into answers
("… it was completed in 1889"). A plain completion model also gets the answer's first words ("According to [",
"Laut [", "Enligt ["), so that it starts by naming a source in the question's language. Citations that name no
source are removed from the text and counted.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import dataclass

from ragkit.answer.records import ABSTAIN, Answer, Citation
from ragkit.records import Passage

PROMPT = """Answer the question in {language} using only the numbered sources. Write one to three short \
sentences and cite the source of each fact as [n]. If the sources do not answer the question, write only: {abstain}

Sources:
{sources}
{notes}
Question: {question}
Answer:"""
LANGUAGES = {"en": "English", "de": "German (Deutsch)", "sv": "Swedish (svenska)"}
PREFIXES = {"en": " According to [", "de": " Laut [", "sv": " Enligt ["}
ANSWER_PREFIX = PREFIXES["en"]  # the answer's first words for plain completion models (see the module docstring)
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


def build_prompt(
    question: str,
    passages: list[Passage],
    count_tokens: Callable[[str], int],
    n_ctx: int,
    answer_tokens: int,
    notes: list[str] = (),
    language: str = "en",
) -> tuple[str, list[Source]]:
    """The prompt and the sources in it: passages by rank while they fit ``n_ctx - answer_tokens``.

    ``notes``: points from the map step of a global answer, placed after the sources (they count first).
    """
    notes_text = ("\nNotes from the community reports:\n" + "\n".join(notes) + "\n") if notes else ""
    frame = {"language": LANGUAGES.get(language, "English"), "abstain": ABSTAIN.get(language, ABSTAIN["en"])}
    room = (
        n_ctx
        - answer_tokens
        - count_tokens(PROMPT.format(sources="", notes=notes_text, question=question, **frame))
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
    return PROMPT.format(sources="\n\n".join(blocks), notes=notes_text, question=question, **frame), sources


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


def citation_for(number: int, p: Passage) -> Citation:
    """Source ``number`` of an answer: passage ``p``'s rank and place."""
    return Citation(number, p.rank, p.path, (p.line_start, p.line_end), p.pages, p.location)


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
            found.setdefault(n, citation_for(n, by_number[n].passage))
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
    language: str = "en",
) -> Answer:
    """Generate a cited answer from ``passages`` in ``language``; ``on_text`` receives the text as it streams."""
    prompt, sources = build_prompt(
        question, passages, generator.count_tokens, generator.n_ctx, max_tokens, notes, language
    )
    prefix = PREFIXES.get(language, ANSWER_PREFIX) if sources and getattr(generator, "chat", None) is None else ""
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
    language: str = "en",
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
    a = answer(generator, question, passages, max_tokens, temperature, on_text, notes, language)
    a.llm_calls = len(reports) + 1
    a.map_notes = len(notes)
    return a
