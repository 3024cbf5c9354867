"""Every sentence of a written answer checked against the passage(s) it cites, by the answer scorer.

Each sentence is read as the scorer reads a question (``scorer.rank_units``: the index's encoder on the
sentence and each unit of the passages, the words they share, the passages' ranks): a passage supports the
sentence when one of its units reaches the scorer's ``support`` probability (fitted with the scorer: the level
that best tells a sentence of the passages from another question's), or the passage holds ``MIN_SAID`` of the
sentence's weighted words (in a few short passages the scorer has little to compare), and the numbers, dates,
names and negations the sentence states stand in that passage word for word (``evidence.needs``). A sentence its citations do not
support but another passage does is re-pointed to that passage; one that nothing supports is removed (kept in
``claims``, unsupported). The answer's ``grounded`` share counts supported sentences; under ``MIN_GROUNDED`` the
extractive answer replaces it, and the answer says so.
"""

from __future__ import annotations

import re
from dataclasses import replace

from ragkit.answer.evidence import Evidence, lacks, needs, words
from ragkit.answer.extractive import cited_by, question_of
from ragkit.answer.generated import citation_for
from ragkit.answer.records import Answer, Claim
from ragkit.answer.scorer import AnswerModel, default_model, encoded, rank_units
from ragkit.text import split_sentences

MIN_GROUNDED = 0.5
MIN_SAID = 0.6  # the weighted share of a sentence's words a passage holds that supports it without the scorer
_MARK = re.compile(r"\s*\[(\d+(?:\s*,\s*\d+)*)\]")
NOTES = {
    "en": "The model's answer was not supported by the sources; the sentences below are quoted from them.",
    "de": "Die Antwort des Modells war durch die Quellen nicht gedeckt; die folgenden Sätze sind aus ihnen zitiert.",
    "sv": "Modellens svar stöddes inte av källorna; meningarna nedan är citerade ur dem.",
}


def verify(
    answer: Answer, evidence: Evidence, idf, language: str, embedder=None, model: AnswerModel | None = None
) -> Answer:
    """``answer`` with each sentence verified against the passages it cites: ``claims``, ``grounded``, the unsupported sentences removed and
    citations re-pointed (the text keeps the model's wording). ``embedder``: the index's (``encode_query`` for
    the sentence, ``encode`` for the units); without it the scorer goes by words, structure and rank."""
    model = model or default_model()
    by_number = {c.number: c.rank for c in answer.citations}
    number_of_rank = {rank: n for n, rank in enumerate(answer.sources, start=1)}
    passages = {p.rank: p for p in evidence.passages}
    known = embedder is not None and embedder.name in model.encoders  # (another encoder's scale is not read)
    vectors = encoded(embedder.encode) if known else None
    pieces = [answer.text[a:b].strip() for a, b in split_sentences(answer.text)] if answer.text.strip() else []
    claims, kept = [], []
    for piece in pieces:
        cited = [by_number[int(n)] for m in _MARK.finditer(piece) for n in m.group(1).split(",") if int(n) in by_number]
        plain = _MARK.sub("", piece).strip()
        if len(words(plain)) < 2:
            continue
        q = question_of(plain, idf, language, embedder.encode_query(plain) if embedder is not None else None)
        units, _, p = rank_units(model, q, evidence.sentences, vectors, cited_by(q))
        support: dict[int, float] = {}
        for s, value in zip(units, p):
            support[s.passage.rank] = max(support.get(s.passage.rank, 0.0), float(value))
        said = {r: q.terms.coverage(set(words(x.text)) | set(words(x.section))) for r, x in passages.items()}
        missing = {rank: lacks(needs(plain, language), x.text + " " + x.section) for rank, x in passages.items()}
        good = [r for r in passages if (support.get(r, 0.0) >= model.support or said[r] >= MIN_SAID) and not missing[r]]
        own = [r for r in cited if r in passages]
        best_own = max(own, key=lambda r: (support.get(r, 0.0), said[r])) if own else None
        if best_own is not None and best_own in good:
            claims.append(Claim(plain, [best_own], max(support.get(best_own, 0.0), said[best_own]), True))
            kept.append((piece, best_own))
        elif good:  # re-pointed to the passage that does support it
            rank = max(good, key=lambda r: (support.get(r, 0.0), said[r]))
            claims.append(Claim(plain, [rank], max(support.get(rank, 0.0), said[rank]), True, repointed=True))
            kept.append((piece, rank))
        elif passages:
            rank = best_own or max(passages, key=lambda r: support.get(r, 0.0))
            claims.append(Claim(plain, cited, support.get(rank, 0.0), False, missing[rank]))
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


def needs_replacing(answer: Answer) -> bool:
    """A written answer that says (nearly) nothing its sources support is replaced by the extractive one."""
    return answer.grounded is None or answer.grounded < MIN_GROUNDED or not answer.text.strip()
