"""The answer to a question from its passages (private to ``Index``): quoted by the answer scorer, or written by
a generate model and checked against what it cites."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from ragkit.answer import NOTES, Answer, Evidence, extract_answer, idf_of, map_reduce, needs_replacing, verify
from ragkit.answer import answer as write_answer
from ragkit.answer.scorer import AnswerModel
from ragkit.answer.scorer import default_model as default_answer_model
from ragkit.config import QueryConfig
from ragkit.embed import tuned
from ragkit.embed.remembered import Remembered
from ragkit.errors import GenerationFailed, RagkitError
from ragkit.generate import load_generator
from ragkit.reader import IndexReader
from ragkit.records import QueryResult
from ragkit.text import query_language


def answer(
    result: QueryResult,
    cfg: QueryConfig,
    on_text: Callable[[str], None] | None = None,
    reader: IndexReader | None = None,
    generator: Any = None,
) -> Answer:
    """An answer to ``result.query`` from its passages; ``on_text`` receives it as it is written.

    ``cfg.answer_mode``: "extract" quotes the sentences that answer (no model); "generate" has the generate
    model write one and checks every sentence against what it cites (an answer under half supported is replaced
    by the quotes); "auto" generates with a handed-in ``generator``, else only with a model other than the bundled
    270M one, else extracts (a handed-in generator comes before ``cfg.model``, as for the LLM planner). Either
    says "the documents do not say" in the question's language when the passages do not answer. ``reader``
    (the result's index) lends its vocabulary, its encoder and the source files' paths to the checks;
    ``generator``: the model that writes, instead of the one ``cfg.model`` names (handed in by ``Index``).

    Raises ``ModelUnavailable`` when the generate model cannot be loaded in "generate" mode, ``GenerationFailed``
    when it fails while writing; the result and its passages are untouched either way."""
    language = query_language(result.query)
    evidence = Evidence.of(result, sources=_source_paths(reader, result))
    idf = idf_of(reader.vocabulary, reader.manifest.counts.chunks) if reader else idf_of(None, 1000)
    # the answer scorer reads e5's own question vector, as it was fitted: fed ragkit's (issue 62), it abstained on
    # 0.078 of the German fit half's answerable questions instead of 0.029 (scripts/bench_query_encoder.py scorer)
    query_vector = result.plan.query_vector if result.plan.notes.get("query_encoder") != tuned.NAME else None
    if query_vector is None and reader is not None:
        query_vector = reader.embedder.encode_query(result.query)
    encode, encoder = (_unit_vectors(reader), reader.embedder.name) if reader else (None, None)
    model = _answer_model(reader, cfg, result.plan.scope)
    quotes = extract_answer(evidence, result.query, idf, language, query_vector, encode, model, encoder)
    writes = cfg.answer_mode == "generate" or (
        cfg.answer_mode == "auto" and (generator is not None or (cfg.model and not cfg.model.startswith("bundled")))
    )
    if not writes:
        generator = None
    elif generator is None:
        try:
            generator = load_generator(cfg.model, n_ctx=cfg.answer_context, keys=cfg.api_keys)
        except RagkitError as exc:
            if cfg.answer_mode == "generate":
                raise
            why = f"{exc}: quoted from the passages instead"
            quotes = replace(quotes, note=f"{why} ({quotes.note})" if quotes.note else why)
    if generator is None:
        if on_text:
            on_text(quotes.text)
        return quotes
    written = _write(generator, result, cfg, on_text, language)
    t = time.perf_counter()
    checked = verify(written, evidence, idf, language, reader.embedder if reader else None)
    checked.check_ms = round((time.perf_counter() - t) * 1000, 2)
    if needs_replacing(checked):
        kept = ("claims", "grounded", "model", "prompt_tokens", "completion_tokens", "seconds", "first_token_seconds")
        kept += ("llm_calls", "check_ms")  # what the model wrote and what it cost, beside the quotes that stand
        note = quotes.note if quotes.abstained else NOTES.get(language, NOTES["en"])
        return replace(quotes, replaced=True, note=note, **{name: getattr(checked, name) for name in kept})
    return checked


def _unit_vectors(reader: IndexReader) -> Remembered:
    """The index's encoder for answer units, keeping the vectors of the sentences it encoded (one reader's
    answers quote from the same documents again and again)."""
    return reader.memo("unit_vectors", lambda: Remembered(reader.embedder.encode))


def _answer_model(reader: IndexReader | None, cfg: QueryConfig, scope: str) -> AnswerModel:
    """The answer scorer, with the abstention thresholds the index learned for the query's scope (``ragkit
    learn`` from rated answers; ``cfg.learned`` off: the shipped ones)."""
    model = default_answer_model()
    if reader is None or not cfg.learned:
        return model
    return model.with_thresholds(reader.rankers.abstain_thresholds(scope))


def _write(generator, result: QueryResult, cfg: QueryConfig, on_text, language: str) -> Answer:
    reports = [i["report"] for i in result.context_items if i.get("type") == "community"]
    try:
        if result.strategy == "global" and reports:  # map-reduce over the community reports
            return map_reduce(
                generator, result.query, result.passages, reports, cfg.max_tokens, cfg.temperature, on_text, language
            )
        return write_answer(
            generator, result.query, result.passages, cfg.max_tokens, cfg.temperature, on_text, language=language
        )
    except (ValueError, RuntimeError, OSError) as exc:
        raise GenerationFailed(
            f"the model failed while answering: {exc}",
            hint="The passages above are complete; try a shorter --budget or -k.",
        ) from exc


def _source_paths(reader: IndexReader | None, result: QueryResult) -> dict[str, str]:
    """Document id → its source file's path (where a quote's own lines are looked up)."""
    ids = sorted({p.document_id for p in result.passages})
    if reader is None or not ids:
        return {}
    with reader.duck() as store, store.registered("answer_docs", {"id": ids}):
        return dict(
            store.con.execute(
                "SELECT id, source_path FROM documents WHERE id IN (SELECT id FROM answer_docs)"
            ).fetchall()
        )


def answer_into(
    result: QueryResult,
    cfg: QueryConfig,
    on_text: Callable[[str], None] | None = None,
    reader: IndexReader | None = None,
    generator: Any = None,
) -> RagkitError | None:
    """Write the answer into ``result.answer`` (or why there is none into ``result.answer_error``); returns the
    error instead of raising it, so that the passages are shown either way."""
    try:
        result.answer = answer(result, cfg, on_text=on_text, reader=reader, generator=generator)
    except RagkitError as exc:
        result.answer_error = str(exc)
        return exc
    return None
