"""The read side of an index (``IndexReader``): the committed run as the store holds it
(ragkit/store/committed.py) with what the models read over it, loaded once: the embedder (and ragkit's query
encoder, and a progressive index's full model), the learned rankers, the reference resolver, the read scopes,
the vocabulary's vectors and the derived vectors of entities, relations, communities and tree nodes.

It stands above the stages (ragkit/embed, ragkit/rerank, ragkit/extract) and the store, which imports none of
them."""

from __future__ import annotations

from functools import cached_property
from pathlib import Path
from typing import Any

from ragkit.embed import Embedder, load_embedder, normalize_spec, query_encoder, same_model, tuned
from ragkit.errors import EmbedderMismatch
from ragkit.extract.resolve import Resolver
from ragkit.rerank.ranker import Rankers
from ragkit.store import arrays
from ragkit.store.committed import CommittedIndex
from ragkit.store.duck import DuckStore
from ragkit.store.knowledge.vectors import DerivedVectors
from ragkit.store.layout import RESOLVER_FILE
from ragkit.store.scopes import Scopes
from ragkit.store.terms import TermVectors


class IndexReader(CommittedIndex):
    """The committed state of one index, for querying: what every query and every strategy reads.

    Opening reads the manifest and opens the committed LanceDB version of the chunks table (``chunks``); all
    else is loaded on first use and kept for the reader's life (``functools.cached_property``): the embedder,
    the evidence and entity graphs, the reference resolver, the planning facts, the vocabulary, the derived
    vectors of entities, relations, communities and tree nodes (``knowledge``), and whatever a query stage
    builds once (``memo``). DuckDB is opened per use, read-only (``duck()``), or once per query inside
    ``one_connection()``.

    A reader follows the index: ``follow()`` reopens it when a newer run has been committed (the embedder, and
    the full model of a progressive index and the generator a caller gave, are kept), so a session or a server
    never answers from a replaced run. A reader is not thread-safe; a server serializes its queries on one reader.
    """

    def __init__(self, index_dir: Path, embedder: Embedder | None = None, embed_model: str | None = None):
        self._given_embedder = embedder
        self.given_full_embedder: Embedder | None = None  # a progressive index's full model, if the caller has it
        self.given_generator: Any = None  # what writes answers and the LLM planner's plans, if the caller has it
        super().__init__(index_dir)
        info = self.manifest.embedder
        if embed_model is not None and normalize_spec(embed_model) != info.spec:
            raise EmbedderMismatch(f"{self.index_dir} was built with {info.spec}, not {embed_model}")

    def _open(self) -> None:
        super()._open()
        if self._given_embedder is not None:
            self._check(self._given_embedder)
        self._tuned: Embedder | None = None  # ragkit's query encoder over this index's embedder, once asked for

    def _kept_across_runs(self) -> dict[str, Any]:
        """The embedder (given or loaded: the next run is checked against it when it opens, ``EmbedderMismatch``)
        and the full model a caller gave a progressive index and the generator a caller gave stay."""
        return {
            **super()._kept_across_runs(),
            "_given_embedder": self.__dict__.get("embedder", self._given_embedder),
            "given_full_embedder": self.given_full_embedder,
            "given_generator": self.given_generator,
        }

    def _check(self, embedder: Embedder) -> None:
        info = self.manifest.embedder
        if embedder.fingerprint != info.fingerprint or embedder.dimension != info.dimension:
            raise EmbedderMismatch(
                f"{self.index_dir} was built with {info.name} ({info.dimension}d, {info.fingerprint}), "
                f"the query embedder is {embedder.name} ({embedder.dimension}d, {embedder.fingerprint})"
            )

    def _superseded(self, store: DuckStore) -> dict[str, str]:
        return Resolver(*store.resolver_rows()).superseded()

    @cached_property
    def rankers(self) -> Rankers:
        """The learned rankers the index has adopted (``learned/``), read again when ``ragkit learn`` adopts
        another."""
        return Rankers(self.index_dir)

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
    def knowledge(self) -> DerivedVectors:
        """Vector search over the committed run's entities, relations, community reports and tree nodes
        (their vectors derived from the chunk vectors on first use)."""
        return DerivedVectors(self, lambda: self.term_vectors)

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
    def resolver(self) -> Resolver:
        """Reference resolver over all documents and sections: the committed run's, saved beside its graphs,
        else (stale, missing or of another format) built from the store."""
        saved = arrays.load(self.graph_dir, RESOLVER_FILE)
        if saved is not None and saved[1] == self.run_id:
            found = Resolver.from_state(saved[0].get("state") or {})
            if found is not None:
                return found
        with self.duck() as store:
            return Resolver(*store.resolver_rows())

    @cached_property
    def scopes(self) -> Scopes:
        """Who may read what: filters, readable collections, superseded versions (ragkit/store/scopes.py)."""
        return Scopes(self)
