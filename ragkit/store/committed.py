"""The committed run of one index as the store holds it (``CommittedIndex``): the manifest, the committed
LanceDB version of the chunks table, DuckDB on demand, the graphs, the vocabulary, the planning facts and the
knowledge rows, loaded once. ``ragkit.reader.IndexReader`` adds what the models read (the embedders, the learned
rankers, the reference resolver) and the read scopes and derived vectors built over it."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import cached_property
from pathlib import Path
from typing import Any

from ragkit.errors import IndexChanged, IndexCorrupt, IndexNotFound
from ragkit.store import arrays, remote
from ragkit.store.chunks import open_chunks
from ragkit.store.duck import DuckStore
from ragkit.store.entity_graph import EntityGraph
from ragkit.store.fill import FillTable
from ragkit.store.graph import EvidenceGraph
from ragkit.store.knowledge.rows import KnowledgeMemory, StoreRows
from ragkit.store.lance_rows import COMPOUND_FTS
from ragkit.store.layout import VOCAB_FILE, graph_path, store_path
from ragkit.store.manifest import NAME as MANIFEST
from ragkit.store.manifest import Manifest, read_manifest


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


class CommittedIndex:
    """The committed state of one index in the store, for reading.

    Opening reads the manifest and opens the committed LanceDB version of the chunks table (``chunks``); all
    else is loaded on first use and kept until the index follows a newer run (``functools.cached_property``):
    the evidence and entity graphs, the planning facts, the vocabulary, and whatever a query stage builds once
    (``memo``). DuckDB is opened per use, read-only (``duck()``), or once per query inside ``one_connection()``.

    ``follow()`` reopens the index when a newer run has been committed, so a session or a server never answers
    from a replaced run; what a subclass keeps across runs it names in ``_kept_across_runs``. Not thread-safe.
    """

    def __init__(self, index_dir: Path):
        self.index_dir = Path(index_dir)
        if not self.index_dir.exists():
            raise IndexNotFound(f"no index at {self.index_dir}")
        self._open()

    def _open(self) -> None:
        """Read the committed run: its manifest, its files, its chunks table (all else on first use)."""
        self.stamp = _stamp(self.index_dir, max_age=0.0)
        self.manifest: Manifest = read_manifest(self.index_dir)
        self.run_id: int = self.manifest.run_id
        self.store_path = store_path(self.index_dir, self.manifest)
        self.graph_dir = graph_path(self.index_dir, self.manifest)
        self._memo: dict[str, Any] = {}
        self._sharing = 0  # depth of one_connection() blocks
        self._shared: DuckStore | None = None
        self._queries = 0  # one_connection() blocks so far (queries answered)
        self._memory: KnowledgeMemory | None = None
        run = self.manifest.last_run
        try:
            self.chunks = open_chunks(
                remote.lance_location(self.index_dir), run.lance_table, run.lance_version, self.manifest.fts_language
            )
        except Exception as exc:  # missing table files, bad version, …
            raise IndexCorrupt(f"cannot open the chunks table of {self.index_dir}: {exc}") from exc

    def _superseded(self, store: DuckStore) -> dict[str, str]:
        """Older document id → the id of the one superseding it, to rebuild a stale evidence graph: the
        reference resolver's (ragkit/extract/resolve.py), which the reader above the stages builds."""
        raise NotImplementedError

    def _derived(self, cls):
        """A graph of the committed run: the saved one, or rebuilt from the store if it is stale."""
        g = cls.load(self.graph_dir)
        if g is None or g.run_id != self.run_id:
            with self.duck() as store:
                if cls is EvidenceGraph:
                    g = cls.from_store(store, self.run_id, self._superseded(store))
                else:
                    g = cls.from_store(store, self.run_id)
        return g

    @cached_property
    def fill(self) -> FillTable | None:
        """A progressive index being filled: the full model's vectors committed so far (None otherwise)."""
        spec = self.manifest.fill
        if not spec or spec.get("version") is None:
            return None
        return FillTable(remote.lance_location(self.index_dir), spec["version"])

    @cached_property
    def graph(self) -> EvidenceGraph:
        """The evidence graph (document/section/chunk structure, references, versions)."""
        return self._derived(EvidenceGraph)

    @cached_property
    def entity_graph(self) -> EntityGraph:
        """The entity graph (entities, chunks, mentions, relations)."""
        return self._derived(EntityGraph)

    def loaded_entity_graph(self) -> EntityGraph | None:
        """The entity graph if it has been loaded already (None: it has not; asking would load it)."""
        return self.__dict__.get("entity_graph")

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

    def titles(self) -> list[tuple[str, str]]:
        """Every document's (id, title) with chunks, in the order they were stored: from the chunks held in
        memory, or for a large table from the store (scanning 266,851 chunk rows for 6,637 titles took 0.1-0.2 s
        of a one-shot query)."""
        if self.chunks.exact:
            return self.chunks.titles()
        with self.duck() as store:
            return [(r["id"], r["title"]) for r in store.rows(DOCUMENT_TITLES)]

    def knowledge_rows(self) -> StoreRows | KnowledgeMemory:
        """What the graph strategies read per query (entity, relation and community rows): from the store for
        a reader's first query, from memory once it answers a second (ragkit/store/knowledge/rows.py)."""
        if self._memory is None and self._queries >= 2:
            with self.duck_alone() as store:
                self._memory = KnowledgeMemory(store)
        return self._memory or StoreRows(self.duck)

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

    def _kept_across_runs(self) -> dict[str, Any]:
        """What ``follow()`` keeps when it reopens the index (attribute name → value)."""
        return {"index_dir": self.index_dir}

    def follow(self) -> bool:
        """Read the newest committed run if there is one (True: reopened). Every cached property goes with the
        replaced run but what ``_kept_across_runs`` names."""
        if not self._changed():
            return False
        kept = self._kept_across_runs()
        self.__dict__.clear()
        self.__dict__.update(kept)
        self._open()
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
