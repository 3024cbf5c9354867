"""The read side of an index (``IndexReader``): the committed LanceDB version, DuckDB on demand, the embedder,
the graphs and everything a query reads, loaded once."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import cached_property
from pathlib import Path
from typing import Any

from ragkit.embed import Embedder, load_embedder, normalize_spec, query_encoder, same_model, tuned
from ragkit.errors import EmbedderMismatch, IndexChanged, IndexCorrupt, IndexNotFound
from ragkit.extract.resolve import Resolver
from ragkit.records import Hit
from ragkit.rerank.ranker import Rankers
from ragkit.store import arrays, remote
from ragkit.store.duck import DuckStore
from ragkit.store.entity_graph import EntityGraph
from ragkit.store.fill import FillTable
from ragkit.store.graph import EvidenceGraph
from ragkit.store.knowledge.rows import KnowledgeMemory, StoreRows
from ragkit.store.knowledge.vectors import DerivedVectors
from ragkit.store.lance import COMPOUND_FTS, ChunkTable
from ragkit.store.layout import RESOLVER_FILE, VOCAB_FILE, graph_path, store_path
from ragkit.store.manifest import NAME as MANIFEST
from ragkit.store.manifest import Manifest, read_manifest
from ragkit.store.scopes import Scopes
from ragkit.store.terms import TermVectors


def _stamp(index_dir: Path, max_age: float = 1.0) -> tuple[int, int] | None:
    """What changes when a run commits (the manifest is replaced by a rename: a new inode). For an index on
    object storage the remote manifest is looked at first (at most once per ``max_age`` seconds)."""
    remote.refresh(index_dir, max_age)
    try:
        st = (index_dir / MANIFEST).stat()
    except OSError:
        return None
    return st.st_ino, st.st_mtime_ns


DOCUMENT_TITLES = "SELECT id, title FROM documents WHERE id IN (SELECT document_id FROM chunks) ORDER BY rowid"


class IndexReader:
    """The committed state of one index, for querying: what every query and every strategy reads.

    Opening reads the manifest and opens the committed LanceDB version of the chunks table (``chunks``); all
    else is loaded on first use and kept for the reader's life (``functools.cached_property``): the embedder,
    the evidence and entity graphs, the reference resolver, the planning facts, the vocabulary, the derived
    vectors of entities, relations, communities and tree nodes (``knowledge``), and whatever a query stage
    builds once (``memo``). DuckDB is opened per use, read-only (``duck()``), or once per query inside
    ``one_connection()``.

    A reader follows the index: ``follow()`` reopens it when a newer run has been committed (the embedder is
    kept), so a session or a server never answers from a replaced run. A reader is not thread-safe; a server
    serializes its queries on one reader.
    """

    def __init__(self, index_dir: Path, embedder: Embedder | None = None, embed_model: str | None = None):
        self.index_dir = Path(index_dir)
        if not self.index_dir.exists():
            raise IndexNotFound(f"no index at {self.index_dir}")
        self.stamp = _stamp(self.index_dir, max_age=0.0)
        self.manifest: Manifest = read_manifest(self.index_dir)
        self.run_id: int = self.manifest.run_id
        self.store_path = store_path(self.index_dir, self.manifest)
        self.graph_dir = graph_path(self.index_dir, self.manifest)
        info = self.manifest.embedder
        if embed_model is not None and normalize_spec(embed_model) != info.spec:
            raise EmbedderMismatch(f"{self.index_dir} was built with {info.spec}, not {embed_model}")
        if embedder is not None:
            self._check(embedder)
        self._given_embedder = embedder
        self._tuned: Embedder | None = None  # ragkit's query encoder over this index's embedder, once asked for
        self.given_full_embedder: Embedder | None = None  # a progressive index's full model, if the caller has it
        self._memo: dict[str, Any] = {}
        self._sharing = 0  # depth of one_connection() blocks
        self._shared: DuckStore | None = None
        self._queries = 0  # one_connection() blocks so far (queries answered)
        self._memory: KnowledgeMemory | None = None
        run = self.manifest.last_run
        try:
            self.chunks = ChunkTable(
                remote.lance_location(self.index_dir), run.lance_table, run.lance_version, self.manifest.fts_language
            )
        except Exception as exc:  # missing table files, bad version, …
            raise IndexCorrupt(f"cannot open the chunks table of {self.index_dir}: {exc}") from exc

    def _check(self, embedder: Embedder) -> None:
        info = self.manifest.embedder
        if embedder.fingerprint != info.fingerprint or embedder.dimension != info.dimension:
            raise EmbedderMismatch(
                f"{self.index_dir} was built with {info.name} ({info.dimension}d, {info.fingerprint}), "
                f"the query embedder is {embedder.name} ({embedder.dimension}d, {embedder.fingerprint})"
            )

    @cached_property
    def rankers(self) -> Rankers:
        """The learned rankers the index has adopted (``learned/``), read again when ``ragkit learn`` adopts
        another."""
        return Rankers(self.index_dir)

    def _derived(self, cls):
        """A graph of the committed run: the saved one, or rebuilt from the store if it is stale."""
        g = cls.load(self.graph_dir)
        if g is None or g.run_id != self.run_id:
            with self.duck() as store:
                g = cls.from_store(store, self.run_id)
        return g

    @cached_property
    def embedder(self) -> Embedder:
        """The index's own embedder (the given one, else loaded: no torch on the query path; an int8 index
        gets int8 queries)."""
        if self._given_embedder is not None:
            return self._given_embedder
        info = self.manifest.embedder
        keys = self.manifest.index_config.get("api_keys")
        emb = load_embedder(info.spec, encoder=query_encoder(info.encoder), keys=keys)
        self._check(emb)
        if info.kind in ("http", "gguf") and info.probe and not same_model(info.probe, emb):
            raise EmbedderMismatch(
                f"{info.spec} no longer answers as the model {self.index_dir} was built with "
                "(another model under the same name?)"
            )
        return emb

    def query_embedder(self, choice: str = "auto", language: str | None = None) -> Embedder:
        """The embedder of this index's questions: its own, or for an index of multilingual-e5-small ragkit's
        query encoder (ragkit/embed/tuned.py), as ``choice`` ("auto": where its card says for the question's
        ``language``, "ragkit", "original") says. Passages are always the index's own."""
        info = self.manifest.embedder
        if not tuned.wanted(choice, info.spec, info.encoder, language):
            return self.embedder
        if self._tuned is None:
            self._tuned = tuned.TunedQueries(self.embedder)
        return self._tuned

    @cached_property
    def fill(self) -> FillTable | None:
        """A progressive index being filled: the full model's vectors committed so far (None otherwise)."""
        spec = self.manifest.fill
        if not spec or spec.get("version") is None:
            return None
        return FillTable(remote.lance_location(self.index_dir), spec["version"])

    @cached_property
    def full_embedder(self) -> Embedder:
        """A progressive index's full model (its queries search the filled vectors with it)."""
        spec = self.manifest.fill
        emb = self.given_full_embedder or load_embedder(
            spec["spec"], encoder=query_encoder(spec.get("encoder", "onnx"))
        )
        if emb.fingerprint != spec["fingerprint"]:
            raise EmbedderMismatch(f"{self.index_dir} is being filled with {spec['name']}, not {emb.name}")
        return emb

    @cached_property
    def graph(self) -> EvidenceGraph:
        """The evidence graph (document/section/chunk structure, references, versions)."""
        return self._derived(EvidenceGraph)

    @cached_property
    def entity_graph(self) -> EntityGraph:
        """The entity graph (entities, chunks, mentions, relations)."""
        return self._derived(EntityGraph)

    @cached_property
    def knowledge(self) -> DerivedVectors:
        """Vector search over the committed run's entities, relations, community reports and tree nodes
        (their vectors derived from the chunk vectors on first use)."""
        return DerivedVectors(self)

    @cached_property
    def term_vectors(self) -> TermVectors:
        """The vocabulary's vectors for ``--expand`` (embedded on first use, cached in the index)."""
        return TermVectors(
            self.index_dir,
            self.run_id,
            self.duck,
            lambda texts: self.embedder.encode(texts),
            self.manifest.embedder.fingerprint,
        ).load()

    @cached_property
    def facts(self) -> dict[str, Any]:
        """What the committed run holds that planning needs: doc types, entity, community and tree-node counts
        (from the manifest; from the store for an index whose manifest lacks them)."""
        facts = self.manifest.facts
        if facts is None:
            with self.duck() as store:
                facts = store.planning_facts()
        return {**facts, "doc_types": set(facts["doc_types"])}

    @cached_property
    def vocabulary(self) -> dict[str, int]:
        """The index's words and their chunk frequencies: the committed run's snapshot next to its graphs,
        else (stale or missing) the store's ``vocab`` table (read once)."""
        saved = arrays.load_vocabulary(self.graph_dir, VOCAB_FILE)
        if saved is not None and saved[1] == self.run_id:
            return saved[0]
        with self.duck() as store:
            return store.vocabulary()

    @cached_property
    def resolver(self) -> Resolver:
        """Reference resolver over all documents and sections: the committed run's, saved beside its graphs,
        else (stale, missing or of another format) built from the store."""
        saved = arrays.load(self.graph_dir, RESOLVER_FILE)
        if saved is not None and saved[1] == self.run_id:
            found = Resolver.from_state(saved[0].get("state") or {})
            if found is not None:
                return found
        with self.duck() as store:
            return store.resolver()

    def titles(self) -> list[tuple[str, str]]:
        """Every document's (id, title) with chunks, in the order they were stored: from the chunks held in
        memory, or for a large table from the store (scanning 266,851 chunk rows for 6,637 titles took 0.1-0.2 s
        of a one-shot query)."""
        if self.chunks.exact():
            return self.chunks.titles()
        with self.duck() as store:
            return [(r["id"], r["title"]) for r in store.rows(DOCUMENT_TITLES)]

    @cached_property
    def scopes(self) -> Scopes:
        """Who may read what: filters, readable collections, superseded versions (ragkit/store/scopes.py)."""
        return Scopes(self)

    def knowledge_rows(self):
        """What the graph strategies read per query (entity, relation and community rows): from the store for
        a reader's first query, from memory once it answers a second (ragkit/store/knowledge/rows.py)."""
        if self._memory is None and self._queries >= 2:
            with self.duck_alone() as store:
                self._memory = KnowledgeMemory(store)
        return self._memory or StoreRows(self)

    def memo(self, name: str, build: Callable[[], Any]) -> Any:
        """What a query stage built from this committed index (the speller, …), built once per reader."""
        if name not in self._memo:
            self._memo[name] = build()
        return self._memo[name]

    @property
    def language(self) -> str:
        """The index's language as its BM25 index has it: "de", "sv" or "en"."""
        return COMPOUND_FTS.get(self.manifest.fts_language, "en")

    def duck(self) -> DuckStore | _Borrowed:
        """A short-lived read-only connection (a held one would block the indexer), to use as ``with
        reader.duck() as store``; inside ``one_connection()`` the block's shared connection."""
        if not self._sharing:
            return self._open_store()
        if self._shared is None:
            self._shared = self._open_store()
        return _Borrowed(self._shared)

    def _open_store(self, alone: bool = False) -> DuckStore:
        if not self.store_path.exists() and self._changed():
            raise IndexChanged(f"{self.index_dir}: a newer run was committed while this one was read")
        return DuckStore(self.store_path, read_only=True, alone=alone)

    def duck_alone(self) -> DuckStore:
        """A read-only connection of its own for one big read that is kept (derived rows, a warm reader's
        knowledge rows): the memory DuckDB used for it goes back when it closes."""
        return self._open_store(alone=True)

    def _changed(self) -> bool:
        """Has a run been committed since this reader opened the index?"""
        return _stamp(self.index_dir) != self.stamp

    def follow(self) -> bool:
        """Read the newest committed run if there is one (True: reopened); the embedder is kept."""
        if not self._changed():
            return False
        index_dir, embedder = self.index_dir, self.__dict__.get("embedder", self._given_embedder)
        self.__dict__.clear()  # every cached property goes with the replaced run
        self.__init__(index_dir, embedder)
        return True

    @contextmanager
    def one_connection(self) -> Iterator[None]:
        """Every ``duck()`` inside the block shares one read-only connection, opened on first use and closed
        when the block ends: a query attaches the store once and holds it no longer."""
        if not self._sharing:
            self._queries += 1
        self._sharing += 1
        try:
            yield
        finally:
            self._sharing -= 1
            if not self._sharing and self._shared is not None:
                self._shared.close()
                self._shared = None


class _Borrowed:
    """The shared connection of a ``one_connection()`` block, as a ``with`` target that does not close it."""

    def __init__(self, store: DuckStore):
        self.store = store

    def __enter__(self) -> DuckStore:
        return self.store

    def __exit__(self, *exc) -> None:
        return None


def to_hits(rows: list[dict[str, Any]], kind: str) -> list[Hit]:
    """Chunk rows of a dense (``_distance``) or BM25 (``_score``) search as hits."""
    hits = []
    for r in rows:
        score = 1.0 - float(r["_distance"]) if kind == "dense" else float(r["_score"])
        hits.append(
            Hit(
                chunk_id=r["id"],
                document_id=r["document_id"],
                section_id=r["section_id"],
                chunk_index=int(r["chunk_index"]),
                text=r["text"],
                header=r["header"],
                path=r["path"],
                title=r["title"],
                doc_type=r["doc_type"],
                collection=r["collection"],
                line_start=int(r["line_start"]),
                line_end=int(r["line_end"]),
                token_count=int(r["token_count"]),
                external_id=r["external_id"],
                score=score,
                boundary_confidence=float(r["boundary_confidence"]),
                vector=r.get("vector"),
                page_start=r.get("page_start"),
                page_end=r.get("page_end"),
            )
        )
    return hits
