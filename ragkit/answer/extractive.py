"""Extractive answers: the unit of the top passages that answers the question (a sentence, a numbered
paragraph, a list item), quoted verbatim with its place, or an honest "the documents do not say" in the
question's language. No model writes anything.

Which unit answers, and whether any does, is the learned answer scorer's call (``scorer.py``: the index's
encoder on question and unit, what the question asks for, how much of it the unit and its passage hold, the
passage's rank; fitted by ``scripts/fit_answers.py`` on labelled answers). One quote answers; a second is added
only for a second part of the question: the other option of "A or B?", or the bridge of a two-hop question (a
unit of another passage that the scorer finds likely too and that names what the first quote named beside the
question).

A question citing a section ("16 §", "§ 3 ArbZG") that no passage is gets no quote: the documents at hand do
not hold it.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import numpy as np

from ragkit.answer.evidence import STOP, Evidence, Sentence, words
from ragkit.answer.features import Question
from ragkit.answer.generated import citation_for
from ragkit.answer.records import ABSTAIN, Answer, Quote
from ragkit.answer.scorer import AnswerModel, Scored, default_model, encoded, rank_units, score
from ragkit.legal import LawTarget, find_legal_refs
from ragkit.records import Ref

MAX_QUOTES = 2
_OR = {"en": "or", "de": "oder", "sv": "eller"}
_BETWEEN = {"en": "between", "de": "zwischen", "sv": "mellan"}
_AND = {"en": "and", "de": "und", "sv": "och"}
_RELATIVE = {"en": r"\b(who|whom|whose|which|that)\b"}  # a relative clause: the question's second part


def question_of(question: str, idf, language: str, query_vector: np.ndarray | None = None) -> Question:
    """The question as the scorer reads it (its legal citations of a section included)."""
    cited = [r for r in find_legal_refs(question) if r.unit == "§" and r.numbers]
    return Question.of(question, idf, language, query_vector, cited)


def cited_by(q: Question) -> Callable[[Sentence], bool]:
    return lambda s: _is_cited(s, q.cited)


def choose(
    evidence: Evidence,
    q: Question,
    encode: Callable[[list[str]], np.ndarray] | None = None,
    model: AnswerModel | None = None,
    encoder: str | None = None,
) -> tuple[list[Sentence], str | None, Scored | None]:
    """The units to quote (best first), or ``[]`` and why none answers; and the scorer's verdict."""
    if not evidence.sentences or not q.terms.weights:
        return [], "no passage to quote", None
    if q.cited and not any(_is_cited(s, q.cited) for s in evidence.sentences):
        return [], "no passage is " + ", ".join(r.raw for r in q.cited), None
    model = model or default_model()
    scored = score(model, q, evidence, encode, cited_by(q), encoder)
    cited = [s for s in scored.units if q.cited and _is_cited(s, q.cited)]
    if cited:  # the question asks what a section says, and a passage is that section
        return [cited[0]], None, scored
    if model.abstains(scored, q.language):
        return [], f"the passages do not answer the question (confidence {scored.answerable:.2f})", scored
    chosen = [scored.units[0]]
    second = _second(q, scored, evidence, encode, model, encoder)
    if second is not None:
        chosen.append(second)
    return chosen, None, scored


def _second(q: Question, scored: Scored, evidence: Evidence, encode, model, encoder) -> Sentence | None:
    """A second quote for a second part of the question: the other option of "A or B?" ("Are A and B both
    …?"), or the second hop of a question about something the first quote names (a passage titled by a name the
    first quote holds and the question does not: "directed by Clint Eastwood" → the passage "Clint Eastwood"); of
    the units of that kind, the one the scorer finds best."""
    best = scored.units[0]
    options = alternatives(q.text, q.language)
    if options:
        for option in options:
            if _mentions(best, option):
                continue
            about = [s for s in evidence.sentences if _mentions(s, option) and not _overlaps(s, best)]
            return _best(q, about, encode, model, encoder)
        return None
    bridges = [n for n in names(best.text) if not _in(n, q.text)]
    hops = [
        s for s in evidence.sentences if s.passage.rank != best.passage.rank and any(_titled(s, n) for n in bridges)
    ]
    if not hops and _RELATIVE.get(q.language) and re.search(_RELATIVE[q.language], q.text[12:], re.I):
        hops = [s for s in scored.units[1:] if s.passage.rank != best.passage.rank]  # "… the man who …": 2 hops
    return _best(q, hops, encode, model, encoder)


def _best(q: Question, units: list[Sentence], encode, model, encoder) -> Sentence | None:
    """The unit of ``units`` the scorer puts first for ``q`` (None when there is none)."""
    if not units:
        return None
    known = encode is not None and encoder in model.encoders
    ranked, _, _ = rank_units(model, q, units, encoded(encode) if known else None, cited_by(q))
    return ranked[0]


def _overlaps(a: Sentence, b: Sentence) -> bool:
    return a.passage.rank == b.passage.rank and a.start < b.end and b.start < a.end


_NAMES = re.compile(r"[A-ZÄÖÜÅ][\wäöüßåé'’.-]*(?:\s+(?:[A-ZÄÖÜÅ0-9][\wäöüßåé'’.-]*|of|de|van|von|the))*")


def names(text: str) -> list[str]:
    """Capitalised word runs of a sentence ("Stephen King", "Walt Disney Pictures")."""
    out = []
    for m in _NAMES.finditer(text):
        name = m.group(0).strip(" .")
        if len(name) > 2 and name.lower() not in STOP:
            out.append(name)
    return out


def alternatives(question: str, language: str) -> list[str]:
    """The two things a comparison asks to choose between ("Who is older, A or B?", "between A and B", and in
    English "Are A and B both …?"): the name closest to the "or" on each side."""
    text = question.strip().rstrip("?").strip()
    if language == "en":
        m = re.match(
            r"^(?:are|were|is|was|do|did|does|have|has)\s+(.+?)\s+and\s+(.+?)\s+(?:both|each|the same|from the same)\b",
            text,
            re.I,
        )
        if m and names(" " + m.group(1)) and names(" " + m.group(2)):
            return [names(" " + m.group(1))[-1], names(" " + m.group(2))[0]]
    for joiner, opener in ((_OR.get(language, "or"), None), (_AND.get(language, "and"), _BETWEEN.get(language))):
        if opener and not re.search(rf"\b{opener}\b", text, re.I):
            continue
        m = re.search(rf"^(.*)\s{joiner}\s(.*)$", text, re.I)
        if not m:
            continue
        left, right = m.group(1), m.group(2)
        if opener:
            left = re.split(rf"\b{opener}\b", left, flags=re.I)[-1]
            right = right.split(",")[0]
        before, after = names(left), names(right)
        if before and after:
            return [before[-1], after[0]]
    return []


def _is_cited(s: Sentence, refs: list[Ref]) -> bool:
    """The sentence is (the start of) a section the question cites: "16 § …" / "§ 16" heading its passage, in
    the cited chapter and regulation when the question names them."""
    heading = s.passage.section.rsplit(">", 1)[-1]
    place = f"{s.passage.title} {s.passage.path} {s.passage.section}"
    where = _digits(place)
    for ref in refs:
        law = LawTarget.parse(ref.target) if ref.target else None
        if law and law.kind == "code" and not _names(law.text, place, where):
            continue
        if ref.chapter and not re.search(rf"\b{ref.chapter}\s*kap|kapitel\s*{ref.chapter}\b", s.passage.section, re.I):
            continue
        for n in ref.numbers:
            number = rf"{n[:-1]}\s?{n[-1]}" if n[-1].isalpha() else n
            opening = s.text[:80]  # (a PDF's heading may come first: "Mätning av aska 4 a § Aska ska …")
            if re.search(rf"(?:^|\s)(?:{number}\s*§|§\s*{number}\b)", opening) or re.search(
                rf"§\s*{number}\b", heading
            ):
                return True
    return False


def _names(code: str, place: str, where: str) -> bool:
    """A passage's title, path and breadcrumb (``place``; ``where`` its numbers) name the law ``code``: a code
    with numbers by them ("AFS 2023:2", "1977:1160"), else as a word ("ArbZG" in ".../arbzg/index.md", not "GG"
    in ".../agg/...")."""
    digits = _digits(code)
    if digits:
        return digits in where
    return re.search(rf"(?<![^\W_]){re.escape(code)}(?![^\W_])", place, re.I) is not None


def _digits(text: str) -> str:
    """ "AFS 2023:4", "AFS-2023-4.pdf" → "2023 4"-style: numbers joined by single spaces, to compare codes."""
    return " ".join(re.findall(r"\d+", text))


def _content(name: str) -> list[str]:
    return [w for w in words(name) if w not in STOP]


def _in(name: str, text: str) -> bool:
    have = set(words(text))
    return all(w in have for w in _content(name))


def _mentions(s: Sentence, name: str) -> bool:
    parts = _content(name)
    context = s.words | set(words(s.passage.title)) | set(words(s.passage.section))
    return bool(parts) and all(p in context for p in parts)


def _titled(s: Sentence, name: str) -> bool:
    """The sentence's passage is about ``name`` (its title holds the name's words)."""
    parts, title = _content(name), set(words(s.passage.title))
    return bool(parts) and all(p in title for p in parts)


def _extractive(language: str, **fields) -> Answer:
    """An answer no model wrote (``mode`` "extract")."""
    base = dict(citations=[], dropped_citations=0, model="extractive", prompt_tokens=0, completion_tokens=0)
    base |= dict(seconds=0.0, first_token_seconds=None, llm_calls=0, mode="extract", language=language)
    return Answer(**(base | fields))


def extract_answer(
    evidence: Evidence,
    question: str,
    idf,
    language: str,
    query_vector: np.ndarray | None = None,
    encode: Callable[[list[str]], np.ndarray] | None = None,
    model: AnswerModel | None = None,
    encoder: str | None = None,
) -> Answer:
    """The extractive answer (``mode`` "extract"): quotes with their citations, or an abstention; ``confidence``
    is the scorer's probability that the passages answer the question. ``encode``: the index's encoder for the
    units (documents' prompt) and ``encoder`` its name; without it, or with an encoder the scorer was not
    fitted with, the scorer goes by words, structure and rank alone."""
    q = question_of(question, idf, language, query_vector)
    chosen, why, scored = choose(evidence, q, encode, model, encoder)
    confidence = round(scored.answerable, 3) if scored is not None else 0.0
    cited = bool(chosen) and bool(q.cited) and _is_cited(chosen[0], q.cited)  # quoted whatever its confidence
    decided = "nothing" if scored is None else "cited" if cited else "confidence"
    if not chosen:
        text = ABSTAIN.get(language, ABSTAIN["en"])
        return _extractive(language, text=text, abstained=True, note=why, confidence=confidence, decided=decided)
    chosen.sort(key=lambda s: (s.passage.rank, s.start))  # in reading order
    quotes = [Quote(s.passage.rank, s.text, s.passage.path, s.lines, s.pages, s.start, s.end) for s in chosen]
    numbers: dict[int, int] = {}
    for quote in quotes:
        numbers.setdefault(quote.rank, len(numbers) + 1)
    text = " ".join(f"“{q.text}” [{numbers[q.rank]}]" for q in quotes)
    passages = {s.passage.rank: s.passage for s in chosen}
    citations = [citation_for(n, passages[rank]) for rank, n in numbers.items()]
    return _extractive(
        language,
        text=text,
        citations=citations,
        sources=list(numbers),
        quotes=quotes,
        confidence=confidence,
        decided=decided,
    )
