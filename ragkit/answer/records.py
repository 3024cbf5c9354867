"""What an answer is: its text, the passages it cites, how it was made (``mode``: quoted from the sources, or
written by a model and checked), and, for a written one, each sentence's support."""

from __future__ import annotations

from dataclasses import dataclass, field

# what an answer says when the passages do not answer the question, in the question's language
ABSTAIN = {
    "en": "The documents do not say. The closest passages are below.",
    "de": "Die Dokumente sagen nichts dazu. Die nächstliegenden Stellen stehen unten.",
    "sv": "Dokumenten säger inget om detta. De närmaste avsnitten finns nedan.",
}


@dataclass
class Citation:
    number: int
    rank: int  # the passage's rank in the result
    path: str
    lines: tuple[int, int]
    pages: list[int] | None = None  # a PDF passage's first and last page
    location: str = ""  # ":12-30" or " p. 12–13", as the passage shows it


@dataclass
class Quote:
    """A sentence of a passage, verbatim, with its exact place: what an extractive answer is made of."""

    rank: int  # the passage's rank
    text: str
    path: str
    lines: tuple[int, int]
    pages: list[int] | None = None
    start: int = 0  # character offsets in the passage's text (to highlight it there)
    end: int = 0


@dataclass
class Claim:
    """One sentence of a written answer and how well what it cites supports it."""

    text: str
    cited: list[int]  # passage ranks it cites (re-pointed to the passage that supports it, when one does)
    support: float  # 0..1: content words found in the cited passage (and the encoder's similarity)
    supported: bool
    missing: list[str] = field(default_factory=list)  # numbers, names, negations the source lacks
    repointed: bool = False  # what it cited did not support it; ``cited`` is the passage that does


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
    mode: str = "generate"  # extract (quoted from the sources) | generate (written by a model, checked)
    quotes: list[Quote] = field(default_factory=list)
    abstained: bool = False  # the passages do not answer the question, and the answer says so
    claims: list[Claim] = field(default_factory=list)  # a written answer's sentences and their support
    grounded: float | None = None  # share of a written answer's sentences its sources support
    replaced: bool = False  # the written answer was not supported enough: the extractive answer stands instead
    language: str = "en"  # the question's language (what an abstention and a note are written in)
    check_ms: float | None = None  # how long checking a written answer's sentences took
    confidence: float | None = None  # the answer scorer's probability that the passages answer the question
    decided: str | None = None  # extract: "confidence" (the threshold chose), "cited" (the cited section), "nothing"
    note: str | None = None

    @property
    def tokens_per_second(self) -> float:
        gen = self.seconds - (self.first_token_seconds or 0.0)
        return round(self.completion_tokens / gen, 2) if gen > 0 else 0.0
