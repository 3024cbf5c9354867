"""Plain records passed between stages."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any


@dataclass
class Section:
    id: str
    document_id: str
    parent_id: str | None
    heading: str
    level: int  # 0 = document root
    breadcrumb: str
    order: int
    line_start: int  # 1-based, inclusive
    line_end: int


@dataclass
class Block:
    """A paragraph-like unit of a section body, before chunking."""

    text: str
    line_start: int
    line_end: int


@dataclass
class Document:
    id: str
    path: str  # display path (relative to the indexed root, or root/file#id for jsonl)
    source_path: str  # absolute path of the file it came from
    source_hash: str  # content hash of that file
    external_id: str  # BEIR _id, or the relative path
    title: str
    doc_type: str
    collection: str
    metadata: dict[str, Any]
    mtime: float
    version: str | None = None
    is_latest: bool = True
    supersedes: str | None = None  # path or id of the older version
    line_count: int = 0
    language: str = "en"  # detected from the text (ragkit.text.detect_language): de, sv or en


@dataclass
class Ref:
    """A reference found in text: a link to another file or a legal citation (ragkit/legal.py)."""

    kind: str  # "link" | "law"
    raw: str
    start: int
    end: int
    target: str | None = None  # link: path[#anchor]; law: the cited law as a string (ragkit.legal.LawTarget)
    unit: str | None = None  # "§" | "art"
    numbers: list[str] = field(default_factory=list)  # paragraph/article numbers (a range is expanded)
    chapter: str | None = None  # Swedish "3 kap."
    subsection: str | None = None  # "Abs. 2"


@dataclass
class RefRow:
    """A reference as the store keeps it (the ``refs`` table): where it was found, what it names, and what it
    resolved to across the index (ragkit/extract/resolve.py)."""

    id: str
    chunk_id: str
    document_id: str
    kind: str
    raw: str
    target: str | None
    unit: str | None
    numbers: list[str]
    chapter: str | None
    subsection: str | None
    resolved_document_id: str | None = None
    resolved_section_id: str | None = None


@dataclass
class ParsedDocument:
    document: Document
    sections: list[Section]
    refs: list[RefRow] = field(default_factory=list)
    entities: EntityRows = field(default_factory=lambda: EntityRows())
    warnings: list[str] = field(default_factory=list)  # what of the file could not be read (the rest is indexed)


@dataclass
class EntityRows:
    """What extraction found in one run's documents, as rows for the store."""

    mentions: list[dict[str, Any]] = field(default_factory=list)  # entity ↔ chunk, with the sentence span
    cooccur: list[dict[str, Any]] = field(default_factory=list)  # entity pairs per chunk (a < b)
    aliases: list[dict[str, Any]] = field(default_factory=list)  # alias key → entity key, per document

    def extend(self, other: EntityRows) -> EntityRows:
        self.mentions += other.mentions
        self.cooccur += other.cooccur
        self.aliases += other.aliases
        return self


@dataclass
class Chunk:
    id: str
    document_id: str
    section_id: str
    index: int  # position in document
    text: str
    header: str  # contextual header (breadcrumb)
    token_count: int
    line_start: int
    line_end: int
    boundary_confidence: float
    page_start: int | None = None  # paged formats (PDF): 1-based pages of its first and last line
    page_end: int | None = None

    @property
    def embed_text(self) -> str:
        return f"{self.header}\n{self.text}" if self.header else self.text


@dataclass
class RunChanges:
    """What one indexing run changes in the store, written in one DuckDB transaction (``DuckStore.commit_run``):
    documents removed (their sources deleted, gone from disk or replaced), the sources as they are now, and
    the new documents with their sections, chunks, references and extracted entities. ``full``: everything
    before is dropped; ``tree``: build the summary tree of the new documents."""

    removed_doc_ids: list[str]
    removed_sources: list[str]
    sources: list[dict[str, Any]]
    documents: list[Document]
    sections: list[Section]
    chunks: list[Chunk]
    refs: list[Any] = field(default_factory=list)
    entities: EntityRows = field(default_factory=lambda: EntityRows())
    full: bool = False
    tree: bool = True

    def release(self) -> None:
        """Forget the new rows once the store holds them (``DuckStore.commit_run``, before the communities): what
        comes after needs their memory (all federal law's sections, chunks, references and mentions: ~1.8 GB)."""
        self.documents, self.sections, self.chunks, self.refs, self.entities = [], [], [], [], EntityRows()


@dataclass
class IndexSummary:
    """What one indexing run did: files new, changed, unchanged, removed and skipped, what it wrote, the seconds
    of each phase, its warnings, the index's totals after it, and the peak memory of the process."""

    index_dir: str
    new: int = 0
    changed: int = 0
    unchanged: int = 0
    removed: int = 0
    skipped: int = 0
    pages_without_text: int = 0  # pages without a text layer (scans) not read (no OCR engine, or --no-ocr)
    pages_ocr: int = 0  # pages read by OCR (ragkit/ingest/ocr.py; from its cache or not)
    unread_files: list[str] = field(default_factory=list)  # the files with unread pages, and which
    documents: int = 0  # documents written by this run
    chunks: int = 0  # chunks embedded by this run
    total_documents: int = 0
    total_chunks: int = 0
    seconds: dict[str, float] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    extract: dict[str, int] = field(default_factory=dict)  # LLM extraction: chunks, invalid outputs, dropped names
    knowledge: dict[str, int] = field(default_factory=dict)  # entities, relations, communities recomputed
    tree: dict[str, int] = field(default_factory=dict)  # summary-tree nodes written by this run
    written: dict[str, int] = field(default_factory=dict)  # --summaries llm: nodes and reports an LLM wrote
    peak_rss_mb: float = 0.0  # the process's peak resident memory so far (with --engine ray: the driver's)
    fill: dict[str, Any] = field(default_factory=dict)  # a progressive index: full vectors filled, batches, seconds

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass
class Community:
    """A community of the entity graph (ragkit/extract/communities.py), with the report written from its
    members' strongest relations when it is shown (ragkit/store/knowledge/reports.py)."""

    id: str
    level: int
    parent_id: str | None
    members: list[str]
    title: str = ""
    report: str = ""
    top_entities: list[str] = field(default_factory=list)
    parent_members: list[str] = field(default_factory=list)
    source_documents: set[str] = field(default_factory=set)  # documents whose sentences the report quotes


@dataclass
class SummaryNode:
    """A node of the RAPTOR-lite tree above the chunks: level 1 = a section, level 2 = a document."""

    id: str
    level: int
    document_id: str
    section_id: str | None  # None for a document node
    parent_id: str | None  # the nearest node above (a section's enclosing section or its document)
    collection: str
    title: str  # breadcrumb of the section, title of the document
    text: str  # the summary (centroid sentences, or an LLM's summary)
    chunk_ids: list[str]  # every chunk under the node, in document order
    method: str  # extractive | llm
    line_start: int
    line_end: int
    vector: Any = None


@dataclass
class Hit:
    """One retrieved chunk with the fields the query path needs."""

    chunk_id: str
    document_id: str
    section_id: str
    chunk_index: int
    text: str
    header: str
    path: str
    title: str
    doc_type: str
    collection: str
    line_start: int
    line_end: int
    token_count: int
    external_id: str = ""
    boundary_confidence: float = 1.0
    score: float = 0.0
    retrieval_score: float | None = None  # the strategy's score, kept when reranking replaces ``score``
    features: dict[str, float] = field(default_factory=dict)
    vector: Any = None  # the chunk's embedding when the store returned it (coherence of passages)
    ranks: dict[str, int] = field(default_factory=dict)  # per retriever, 1-based
    scores: dict[str, float] = field(default_factory=dict)  # raw per retriever
    page_start: int | None = None  # paged formats (PDF)
    page_end: int | None = None


@dataclass
class Passage:
    rank: int
    score: float
    anchor_score: float
    document_id: str
    path: str
    title: str
    section: str
    line_start: int
    line_end: int
    text: str
    chunk_ids: list[str]
    token_count: int
    features: dict[str, float] = field(default_factory=dict)
    coherence_score: float = 1.0
    doc_type: str = ""
    collection: str = ""
    pages: list[int] | None = None  # paged formats (PDF): first and last page, e.g. [12, 13]
    section_id: str = ""
    ocr: float | None = None  # read by OCR from a scan: the engine's lowest confidence (0–100) on its pages

    @property
    def location(self) -> str:
        """Where it is in its file: ``:12-30`` (lines) or `` p. 12–13`` (pages of a PDF)."""
        if self.pages:
            first, last = self.pages
            return f" p. {first}" if first == last else f" p. {first}–{last}"
        return f":{self.line_start}-{self.line_end}"


# the ragkit.query/1 plan object's fields, in the order it prints them (a strategy's own remarks follow
# ``references``); ``expansions`` repeats ``expanded_queries`` under its name from before the planner
PLAN_FIELDS = (
    "strategy", "reason", "original", "planner", "rewritten", "query_text", "language", "retrieval_strategy",
    "doc_type_routing", "expanded_queries", "expansions", "boost_sections", "identifiers", "entities", "corrections",
    "related_terms", "sub_queries", "constraints", "planner_notes", "retry", "fusion", "references",
)  # fmt: skip
PLAN_TAIL = ("rerank", "weights", "all_versions")


@dataclass
class Plan:
    """How one query was run, rendered as the ``plan`` object of ragkit.query/1 (``to_dict``): the strategy
    and why, the planner's rewrite, expansions, constraints and corrections, the corrective retry, the fusion,
    the legal references resolved, the strategy's own remarks (``notes``: seed entities, fallback, tree nodes,
    title links), and the reranking."""

    strategy: str
    reason: str
    original: str
    query_text: str
    language: str = "en"
    planner: str = "rules"
    rewritten: str | None = None
    retrieval_strategy: str = "balanced"  # the rerank mode used: precision | balanced | recall
    doc_type_routing: list[str] = field(default_factory=list)
    expanded_queries: list[str] = field(default_factory=list)
    boost_sections: list[str] = field(default_factory=list)
    identifiers: list[str] = field(default_factory=list)
    entities: list[str] = field(default_factory=list)
    corrections: list[dict[str, str]] = field(default_factory=list)
    related_terms: list[dict[str, Any]] = field(default_factory=list)
    sub_queries: list[str] = field(default_factory=list)
    constraints: dict[str, Any] = field(default_factory=dict)
    planner_notes: list[str] = field(default_factory=list)
    retry: dict[str, Any] | None = None
    fusion: dict[str, Any] | None = None  # hybrid only: method, alpha, overfetch (and k or normalised_over)
    references: list[dict[str, Any]] = field(default_factory=list)
    notes: dict[str, Any] = field(default_factory=dict)  # the strategy's remarks, printed as plan keys
    rerank: dict[str, Any] = field(default_factory=dict)  # requested, used, mode, reason
    weights: dict[str, float] = field(default_factory=dict)
    all_versions: bool = False
    context_items: list[dict[str, Any]] = field(default_factory=list)  # not in the plan: the result's ``context``
    query_vector: Any = None  # not in the plan: the query's embedding when the strategy made one (answers reuse it)
    scope: str = "all"  # not in the plan: the learned ranker's, answer thresholds' and feedback's scope (planning's)

    def to_dict(self) -> dict[str, Any]:
        out = {name: self.expanded_queries if name == "expansions" else getattr(self, name) for name in PLAN_FIELDS}
        out.update(self.notes)
        out.update({name: getattr(self, name) for name in PLAN_TAIL})
        return out

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Plan:
        """The plan a ``to_dict`` printed (a server's result)."""
        names = {f.name for f in fields(cls)} - {"notes", "context_items", "query_vector", "scope"}
        known = {k: v for k, v in d.items() if k in names}
        notes = {k: v for k, v in d.items() if k not in names and k != "expansions"}
        return cls(**known, notes=notes)


@dataclass
class QueryResult:
    query: str
    strategy: str
    plan: Plan
    passages: list[Passage]
    hits: list[Hit]
    timings_ms: dict[str, float]
    context: Any = None  # ragkit.assemble.ContextPack when packing was asked for
    context_items: list[dict[str, Any]] = field(default_factory=list)  # graph strategies' entities, reports…
    answer: Any = None  # ragkit.answer.Answer when one was written
    answer_error: str | None = None  # why no answer was written (the passages are still there)
    run: int | None = None  # the committed indexing run that answered
    query_id: str = ""  # names this result in feedback (``ragkit feedback QUERY_ID``)


@dataclass
class Scope:
    """What the filters allow: documents and their collections.

    Context items (entity descriptions, relation sentences, community reports)
    are shown only when every document their text comes from is allowed.
    """

    documents: set[str]
    collections: set[str]

    def allows(self, collection: str | None, source_documents) -> bool:
        return collection in self.collections and all(d in self.documents for d in source_documents or ())
