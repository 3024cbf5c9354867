"""``Answered``: what ``Index.ask`` and ``Index.answer`` return — the passages, and the answer or why there is none."""

from __future__ import annotations

from dataclasses import dataclass

from ragkit.errors import BadQuery, RagkitError
from ragkit.records import Passage, QueryResult


@dataclass
class Answered:
    """A question asked of an index: its passages (``result``) and its answer, or the error that kept the answer
    from being written (the passages stand either way). ``text`` is the answer's text, or raises that error."""

    result: QueryResult
    error: RagkitError | None = None

    @property
    def answer(self):
        """The ``Answer`` (quotes, citations, confidence), or None when there is none (``error`` says why)."""
        return self.result.answer

    @property
    def passages(self) -> list[Passage]:
        return self.result.passages

    @property
    def query_id(self) -> str:
        return self.result.query_id

    @property
    def text(self) -> str:
        if self.result.answer is None:
            raise self.error or BadQuery("no answer was asked for", hint="ix.answer(question) writes one")
        return self.result.answer.text
