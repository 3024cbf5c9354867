"""Plain records passed between stages."""

from __future__ import annotations

from dataclasses import dataclass, field
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
    target: str | None = None  # link: path[#anchor]; law: abbreviation or SFS number of the cited law
    unit: str | None = None  # "§" | "art"
    numbers: list[str] = field(default_factory=list)  # paragraph/article numbers (a range is expanded)
    chapter: str | None = None  # Swedish "3 kap."
    subsection: str | None = None  # "Abs. 2"


@dataclass
class ParsedDocument:
    document: Document
    sections: list[Section]
    blocks: dict[str, list[Block]]  # section id -> body blocks
    refs: list[Any] = field(default_factory=list)  # ragkit.ingest.resolve.RefRow
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

    @property
    def location(self) -> str:
        """Where it is in its file: ``:12-30`` (lines) or `` p. 12–13`` (pages of a PDF)."""
        if self.pages:
            first, last = self.pages
            return f" p. {first}" if first == last else f" p. {first}–{last}"
        return f":{self.line_start}-{self.line_end}"


@dataclass
class QueryResult:
    query: str
    strategy: str
    plan: dict[str, Any]
    passages: list[Passage]
    hits: list[Hit]
    timings_ms: dict[str, float]
    context: Any = None  # ragkit.assemble.ContextPack when packing was asked for
    context_items: list[dict[str, Any]] = field(default_factory=list)  # graph strategies' entities, reports…
    answer: Any = None  # ragkit.answer.Answer when one was written
    answer_error: str | None = None  # why no answer was written (the passages are still there)
    run: int | None = None  # the committed indexing run that answered


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
