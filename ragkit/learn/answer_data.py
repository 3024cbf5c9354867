"""The labelled units the answer scorer is fitted on (ragkit/learn/answers.py): one set's units and questions as
``scripts/fit_answers.py features`` wrote them (``UnitData``), and the fit questions of all sets in one pool,
each with its set's say (``FitQuestions``)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ragkit.answer.features import UNIT_FEATURES


@dataclass
class UnitData:
    """One labelled set's units and questions (``scripts/fit_answers.py features``)."""

    name: str
    X: np.ndarray  # units × UNIT_FEATURES
    y: np.ndarray  # the unit holds the gold answer
    q: np.ndarray  # the unit's question (index into the question arrays)
    stats: np.ndarray  # questions × QUESTION_STATS
    ids: np.ndarray
    answerable: np.ndarray
    held_out: np.ndarray
    language: np.ndarray
    ceiling: np.ndarray  # the gold answer stands in one of the question's units

    claims: dict[str, np.ndarray] | None = None  # claim_X, claim_y, claim_q, claim_own, claim_held_out
    encoder: str = ""  # the embedder whose similarities the features hold

    @classmethod
    def load(cls, path, name: str) -> UnitData:
        with np.load(path, allow_pickle=False) as d:
            if tuple(d["names"].tolist()) != UNIT_FEATURES:
                raise ValueError(f"{path} holds other features than this ragkit's; run features again")
            keys = ("X", "y", "q", "stats", "ids", "answerable", "held_out", "language", "ceiling")
            claims = {k: d[k] for k in d.files if k.startswith("claim_")} or None
            return cls(name, *(d[k] for k in keys), claims, str(d["encoder"]) if "encoder" in d.files else "")

    def questions(self, held_out: bool = False) -> np.ndarray:
        return np.flatnonzero(self.held_out == held_out)

    def units_of(self, question: int) -> np.ndarray:
        return np.flatnonzero(self.q == question)


@dataclass
class FitQuestions:
    """The fit questions of all sets in one place: for each, its set, units and weight."""

    sets: list[UnitData]
    items: list[tuple[int, int]]  # (set index, question index)
    weight: np.ndarray  # per item: 1 / (questions of its set)

    @classmethod
    def of(cls, data: list[UnitData], weights: dict[str, float] | None = None) -> FitQuestions:
        """``weights``: a set's say against the others' (1 each by default)."""
        items, weight = [], []
        for s, d in enumerate(data):
            qs = d.questions(held_out=False)
            items += [(s, int(i)) for i in qs]
            weight += [(weights or {}).get(d.name, 1.0) / max(len(qs), 1)] * len(qs)
        weight = np.asarray(weight)
        return cls(data, items, weight * len(items) / weight.sum())

    def units(self, item: int) -> tuple[np.ndarray, np.ndarray]:
        s, i = self.items[item]
        d = self.sets[s]
        rows = d.units_of(i)
        return d.X[rows], d.y[rows]

    def answerable(self, item: int) -> bool:
        s, i = self.items[item]
        return bool(self.sets[s].answerable[i])
