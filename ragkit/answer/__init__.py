"""Answers a reader can trust: quoted from the sources (``extractive.py``, no model), or written by a model
(``generated.py``) with every sentence checked against what it cites (``check.py``), and "the documents do not
say" in the question's language when they do not. ``Index.answer`` chooses between them."""

from ragkit.answer.evidence import Evidence, idf_of
from ragkit.answer.extractive import extract_answer
from ragkit.answer.generated import answer, map_reduce
from ragkit.answer.records import ABSTAIN, Answer, Citation, Claim, Quote
from ragkit.answer.verify import NOTES, needs_replacing, verify

__all__ = [
    "ABSTAIN",
    "NOTES",
    "Answer",
    "Citation",
    "Claim",
    "Evidence",
    "Quote",
    "answer",
    "verify",
    "extract_answer",
    "idf_of",
    "map_reduce",
    "needs_replacing",
]
