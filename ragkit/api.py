"""The library's entry points: what the CLI, the server and scripts call.

    reader = api.open_index("laws")
    result = api.query(reader, "Wie lange darf ich täglich arbeiten?", QueryConfig(k=5))
    for p in result.passages:
        print(p.rank, p.path, p.section, p.location)

Indexing (``index``), reading (``open_index``, ``ask``: ``query``, ``answer``, ``log_query``), feedback and
learning; looking at an index is ragkit/contents.py (re-exported here), measuring ragkit/measure.py, and the
Python API over all of it ragkit/library.py (``ragkit.open``). Every function raises ``ragkit.errors`` types."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import Any

from ragkit.answer import NOTES, Answer, Evidence, extract_answer, idf_of, map_reduce, needs_replacing
from ragkit.answer import answer as write_answer
from ragkit.answer import check as check_claims
from ragkit.answer.scorer import AnswerModel
from ragkit.answer.scorer import default_model as default_answer_model
from ragkit.assemble import assemble, mark_scanned, pack_context
from ragkit.config import DEFAULT_HOME, IndexConfig, QueryConfig, resolve_index_dir
from ragkit.contents import (
    check,
    document,
    documents,
    entity,
    export_graph,
    graph_stats,
    learned,
    outline,
    section,
    stats,
)
from ragkit.embed import Embedder, load_embedder, normalize_spec, tuned
from ragkit.embed.remembered import Remembered
from ragkit.errors import BadQuery, GenerationFailed, RagkitError, UnknownId
from ragkit.events import Reporter
from ragkit.generate import load_generator
from ragkit.ingest import watch as watching
from ragkit.ingest.fill import run_fill
from ragkit.ingest.pipeline import run_index
from ragkit.ingest.scans import scanned_places
from ragkit.learn import abstain as abstaining
from ragkit.learn import ranker as ranking
from ragkit.learn.feedback import Feedback, new_query_id, query_event
from ragkit.pages import render_page
from ragkit.reader import IndexReader
from ragkit.records import IndexSummary, QueryResult
from ragkit.rerank.ranker import scope_of
from ragkit.retrieve.pipeline import retrieve as run_retrieval
from ragkit.retrieve.strategies import hippo
from ragkit.store import browse, remote
from ragkit.store.browse import scanned_pages
from ragkit.text import query_language

__all__ = [
    "DEFAULT_HOME",
    "IndexConfig",
    "IndexReader",
    "QueryConfig",
    "answer",
    "answer_into",
    "ask",
    "check",
    "document",
    "documents",
    "entity",
    "export_graph",
    "learned",
    "graph_stats",
    "index",
    "open_index",
    "outline",
    "query",
    "resolve_index_dir",
    "retrieve",
    "section",
    "stats",
    "watch",
]


def _default_embedder_factory(cfg: IndexConfig) -> Embedder:
    return load_embedder(cfg.embed_model, cfg.embed_batch_size, cfg.encoder, keys=cfg.api_keys)


def index(
    paths: list[str | Path],
    index_dir: str | Path | None = None,
    cfg: IndexConfig | None = None,
    *,
    full: bool = False,
    reporter: Reporter | None = None,
    embedder_factory: Callable[[IndexConfig], Embedder] | None = None,
    version_of: str | None = None,
    generator_factory: Callable[[IndexConfig], Any] | None = None,
    confirm: Callable[[str], bool] | None = None,
    wait: bool = False,
    max_fill_batches: int | None = None,
    fill_first: list[str] | None = None,
    parse_workers: int = 1,
) -> IndexSummary:
    """Index ``paths`` into ``index_dir`` (a name under ./indexes, a folder, or an s3:// URI).

    Args:
        full: rebuild everything instead of only what changed.
        reporter: receives progress and warnings (silent by default).
        embedder_factory: builds the embedder for the run's config (default: the bundled models).
        version_of: these documents supersede this path or id.
        generator_factory: loads the GGUF model for ``extract = "llm"`` / ``summaries = "llm"``.
        confirm: ``confirm(message)`` approves an LLM extraction after its time estimate.
        wait: wait for another run on the same index instead of raising ``IndexBusy``.
        parse_workers: processes that parse and chunk a run of many files (the CLI: every core). Each is a
            spawned process that imports the caller's main module: from a script, call this under
            ``if __name__ == "__main__":``. Only with the default ``embedder_factory`` (workers load the model).
        max_fill_batches: a progressive index (``cfg.progressive``) fills in at most this many batches of the
            full model's vectors after the run (None: all; 0: none now, ``ragkit index`` again goes on).
        fill_first: path globs whose chunks get their full vectors before the rest's.

    Returns:
        The run's ``IndexSummary`` (counts new/changed/unchanged/removed/skipped, seconds per phase, warnings).
    """
    cfg = cfg or IndexConfig()
    factory = embedder_factory or _default_embedder_factory
    where = resolve_index_dir(index_dir)
    summary = run_index(
        [Path(p) for p in paths],
        where,
        replace(cfg, embed_model=normalize_spec(cfg.embed_model)),
        factory,
        full=full,
        reporter=reporter,
        version_of=version_of,
        generator_factory=generator_factory,
        confirm=confirm,
        wait=wait,
        parse_workers=parse_workers if embedder_factory is None else 1,
    )
    if cfg.progressive and max_fill_batches != 0:  # the full model's vectors, batch by batch, each committed

        def full_model(spec: dict[str, Any]) -> Embedder:
            return factory(replace(cfg, embed_model=spec["spec"], encoder=spec["encoder"]))

        filled = run_fill(where, reporter, embedder_factory=full_model, max_batches=max_fill_batches, first=fill_first)
        summary.fill = filled.to_dict()
    return summary


def watch(
    paths: list[Path],
    index_dir: str | Path | None,
    run: Callable[[], None],
    on_batch: Callable[[int], None] | None = None,
) -> None:
    """Call ``run()`` after every batch of changes under ``paths`` until interrupted (``ragkit index --watch``)."""
    watching.watch(paths, resolve_index_dir(index_dir), run, on_batch=on_batch)


def open_index(
    index_dir: str | Path | None = None,
    embedder: Embedder | None = None,
    embed_model: str | None = None,
    full_embedder: Embedder | None = None,
) -> IndexReader:
    """The committed state of an index, for querying (the embedding model loads on first use; a progressive
    index being filled also loads its full model, unless ``full_embedder`` is given).

    Raises ``IndexNotFound`` when there is none, ``EmbedderMismatch`` when ``embedder``/``embed_model`` is not
    the one the index was built with."""
    reader = IndexReader(resolve_index_dir(index_dir), embedder=embedder, embed_model=embed_model)
    if full_embedder is not None:
        reader.given_full_embedder = full_embedder
    return reader


def retrieve(reader: IndexReader, text: str, cfg: QueryConfig, limit: int | None = None):
    """Chunk hits for one query, before passage assembly: ``(hits, plan, timings_ms)``.

    The query's reads of the DuckDB store share one connection. A reader follows the newest committed run; a
    query that fails because its run was replaced under it (files removed) is asked again of the new run."""
    reader.follow()
    try:
        with reader.one_connection():
            return run_retrieval(reader, text, cfg, limit)
    except Exception:
        if not reader.follow():
            raise
    with reader.one_connection():
        return run_retrieval(reader, text, cfg, limit)


def query(reader: IndexReader, text: str, cfg: QueryConfig | None = None) -> QueryResult:
    """Retrieve, assemble passages (and pack a context block when ``cfg.context_budget`` asks), timing every
    stage. The answer is separate: ``answer_into(result, cfg)``."""
    cfg = cfg or QueryConfig()
    t0 = time.perf_counter()
    hits, plan, timings = retrieve(reader, text, cfg)
    t = time.perf_counter()
    passages = assemble(hits, cfg.k, cfg.budget)
    if any(p.pages for p in passages):
        mark_scanned(passages, scanned_pages(reader))
    context = pack_context(passages, cfg.context_budget) if cfg.context_budget else None
    timings["assemble"] = (time.perf_counter() - t) * 1000
    timings["total"] = (time.perf_counter() - t0) * 1000
    return QueryResult(
        query=text,
        strategy=plan.strategy,
        plan=plan,
        passages=passages,
        hits=hits,
        timings_ms={k: round(v, 2) for k, v in timings.items()},
        context=context,
        context_items=plan.context_items,
        run=reader.manifest.run_id,
        query_id=new_query_id(),
    )


def log_query(
    reader: IndexReader, result: QueryResult, cfg: QueryConfig, token: str | None = None, source: str = "cli"
) -> bool:
    """Keep the query and the passages it showed in the index's event log, so that feedback can name them
    (``cfg.log`` off: nothing is kept). An index one may read but not write keeps nothing and says False."""
    if not cfg.log:
        return False
    event = query_event(result, cfg.k, cfg.filters, scope_of(cfg.readable, cfg.filters), token, source)
    try:
        Feedback(reader.index_dir).log_query(event)
    except (OSError, RagkitError):
        return False
    return True


def ask(
    reader: IndexReader,
    text: str,
    cfg: QueryConfig,
    on_text: Callable[[str], None] | None = None,
    *,
    passages_ready: Callable[[QueryResult], None] | None = None,
    token: str | None = None,
    source: str = "cli",
) -> tuple[QueryResult, RagkitError | None]:
    """One question through the whole pipeline: the passages (``query``), the answer when ``cfg.answer``
    (``answer_into``, streamed to ``on_text``), and the query kept in the log for feedback (``log_query``).
    ``passages_ready(result)`` runs between passages and answer (a server trims and sends the passages first).
    Returns the result and the error that kept an answer from being written (the passages stand either way)."""
    result = query(reader, text, cfg)
    if passages_ready is not None:
        passages_ready(result)
    failed = answer_into(result, cfg, on_text=on_text, reader=reader) if cfg.answer else None
    log_query(reader, result, cfg, token=token, source=source)
    return result, failed


def feedback(
    index_dir: Path,
    query_id: str,
    rank: int | None,
    grade: int | str | None,
    *,
    kind: str = "explicit",
    source: str = "cli",
    token: str | None = None,
    readable: tuple[str, ...] | None = None,
) -> dict[str, Any]:
    """Feedback on passage ``rank`` of a logged query (its answer when ``rank`` is None): ``good``, ``bad`` or a
    grade 0–3; ``kind`` "open" for a passage opened after it (a weak positive). The event is returned."""
    return Feedback(index_dir).give(
        query_id, rank=rank, grade=grade, kind=kind, source=source, token=token, readable=readable
    )


def open_passage(
    reader: IndexReader,
    query_id: str,
    rank: int,
    *,
    source: str = "cli",
    token: str | None = None,
    readable: tuple[str, ...] | None = None,
) -> dict[str, Any]:
    """The section passage ``rank`` of a logged query comes from (``section``'s answer), kept in the log as a
    click on it (a weak positive)."""
    fb = Feedback(reader.index_dir)
    asked = fb.asked(query_id)
    shown = {p["rank"]: p for p in (asked or {}).get("passages", [])}
    if rank not in shown:
        raise UnknownId(f"no passage {rank} of query {query_id!r} in this index's log")
    found = section(reader, shown[rank]["section_id"], readable)
    fb.give(query_id, rank=rank, grade=1, kind="open", source=source, token=token, readable=readable, asked=asked)
    return found


def page_image(
    reader: IndexReader, key: str, number: int, mark: str = "", readable: tuple[str, ...] | None = None
) -> bytes:
    """Page ``number`` of a readable PDF document (by id or path) as PNG, the text ``mark`` marked on it."""
    doc = browse.find_document(reader, key, readable)
    found = browse.source_of(reader, doc["id"]) if doc else None
    if doc is None or found is None:
        raise UnknownId(f"no document {key!r} in the index")
    source, content_hash = Path(found[0]), found[1] or doc["id"]
    if source.suffix.lower() != ".pdf":
        raise BadQuery(f"{doc['path']} is not a PDF: it has lines, not pages", hint="GET /v1/documents/{path}/text")
    if not source.is_file():
        raise UnknownId(f"the file of {doc['path']} is no longer where it was indexed", hint="index the folder again")
    return render_page(source, content_hash, number, mark, scanned_places)


def flush_log(index_dir: Path) -> int:
    """An index on object storage: upload the queries and ratings this machine logged and has not uploaded yet
    (they go up in batches); how many. A local index: nothing to do, 0."""
    return Feedback(index_dir).log.flush()


def feedback_file(index_dir: Path, path: Path) -> int:
    """Bulk feedback from JSON lines (``{"query_id", "rank", "grade" | "good"}``); how many were recorded."""
    import json

    try:
        rows = [json.loads(line) for line in Path(path).read_text().splitlines() if line.strip()]
    except (OSError, ValueError) as exc:
        raise BadQuery(f"cannot read feedback from {path}: {exc}") from exc
    return Feedback(index_dir).give_many(rows, source="file")


def feedback_export(index_dir: Path, out: Path) -> int:
    """Every logged query and feedback event into ``out`` (JSON lines); how many."""
    return Feedback(index_dir).export(out)


def learn(
    reader: IndexReader,
    labels: tuple[Path, ...] = (),
    *,
    dry_run: bool = False,
    min_queries: int = ranking.MIN_QUERIES,
    min_answers: int = abstaining.MIN_ANSWERS,
) -> list[ranking.Outcome]:
    """Fit a ranker per scope from the index's feedback (and ``labels``: BEIR folders or labelled questions),
    adopting each only when it ranks the held-out queries better (``ranking.learn``); and, where answers were
    rated, the confidence under which they abstain, per scope and language, adopted only when it decides the
    held-out rated answers better (``abstaining.learn``)."""
    judged = Feedback(reader.index_dir).judged()
    out = ranking.learn(reader, judged, retrieve, labels, dry_run=dry_run, min_queries=min_queries)
    out += abstaining.learn(
        reader, judged, _extract, partial(_abstain_threshold, reader), dry_run=dry_run, min_answers=min_answers
    )
    if any(o.adopted for o in out):
        remote.push_learned(reader.index_dir)  # an index on object storage: for every reader, not this one only
    return out


def _extract(reader: IndexReader, text: str, cfg: QueryConfig) -> Answer:
    """The extractive answer a query gets (``ragkit learn`` asks rated queries again)."""
    return answer(query(reader, text, cfg), replace(cfg, answer_mode="extract"), reader=reader)


def _abstain_threshold(reader: IndexReader, scope: str, language: str) -> float:
    """The confidence under which a query of ``scope`` in ``language`` abstains now."""
    learned = reader.rankers.abstain_thresholds(scope)
    return learned.get(language, default_answer_model().threshold_for(language, reader.manifest.embedder.name))


def unlearn(reader: IndexReader) -> int:
    """Drop the adopted rankers and learned answer thresholds (the shipped default, the hand-set weights and the
    answer model's own thresholds hold again); how many scopes had either."""
    n = ranking.reset(reader.index_dir)
    remote.push_learned(reader.index_dir)
    return n


def warm(reader: IndexReader) -> None:
    """Load the embedding model and what a first query needs (a server does this before it listens): one
    query, and for an index with entities the graph strategies' data (a first hippo query took 1.6 s more)."""
    cfg = QueryConfig(k=1, retry=False)
    query(reader, "warm up", cfg)
    if reader.facts["entities"]:
        reader.entity_graph.walk(cfg.of(hippo.Settings).damping)
        reader.knowledge.matrix("entities")


def answer(
    result: QueryResult,
    cfg: QueryConfig,
    on_text: Callable[[str], None] | None = None,
    reader: IndexReader | None = None,
) -> Answer:
    """An answer to ``result.query`` from its passages; ``on_text`` receives it as it is written.

    ``cfg.answer_mode``: "extract" quotes the sentences that answer (no model); "generate" has the generate
    model write one and checks every sentence against what it cites (an answer under half supported is replaced
    by the quotes); "auto" generates only with a model other than the bundled 270M one, else extracts. Either
    says "the documents do not say" in the question's language when the passages do not answer. ``reader``
    (the result's index) lends its vocabulary, its encoder and the source files' paths to the checks.

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
    model = _answer_model(reader, cfg)
    quotes = extract_answer(evidence, result.query, idf, language, query_vector, encode, model, encoder)
    generator = None
    if cfg.answer_mode == "generate" or (
        cfg.answer_mode == "auto" and cfg.model and not cfg.model.startswith("bundled")
    ):
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
    checked = check_claims(written, evidence, idf, language, reader.embedder if reader else None)
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


def _answer_model(reader: IndexReader | None, cfg: QueryConfig) -> AnswerModel:
    """The answer scorer, with the abstention thresholds the index learned for the query's scope (``ragkit
    learn`` from rated answers; ``cfg.learned`` off: the shipped ones)."""
    model = default_answer_model()
    if reader is None or not cfg.learned:
        return model
    return model.with_thresholds(reader.rankers.abstain_thresholds(scope_of(cfg.readable, cfg.filters)))


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
):
    """Write the answer into ``result.answer`` (or why there is none into ``result.answer_error``); returns the
    error instead of raising it, so that the passages are shown either way."""
    try:
        result.answer = answer(result, cfg, on_text=on_text, reader=reader)
    except RagkitError as exc:
        result.answer_error = str(exc)
        return exc
    return None
