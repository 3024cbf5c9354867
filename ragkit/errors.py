"""Typed errors. Each carries an exit code and a one-line message plus a hint.

The CLI turns them into one red line (and a dim hint) and exits with the code; ``ragkit serve`` answers them as
``{"error": {"code", "type", "message", "hint"}}``; library code only raises.

    RagkitError                 1
    ├── BadInput                2   a missing path, nothing indexable, a bad index setting
    ├── IndexNotFound           3
    ├── EmbedderMismatch        4   the index was built with another model
    ├── ModelUnavailable        5
    │   └── ExtraMissing            a feature's extra is not installed (``pip install "ragkit[llm]"``)
    ├── BadQuery                6   a bad query, option or query setting
    │   └── UnknownId               a document, section or entity the index lacks (HTTP 404)
    ├── IndexCorrupt            7
    ├── BadDataset              8
    ├── IndexBusy               9   another run writes the index
    │   └── IndexChanged            the run being read was replaced; ask again
    ├── Cancelled              10   e.g. a declined LLM extraction
    ├── GenerationFailed       11   the model failed while answering (the passages are still printed)
    ├── AccessDenied           12   a missing or unknown token (HTTP 401)
    │   └── Forbidden               a token asks for what it may not read or choose (HTTP 403)
    └── OverLimit              13   a request over a server's limit (HTTP 413)
        └── RateLimited             too many requests of one token, per minute or at once (HTTP 429)
"""

from __future__ import annotations


class RagkitError(Exception):
    """The base of every error ragkit raises on purpose: a message, an optional hint, an exit code."""

    exit_code = 1
    hint: str | None = None

    def __init__(self, message: str, hint: str | None = None):
        super().__init__(message)
        self.message = message
        if hint is not None:
            self.hint = hint


class BadInput(RagkitError):
    """A path is missing, a folder has nothing indexable, or an index setting is out of its choices."""

    exit_code = 2


class IndexNotFound(RagkitError):
    """No index at the given name, folder or URI."""

    exit_code = 3
    hint = "Build it first with `ragkit index PATH` (or pass --index DIR)."


class EmbedderMismatch(RagkitError):
    """The embedding model asked for is not the one the index was built with."""

    exit_code = 4
    hint = "Query with the embedder the index was built with, or rebuild with `ragkit index --full`."


class ModelUnavailable(RagkitError):
    """A model (embedding or GGUF) or the library that runs it is not installed or cannot be loaded."""

    exit_code = 5


class ExtraMissing(ModelUnavailable):
    """A feature needs one of ragkit's extras (``llm``, ``torch``, ``s3``, ``ray``, ``ocr``; ragkit/extras.py),
    which this install lacks: the message names the feature and the extra, the hint the line that installs it."""


class BadQuery(RagkitError):
    """A query, a query option or a query setting is not valid (HTTP 400)."""

    exit_code = 6


class UnknownId(BadQuery):
    """A document, section or entity the index does not have (HTTP 404 from ``ragkit serve``)."""


class IndexCorrupt(RagkitError):
    """The index's files do not form a whole committed run (``ragkit check`` says what and how to repair)."""

    exit_code = 7
    hint = "Rebuild the index with `ragkit index PATH --full`."


class BadDataset(RagkitError):
    """A folder given to ``ragkit eval`` is not in the BEIR layout."""

    exit_code = 8
    hint = "A BEIR dataset folder holds corpus.jsonl, queries.jsonl and qrels/test.tsv."


class IndexBusy(RagkitError):
    """Another run is writing the index (or took its lease on object storage)."""

    exit_code = 9
    hint = "Another ragkit process is writing this index; try again when it finishes."


class IndexChanged(IndexBusy):
    """The run a reader was reading was replaced (and its files removed) while it read: read the new one."""

    hint = "A newer indexing run was committed while the query ran; ask again."


class Cancelled(RagkitError):
    """The user declined to go on (e.g. after an LLM extraction's time estimate); nothing was written."""

    exit_code = 10
    hint = "Nothing was written; the index is as it was."


class GenerationFailed(RagkitError):
    """The model failed while writing an answer (the passages are still printed)."""

    exit_code = 11


class AccessDenied(RagkitError):
    """``ragkit serve`` with tokens: the request carries no token, or one the server does not know (HTTP 401)."""

    exit_code = 12
    hint = "Send the token as `Authorization: Bearer …` (`ragkit query` sends $RAGKIT_TOKEN)."


class Forbidden(AccessDenied):
    """A token asks for a collection outside its own and the shared ones, or names a model, planner rules file or
    key the server does not use (HTTP 403)."""

    hint = "A token reads its own collections and the shared ones, with the server's models."


class OverLimit(RagkitError):
    """A request over one of the server's limits: body size, query length, ``k``, answer tokens (HTTP 413)."""

    exit_code = 13
    hint = "Ask for less, or raise the limit in the tokens file's [limits] table."


class RateLimited(OverLimit):
    """Too many requests of one token in the last minute, or too many at once (HTTP 429)."""

    hint = "Wait a little and ask again."
