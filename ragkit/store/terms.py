"""Vocabulary vectors for query expansion (``--expand``), embedded when first needed, never in a commit.

The words worth adding to a query (four or more letters, in at least 3 chunks, not stop words) are
embedded the first time a query asks for related terms, or right after an indexing run when
``expand = true`` in ``[index]``, and cached in ``cache/terms.npz`` of the index (float16, keyed by the run
it was built for and the embedder's fingerprint: another model's vectors are never reused). A later run re-embeds only the words that are new to the vocabulary; an index that
nobody queries with ``--expand`` never pays for it. A read-only index folder keeps them in memory only.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from ragkit.store.layout import CACHE_DIR
from ragkit.text import STOPWORDS

CACHE = Path(CACHE_DIR) / "terms.npz"
# words embedded for query expansion: four or more letters, in at least 3 chunks, not stop words
EXPANSION_TERMS = (
    "SELECT term FROM vocab WHERE length(term) >= 4 AND df >= 3 AND NOT list_contains(?, term) ORDER BY term"
)


class TermVectors:
    def __init__(
        self, index_dir: Path, run_id: int, duck: Callable, encode: Callable[[list[str]], np.ndarray], model: str
    ):
        self.path = Path(index_dir) / CACHE
        self.run_id, self.duck, self.encode, self.model = run_id, duck, encode, model
        self.terms: list[str] = []
        self.matrix = np.zeros((0, 1), dtype=np.float32)
        self.embedded = 0  # words embedded by this object (the rest came from the cache)

    def load(self) -> TermVectors:
        """The cached vectors of this run, or the cache brought up to date (new words embedded)."""
        old_terms, old = self._read()
        if old is not None and old["run"] == self.run_id:
            self.terms, self.matrix = old_terms, old["vectors"].astype(np.float32)
            return self
        with self.duck() as store:
            terms = [r[0] for r in store.con.execute(EXPANSION_TERMS, [sorted(STOPWORDS)]).fetchall()]
        known = {t: i for i, t in enumerate(old_terms)}
        new = [t for t in terms if t not in known]
        fresh = dict(zip(new, self.encode(new))) if new else {}
        self.embedded = len(new)
        dim = next(iter(fresh.values())).shape[0] if fresh else (old["vectors"].shape[1] if old is not None else 1)
        mat = np.zeros((len(terms), dim), dtype=np.float32)
        for i, t in enumerate(terms):
            mat[i] = fresh[t] if t in fresh else old["vectors"][known[t]]
        self.terms, self.matrix = terms, mat
        self._write()
        return self

    def _read(self) -> tuple[list[str], Any]:
        try:
            data = np.load(self.path, allow_pickle=False)
            if str(data["model"]) != self.model:
                return [], None  # built with another embedder
            return [str(t) for t in data["terms"]], {"run": int(data["run"]), "vectors": data["vectors"]}
        except (OSError, KeyError, ValueError):
            return [], None

    def _write(self) -> None:
        tmp = self.path.with_suffix(".tmp.npz")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            np.savez(
                tmp,
                terms=np.array(self.terms, dtype=str),
                run=np.array(self.run_id),
                model=np.array(self.model),
                vectors=self.matrix.astype(np.float16),
            )
            os.replace(tmp, self.path)
        except OSError:  # a read-only index: the vectors live in memory only
            tmp.unlink(missing_ok=True)

    def search(self, vector: np.ndarray, limit: int) -> list[dict[str, Any]]:
        """The words nearest to ``vector`` (cosine), each with ``similarity``."""
        if not self.terms:
            return []
        q = np.asarray(vector, dtype=np.float32)
        norms = np.linalg.norm(self.matrix, axis=1) * (np.linalg.norm(q) or 1.0) + 1e-9
        sims = self.matrix @ q / norms
        order = np.argsort(-sims)[:limit]
        return [{"term": self.terms[i], "similarity": float(sims[i])} for i in order]
