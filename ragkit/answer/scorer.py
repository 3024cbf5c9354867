"""The answer scorer: which unit of the top passages (a sentence, a numbered paragraph, a list item) answers the
question, and whether any does. Learned, not set by hand: ``scripts/fit_answers.py`` fits it on labelled
questions with short gold answers (the fit halves of the shared sets and ragkit's own; ``tests/answer_sets.py``)
and writes ``answer_model.json`` beside this file, which ragkit reads at run time (no pickle).

Each candidate unit is described by its features (``unit_features``, ragkit/answer/features.py: how close the
index's encoder puts it to the question, how much of the question's words it and its passage hold, what the
question asks for and whether the unit holds it, its passage's rank, its place and kind). A model turns them
into the probability that the unit holds the answer. Encoding costs time, so a first model without the encoder
picks the ``shortlist`` units the full model then scores (``rank_units``).

Whether to answer at all is a second logistic model over the question's ``question_features`` (the best units'
probabilities and similarities, how much of the question the passages hold, how much of it the index has never
seen): the probability that the documents answer the question. The answer abstains below ``threshold``, which
the fitting script chose on questions the weights were not fitted on.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path

import numpy as np

from ragkit.answer.evidence import Evidence, Sentence
from ragkit.answer.features import (
    QUESTION_FEATURES,
    UNIT_FEATURES,
    Question,
    columns,
    question_features,
    question_stats,
    relative,
    unit_features,
    unit_text,
    with_vectors,
)
from ragkit.fitted import Linear, ModelFileError, Trees, from_json

# (the model file's name and format are hashed with the features' code, as they were when the shipped model was
# fitted: ragkit/answer/fingerprint.py; a new constant here changes the hash)
MODEL_FILE = Path(__file__).with_name("answer_model.json")
FORMAT = 2  # 2: the models without the encoder named so (format 1 called them "quick" and "plain")


@dataclass
class AnswerModel:
    """The fitted scorer: ``unit_no_encoder`` shortlists, ``unit`` scores the shortlist, ``answerable``
    decides whether to answer (abstain under ``threshold``)."""

    unit_no_encoder: Linear | Trees  # ``unit`` without the encoder: shortlists, and scores where it is unknown
    unit: Linear | Trees
    answerable: Linear | Trees
    threshold: dict[str, float]  # per language ("*": any other)
    answerable_no_encoder: (
        Linear | Trees
    )  # ``answerable`` without the encoder (``QUESTION_FEATURES_NO_ENCODER``, the no-encoder unit model's probabilities)
    threshold_no_encoder: dict[str, float]
    encoders: tuple[str, ...]  # the encoders (embedder names) it was fitted with
    shortlist: int
    support: float  # the least probability at which a unit supports a written sentence (answer/verify.py)
    length: float  # what a unit's length costs against its probability when choosing the quote (``utility``)
    meta: dict
    feature_code: str = ""  # ``feature_code()`` when it was fitted: features computed otherwise are not its own

    @classmethod
    def load(cls, path: Path = MODEL_FILE) -> AnswerModel:
        try:
            data = json.loads(Path(path).read_text())
        except (OSError, ValueError) as exc:
            raise ModelFileError(
                f"cannot read the answer model {path}: {exc}", hint="reinstall ragkit, or fit it anew"
            ) from exc
        if data.get("format") != FORMAT:
            raise ModelFileError(f"{path} has format {data.get('format')}, this ragkit reads {FORMAT}")
        parts = {k: from_json(data[k]) for k in ("unit_no_encoder", "unit", "answerable", "answerable_no_encoder")}
        return cls(
            **parts,
            threshold={k: float(v) for k, v in data["threshold"].items()},
            threshold_no_encoder={k: float(v) for k, v in data["threshold_no_encoder"].items()},
            encoders=tuple(data["encoders"]),
            shortlist=int(data["shortlist"]),
            support=float(data["support"]),
            length=float(data.get("length", 0.0)),
            meta=data.get("meta", {}),
            feature_code=str(data.get("feature_code", "")),
        )

    def abstains(self, scored: Scored, language: str) -> bool:
        return scored.answerable < self._threshold(scored.encoded, language)

    def _threshold(self, encoded: bool, language: str) -> float:
        thresholds = self.threshold if encoded else self.threshold_no_encoder
        return thresholds.get(language, thresholds.get("*", 0.0))

    def threshold_for(self, language: str, encoder: str | None) -> float:
        """The confidence under which an answer in ``language`` abstains, over an index with ``encoder``."""
        return self._threshold(encoder in self.encoders, language)

    def with_thresholds(self, learned: dict[str, float]) -> AnswerModel:
        """The model with an index's learned thresholds per language (``ragkit learn``: ragkit/learn/abstain.py)
        in place of its own; an index reads units with one encoder, so they stand for either kind."""
        if not learned:
            return self
        return replace(
            self, threshold={**self.threshold, **learned}, threshold_no_encoder={**self.threshold_no_encoder, **learned}
        )

    def to_json(self) -> dict:
        return {
            "format": FORMAT,
            "unit_no_encoder": self.unit_no_encoder.to_json(),
            "unit": self.unit.to_json(),
            "answerable": self.answerable.to_json(),
            "threshold": {k: round(v, 4) for k, v in self.threshold.items()},
            "answerable_no_encoder": self.answerable_no_encoder.to_json(),
            "threshold_no_encoder": {k: round(v, 4) for k, v in self.threshold_no_encoder.items()},
            "encoders": list(self.encoders),
            "shortlist": self.shortlist,
            "support": round(self.support, 4),
            "length": round(self.length, 4),
            "meta": self.meta,
            "feature_code": self.feature_code,
        }


@lru_cache(maxsize=1)
def default_model() -> AnswerModel:
    return AnswerModel.load()


@dataclass
class Scored:
    """The scorer's verdict on one result: the shortlisted ``units`` (best first), their features and
    probabilities of holding the answer, and the probability that the passages answer the question."""

    units: list[Sentence]
    X: np.ndarray
    p: np.ndarray
    answerable: float
    question: np.ndarray
    encoded: bool  # the encoder's similarities were read (else words, structure and rank alone)


def rank_units(
    model: AnswerModel,
    q: Question,
    units: list[Sentence],
    vectors: Callable[[list[Sentence]], np.ndarray | None] | None,
    is_cited: Callable[[Sentence], bool],
) -> tuple[list[Sentence], np.ndarray, np.ndarray]:
    """``units`` scored for ``q``, best first: ``model.unit_no_encoder`` over all of them, then the encoder's vectors
    (``vectors``: the units' own, read as ``unit_text``) and ``model.unit`` over the ``model.shortlist`` best.
    Without an encoder (``vectors`` None, or vectors of another width than the question's) the no-encoder unit model's
    probabilities stand. Returns the shortlist, its features and probabilities."""
    X0 = unit_features(q, units, is_cited)
    keep = shortlist(model, X0)
    short = [units[i] for i in keep]
    found = vectors(short) if vectors is not None and q.vector is not None and short else None
    if found is not None and found.ndim == 2 and found.shape[1] == len(q.vector):
        X = with_vectors(relative(X0[keep]), found @ q.vector)
        p = model.unit.predict(columns(X, model.unit.names))
    else:
        X = relative(X0[keep])
        X[:, UNIT_FEATURES.index("sim_chunk")] = 0.0
        p = model.unit_no_encoder.predict(columns(X, model.unit_no_encoder.names)) if len(X) else np.zeros(0)
    order = np.argsort(-utility(model, X, p), kind="stable")
    return [short[i] for i in order], X[order], p[order]


def utility(model: AnswerModel, X: np.ndarray, p: np.ndarray) -> np.ndarray:
    """What choosing each unit as the quote is worth: its probability of holding the answer less
    ``model.length`` times its (log) length, so that of two units about as likely the shorter is quoted."""
    return p - model.length * X[:, UNIT_FEATURES.index("log_len")] if len(X) else p


def encoded(encode: Callable[[list[str]], np.ndarray] | None) -> Callable[[list[Sentence]], np.ndarray] | None:
    """Units' vectors from a documents' encoder (``Embedder.encode``), each unit read once however often asked
    (a written answer's sentences are checked against the same units)."""
    if encode is None:
        return None
    seen: dict[int, np.ndarray] = {}

    def vectors(units: list[Sentence]) -> np.ndarray:
        todo = [s for s in units if id(s) not in seen]
        if todo:
            for s, v in zip(todo, np.asarray(encode([unit_text(s) for s in todo]), dtype=np.float32)):
                seen[id(s)] = v
        return np.stack([seen[id(s)] for s in units])

    return vectors


def score(
    model: AnswerModel,
    q: Question,
    evidence: Evidence,
    encode: Callable[[list[str]], np.ndarray] | None,
    is_cited: Callable[[Sentence], bool],
    encoder: str | None = None,
) -> Scored:
    """Score ``evidence``'s units for ``q`` (``rank_units``), then ``model.answerable`` over the question.
    ``encoder``: the name of the index's encoder; one the scorer was not fitted with (its similarities on
    another scale) is not read: words, structure and rank decide (``model.unit_no_encoder`` and ``model.answerable_no_encoder``)."""
    known = encode is not None and encoder in model.encoders
    short, X, p = rank_units(model, q, evidence.sentences, encoded(encode) if known else None, is_cited)
    Z = question_features(q.language, question_stats(q, evidence), X, p)
    if known:
        answerable = model.answerable.predict(columns(Z, model.answerable.names, QUESTION_FEATURES))
    else:
        answerable = model.answerable_no_encoder.predict(
            columns(Z, model.answerable_no_encoder.names, QUESTION_FEATURES)
        )
    return Scored(short, X, p, float(answerable[0]), Z[0], known)


def shortlist(model: AnswerModel, X0: np.ndarray) -> np.ndarray:
    """The indices of the ``model.shortlist`` units the no-encoder unit model scores best (in that order)."""
    if not len(X0):
        return np.zeros(0, dtype=int)
    p0 = model.unit_no_encoder.predict(columns(X0, model.unit_no_encoder.names))
    return np.argsort(-p0, kind="stable")[: model.shortlist]
