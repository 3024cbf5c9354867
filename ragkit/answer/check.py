"""Every sentence of a written answer checked against the passage(s) it cites.

A sentence's support from a passage is the weighted share of its content words the passage holds
(``Terms.coverage``, compounds and inflections met), blended with the encoder's similarity of the sentence to
the passage's chunks when the encoder is at hand; and the numbers, dates, names and negations it states must
stand in that passage word for word (``evidence.needs``). A sentence is supported when its best cited passage
reaches ``MIN_SUPPORT`` with nothing missing. One that its citations do not support but another passage does
is re-pointed to that passage; one that nothing supports is removed (kept in ``claims``, unsupported). The
answer's ``grounded`` share counts supported sentences; under ``MIN_GROUNDED`` the extractive answer replaces
it, and the answer says so.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import replace

import numpy as np

from ragkit.answer.evidence import Evidence, Terms, lacks, needs, words
from ragkit.answer.generated import citation_for
from ragkit.answer.records import Answer, Claim
from ragkit.records import Passage
from ragkit.text import split_sentences

MIN_SUPPORT = 0.6
MIN_GROUNDED = 0.5
_MARK = re.compile(r"\s*\[(\d+(?:\s*,\s*\d+)*)\]")
NOTES = {
    "en": "The model's answer was not supported by the sources; the sentences below are quoted from them.",
    "de": "Die Antwort des Modells war durch die Quellen nicht gedeckt; die folgenden Sätze sind aus ihnen zitiert.",
    "sv": "Modellens svar stöddes inte av källorna; meningarna nedan är citerade ur dem.",
}


def _support(sentence: str, passage: Passage, idf, language: str, similarity: float | None) -> tuple[float, list[str]]:
    terms = Terms.of(sentence, idf, language)
    source = passage.text + " " + passage.section
    lexical = terms.coverage(set(words(source))) if terms.weights else 0.0
    score = lexical if similarity is None else 0.75 * lexical + 0.25 * max(similarity, 0.0)
    return score, lacks(needs(sentence, language), source)


def check(
    answer: Answer, evidence: Evidence, idf, language: str, encode: Callable[[list[str]], np.ndarray] | None = None
) -> Answer:
    """``answer`` with each sentence checked: ``claims``, ``grounded``, the unsupported sentences removed and
    citations re-pointed (the text keeps the model's wording)."""
    by_number = {c.number: c.rank for c in answer.citations}
    number_of_rank = {rank: n for n, rank in enumerate(answer.sources, start=1)}
    passages = {p.rank: p for p in evidence.passages}
    pieces = [answer.text[a:b].strip() for a, b in split_sentences(answer.text)] if answer.text.strip() else []
    vectors = _sentence_vectors(pieces, encode)
    claims, kept = [], []
    for i, piece in enumerate(pieces):
        cited = [by_number[int(n)] for m in _MARK.finditer(piece) for n in m.group(1).split(",") if int(n) in by_number]
        plain = _MARK.sub("", piece).strip()
        if len(words(plain)) < 2:
            continue
        sims = _similarities(vectors[i] if vectors is not None else None, evidence)
        scored = {rank: _support(plain, p, idf, language, sims.get(rank)) for rank, p in passages.items()}
        own = [r for r in cited if r in scored]
        best_own = max(own, key=lambda r: scored[r][0]) if own else None
        good = [r for r, (s, miss) in scored.items() if s >= MIN_SUPPORT and not miss]
        if best_own is not None and best_own in good:
            claims.append(Claim(plain, [best_own], scored[best_own][0], True))
            kept.append((piece, best_own))
        elif good:  # re-pointed to the passage that does support it
            rank = max(good, key=lambda r: scored[r][0])
            claims.append(Claim(plain, [rank], scored[rank][0], True, repointed=True))
            kept.append((piece, rank))
        elif scored:
            rank = best_own or max(scored, key=lambda r: scored[r][0])
            claims.append(Claim(plain, cited, scored[rank][0], False, scored[rank][1]))
        else:  # no passage to check it against
            claims.append(Claim(plain, cited, 0.0, False))
    grounded = sum(c.supported for c in claims) / len(claims) if claims else 0.0
    for _, rank in kept:
        number_of_rank.setdefault(rank, len(number_of_rank) + 1)
    text = " ".join(_cited_as(piece, number_of_rank[rank]) for piece, rank in kept)
    ranks = {rank for _, rank in kept}
    citations = [citation_for(number_of_rank[r], passages[r]) for r in sorted(ranks, key=number_of_rank.get)]
    return replace(
        answer, text=text, citations=citations, claims=claims, grounded=round(grounded, 3), language=language
    )


def _cited_as(piece: str, number: int) -> str:
    """The model's sentence in its own words, its citations naming source ``number`` (the one that supports
    it), or that citation added at its end when it named none."""
    if _MARK.search(piece):
        return _MARK.sub(lambda m: m.group(0)[: m.group(0).index("[")] + f"[{number}]", piece)
    end = len(piece.rstrip(" .!?"))
    return f"{piece[:end]} [{number}]{piece[end:].strip()}"


def _sentence_vectors(pieces: list[str], encode) -> np.ndarray | None:
    if encode is None or not pieces:
        return None
    return np.asarray(encode([_MARK.sub("", p) for p in pieces]), dtype=np.float32)


def _similarities(vector, evidence: Evidence) -> dict[int, float]:
    """The sentence's best cosine to each passage's chunks (their vectors were embedded at index time)."""
    if vector is None:
        return {}
    out: dict[int, float] = {}
    for s in evidence.sentences:
        if s.vector is not None:
            sim = float(np.dot(np.asarray(s.vector, dtype=np.float32), vector))
            out[s.passage.rank] = max(out.get(s.passage.rank, -1.0), sim)
    return out


def needs_replacing(answer: Answer) -> bool:
    """A written answer that says (nearly) nothing its sources support is replaced by the extractive one."""
    return answer.grounded is None or answer.grounded < MIN_GROUNDED or not answer.text.strip()
