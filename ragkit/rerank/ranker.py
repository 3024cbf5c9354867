"""The learned ranker: after the structure features (``features.py``), candidates ordered by a model fitted on
what people judged (``ragkit learn``) or on the shared labelled sets (the shipped default).

A candidate is described by ``RANK_FEATURES``: the nine structure features, how the retrievers saw it (its dense
and BM25 scores scaled within the query, their ranks, its place in the fused list), the score the hand-set
weights give it, and the query's language, length and kind. The model is LightGBM's LambdaRank boosted from the
hand-set score (``prior``: the trees learn a correction of it, so that a little feedback moves the ranking a
little), read from JSON and walked in numpy (``ragkit.fitted.Trees``); each feature is first held within the
range the fit saw (``lo`` … ``hi``), so that no value it never met can push a passage further than any it did.

Models are versioned files of the index (``learned/ranker.<scope>.<version>.json``, the adopted one per scope
named in ``learned/current.json``), never pickles. A query uses the model of its scope (a token's collections,
or the collection it is filtered to), else the index's own ("all"), else the default shipped with ragkit
(``ranker_model.json`` beside this file, where one was adopted), else the hand-set weights alone.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from ragkit.fitted import ModelFileError, Trees, from_json
from ragkit.names import checked_name
from ragkit.records import Hit
from ragkit.rerank.features import FEATURES
from ragkit.store.layout import LEARNED_CURRENT, LEARNED_DIR

FOLDER, CURRENT = LEARNED_DIR, LEARNED_CURRENT  # (an index's files: ragkit/store/layout.py)
SHIPPED = Path(__file__).with_name("ranker_model.json")
FORMAT = 1
RANK_FEATURES = (
    *FEATURES,
    "retrieval", "dense", "lexical", "dense_rank", "lexical_rank", "fused_rank", "default",
    "lang_de", "lang_sv", "q_terms", "asks", "cites",
)  # fmt: skip
_ASKS = re.compile(
    r"^\s*(how|what|when|where|who|which|why|wie|was|wann|wo|wer|welche\w*|warum|hur|vad|när|var|vem|vilk\w*|varför)\b",
    re.I,
)
_CITES = re.compile(r"§|\bArt\.?\s*\d|\bkap\.|\b\d+\s*§")


ALL = "all"


COLLECTIONS = "collections:"


def _escaped(collection: str) -> str:
    return collection.replace("%", "%25").replace(",", "%2C")


def scope_of(readable, filters: dict[str, Any] | None = None) -> str:
    """The scope a query's feedback trains and whose model it uses: the collections its asker may read (a
    token's), else the one its filters name, else "all" (the index's own model). Each collection's name is
    written with its commas (and percent signs) escaped, so that "a,b" stays one collection."""
    if readable is not None:
        return COLLECTIONS + ",".join(sorted(_escaped(c) for c in set(readable)))
    collection = (filters or {}).get("collection")
    if isinstance(collection, str) and collection and "*" not in collection:
        return COLLECTIONS + _escaped(collection)
    return ALL


def collections_of(scope: str) -> tuple[str, ...] | None:
    """The collections a scope names (``scope_of``'s inverse); None for "all"."""
    if not scope.startswith(COLLECTIONS):
        return None
    return tuple(c.replace("%2C", ",").replace("%25", "%") for c in scope[len(COLLECTIONS) :].split(","))


def query_features(text: str, language: str) -> list[float]:
    """What the ranker knows of the query itself: its language, its length, whether it asks a question and
    whether it cites a section."""
    words = re.findall(r"\w+", text)
    return [
        float(language == "de"),
        float(language == "sv"),
        float(np.log1p(len(words))),
        float(bool(_ASKS.search(text))),
        float(bool(_CITES.search(text))),
    ]


def _scaled(values: list[float]) -> np.ndarray:
    v = np.asarray(values, dtype=np.float64)
    span = v.max() - v.min() if len(v) else 0.0
    return (v - v.min()) / span if span > 0 else np.zeros_like(v)


def hit_matrix(hits: list[Hit], text: str, language: str) -> np.ndarray:
    """One row of ``RANK_FEATURES`` per hit (``hits`` in the fused order, their ``features`` and ``score`` set
    by the structure reranker)."""
    if not hits:
        return np.zeros((0, len(RANK_FEATURES)))
    q = query_features(text, language)
    dense = _scaled([h.scores.get("dense", 0.0) for h in hits])
    lexical = _scaled([h.scores.get("lexical", 0.0) for h in hits])
    retrieval = _scaled([h.retrieval_score for h in hits])
    rows = []
    for i, h in enumerate(hits):
        rows.append(
            [
                *(float(h.features.get(f, 0.0)) for f in FEATURES),
                retrieval[i],
                dense[i],
                lexical[i],
                1.0 / h.ranks["dense"] if h.ranks.get("dense") else 0.0,
                1.0 / h.ranks["lexical"] if h.ranks.get("lexical") else 0.0,
                1.0 / (i + 1),
                float(h.score),
                *q,
            ]
        )
    return np.asarray(rows, dtype=np.float64)


@dataclass
class Ranker:
    """A fitted ranker: its trees, the range each feature is held within, and where it comes from."""

    trees: Trees
    lo: np.ndarray
    hi: np.ndarray
    scope: str = "all"
    version: int = 0
    meta: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Ranker:
        if data.get("format") != FORMAT:
            raise ModelFileError(f"a ranker of format {data.get('format')}, this ragkit reads {FORMAT}")
        trees = from_json(data["trees"])
        if not isinstance(trees, Trees) or trees.names != RANK_FEATURES:
            raise ModelFileError("the ranker's features are not this ragkit's", hint="ragkit learn --reset")
        lo, hi = (np.asarray(data[k], dtype=np.float64) for k in ("lo", "hi"))
        if lo.shape != (len(RANK_FEATURES),) or hi.shape != lo.shape:
            raise ModelFileError("the ranker's feature bounds do not match its features")
        return cls(trees, lo, hi, data.get("scope", "all"), int(data.get("version", 0)), data.get("meta", {}))

    def to_json(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "scope": self.scope,
            "version": self.version,
            "lo": [round(float(x), 6) for x in self.lo],
            "hi": [round(float(x), 6) for x in self.hi],
            "trees": self.trees.to_json(),
            "meta": self.meta,
        }

    def scores(self, X: np.ndarray) -> np.ndarray:
        """The hand-set score (standardised among the query's candidates) plus the trees' correction of it."""
        if not len(X):
            return np.zeros(0)
        return prior(X) + self.trees.raw(np.clip(X, self.lo, self.hi))

    def rerank(self, hits: list[Hit], text: str, language: str) -> list[Hit]:
        """``hits`` ordered by the model's score (each hit's ``features["learned"]`` and ``score`` hold it; the
        hand-set score stays in ``features["default"]``)."""
        X = hit_matrix(hits, text, language)
        for h, row, value in zip(hits, X, self.scores(X)):
            h.features = {**h.features, "default": float(row[RANK_FEATURES.index("default")]), "learned": float(value)}
            h.score = float(value)
        return sorted(hits, key=lambda h: (-h.score, h.chunk_id))

    def explain(self, hit: Hit, row: np.ndarray) -> dict[str, float]:
        """Each feature's share of a hit's learned score (``--explain``)."""
        return self.trees.contributions(np.clip(row, self.lo, self.hi))


def prior(X: np.ndarray) -> np.ndarray:
    """Where the learned score starts: the hand-set weights' score, standardised among one query's candidates
    (the trees learn what to add to it, so that little feedback moves the ranking little)."""
    default = X[:, RANK_FEATURES.index("default")]
    spread = default.std()
    return (default - default.mean()) / spread if spread > 0 else np.zeros_like(default)


def learned_dir(index_dir: Path) -> Path:
    return Path(index_dir) / FOLDER


def adopted(index_dir: Path) -> dict[str, Any]:
    """``learned/current.json``: the adopted model's file per scope (``{"scopes": {scope: file}}``)."""
    path = learned_dir(index_dir) / CURRENT
    if not path.is_file():
        return {"scopes": {}}
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise ModelFileError(f"cannot read {path}: {exc}", hint="ragkit learn --reset") from exc
    return data if isinstance(data.get("scopes"), dict) else {"scopes": {}}


def write_current(index_dir: Path, current: dict[str, Any]) -> None:
    """Replace ``learned/current.json`` in one rename (a reader sees the old set or the new)."""
    folder = learned_dir(index_dir)
    folder.mkdir(parents=True, exist_ok=True)
    tmp = folder / (CURRENT + ".tmp")
    tmp.write_text(json.dumps(current, indent=1) + "\n")
    tmp.replace(folder / CURRENT)


def load(path: Path) -> Ranker:
    try:
        return Ranker.from_json(json.loads(Path(path).read_text()))
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ModelFileError(f"cannot read the ranker {path}: {exc}", hint="ragkit learn --reset") from exc


@lru_cache(maxsize=1)
def shipped() -> Ranker | None:
    """The default shipped with ragkit (fitted on the shared labelled sets' fit halves), when one was adopted."""
    return load(SHIPPED) if SHIPPED.is_file() else None


class Rankers:
    """What an index has learned from its feedback, read once per version of ``learned/current.json``: the
    adopted rankers per scope, and per scope and language the confidence under which its answers abstain
    (``answers``: ragkit/learn/abstain.py)."""

    def __init__(self, index_dir: Path):
        self.index_dir = Path(index_dir)
        self._stamp: tuple[int, int, int] | None = None
        self._models: dict[str, Ranker] = {}
        self._answers: dict[str, dict[str, Any]] = {}

    def _refresh(self) -> None:
        path = learned_dir(self.index_dir) / CURRENT
        st = path.stat() if path.is_file() else None  # each write renames a new file in: a new inode
        stamp = (st.st_mtime_ns, st.st_ino, st.st_size) if st else None
        if stamp == self._stamp:
            return
        current = adopted(self.index_dir)
        models = {}
        for scope, name in current["scopes"].items():
            models[scope] = load(learned_dir(self.index_dir) / checked_name("ranker", name, f"{FOLDER}/{CURRENT}"))
        answers = current.get("answers")
        self._models, self._stamp = models, stamp
        self._answers = answers if isinstance(answers, dict) else {}

    def abstain_thresholds(self, scope: str) -> dict[str, float]:
        """The learned confidence under which an answer abstains, per language, for a query of ``scope``: per
        language its own, else the index's ("all"); none learned: {} (the answer model's own thresholds hold)."""
        self._refresh()

        def of(name: str) -> dict[str, float]:
            found = self._answers.get(name)
            if not isinstance(found, dict):
                return {}
            return {
                lang: float(v["threshold"]) for lang, v in found.items() if isinstance(v, dict) and "threshold" in v
            }

        return of(ALL) | of(scope)

    def answers(self) -> dict[str, dict[str, Any]]:
        self._refresh()
        return dict(self._answers)

    def for_scope(self, scope: str) -> Ranker | None:
        """The model a query of ``scope`` uses: its own, else the index's ("all"), else the shipped default."""
        self._refresh()
        return self._models.get(scope) or self._models.get("all") or shipped()

    def adopted(self) -> dict[str, Ranker]:
        self._refresh()
        return dict(self._models)
