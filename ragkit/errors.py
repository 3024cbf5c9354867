"""Typed errors. Each carries an exit code and a one-line message plus a hint.

The CLI turns them into one red line (and a dim hint); library code only raises.
"""

from __future__ import annotations


class RagkitError(Exception):
    exit_code = 1
    hint: str | None = None

    def __init__(self, message: str, hint: str | None = None):
        super().__init__(message)
        self.message = message
        if hint is not None:
            self.hint = hint


class BadInput(RagkitError):
    """A path is missing, or a folder has nothing indexable."""

    exit_code = 2


class IndexNotFound(RagkitError):
    exit_code = 3
    hint = "Build it first with `ragkit index PATH` (or pass --index DIR)."


class EmbedderMismatch(RagkitError):
    exit_code = 4
    hint = "Query with the embedder the index was built with, or rebuild with `ragkit index --full`."


class ModelUnavailable(RagkitError):
    exit_code = 5


class BadQuery(RagkitError):
    exit_code = 6


class UnknownId(BadQuery):
    """A document, section or entity the index does not have (HTTP 404 from ``ragkit serve``)."""


class IndexCorrupt(RagkitError):
    exit_code = 7
    hint = "Rebuild the index with `ragkit index PATH --full`."


class BadDataset(RagkitError):
    exit_code = 8
    hint = "A BEIR dataset folder holds corpus.jsonl, queries.jsonl and qrels/test.tsv."


class IndexBusy(RagkitError):
    exit_code = 9
    hint = "Another ragkit process is writing this index; try again when it finishes."


class IndexChanged(IndexBusy):
    """The run a reader was reading was replaced (and its files removed) while it read: read the new one."""

    hint = "A newer indexing run was committed while the query ran; ask again."


class Cancelled(RagkitError):
    exit_code = 10
    hint = "Nothing was written; the index is as it was."


class GenerationFailed(RagkitError):
    """The model failed while writing an answer (the passages are still printed)."""

    exit_code = 11
