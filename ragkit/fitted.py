"""Models fitted by a library and read back as data: a logistic model (scikit-learn's ``LogisticRegression``)
and gradient-boosted trees (LightGBM), each stored as JSON and evaluated with numpy.

Fitting happens in ``ragkit.learn`` and in ``scripts/``, with the libraries; running them needs neither: the
answer scorer and the learned ranker sit on the query path, whose one-shot process must start in about a second,
and importing LightGBM alone takes 0.9 s here (it pulls in scikit-learn and pandas). Reading a model never
unpickles anything: a model file from a shared index folder is data, not code.

``Trees.from_lightgbm`` takes LightGBM's own JSON dump (``Booster.dump_model()``) and flattens its trees into
arrays; ``Trees.raw`` walks every tree for every row at once, one level per step, exactly as LightGBM decides
(numerical splits, ``x <= threshold`` goes left, a missing value the way the split's ``default_left`` says).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ragkit.errors import RagkitError


class ModelFileError(RagkitError):
    """A learned model's file cannot be read as such."""

    exit_code = 1


def _arrays(data: dict, names: tuple[str, ...], keys: tuple[str, ...]) -> list[np.ndarray]:
    arrays = [np.asarray(data[k], dtype=np.float64) for k in keys]
    if any(a.shape != (len(names),) for a in arrays):
        raise ModelFileError("the model's arrays do not match its feature names")
    return arrays


@dataclass
class Linear:
    """A logistic model over named features: standardised by ``mean`` / ``scale``, weighted by ``coef``."""

    names: tuple[str, ...]
    mean: np.ndarray
    scale: np.ndarray
    coef: np.ndarray
    intercept: float

    kind = "linear"

    @classmethod
    def from_json(cls, data: dict) -> Linear:
        names = tuple(data["names"])
        return cls(names, *_arrays(data, names, ("mean", "scale", "coef")), float(data["intercept"]))

    def to_json(self) -> dict:
        return {
            "kind": self.kind,
            "names": list(self.names),
            "mean": [round(float(x), 6) for x in self.mean],
            "scale": [round(float(x), 6) for x in self.scale],
            "coef": [round(float(x), 6) for x in self.coef],
            "intercept": round(float(self.intercept), 6),
        }

    def raw(self, X: np.ndarray) -> np.ndarray:
        return ((X - self.mean) / self.scale) @ self.coef + self.intercept

    def predict(self, X: np.ndarray) -> np.ndarray:
        return _sigmoid(self.raw(X))

    def contributions(self, x: np.ndarray) -> dict[str, float]:
        """Each feature's share of one row's raw score (what ``--explain`` shows)."""
        return {n: round(float(v), 4) for n, v in zip(self.names, (x - self.mean) / self.scale * self.coef)}


@dataclass
class Trees:
    """Gradient-boosted regression trees over named features, flattened: node ``i`` splits on ``feature[i]``
    at ``threshold[i]`` to ``left[i]`` / ``right[i]``, or is a leaf (``feature[i]`` -1) worth ``value[i]``;
    ``roots`` are the trees' first nodes; a row's raw score is the sum of its leaves (``predict``: its
    sigmoid, for a binary objective)."""

    names: tuple[str, ...]
    feature: np.ndarray
    threshold: np.ndarray
    left: np.ndarray
    right: np.ndarray
    default_left: np.ndarray
    value: np.ndarray
    roots: np.ndarray
    depth: int

    kind = "trees"

    @classmethod
    def from_lightgbm(cls, dump: dict, names: tuple[str, ...]) -> Trees:
        """From ``lightgbm.Booster.dump_model()`` (its trees' ``tree_structure``)."""
        feature, threshold, left, right, default_left, value, roots = [], [], [], [], [], [], []
        depth = 0

        def add(node: dict, level: int) -> int:
            nonlocal depth
            depth = max(depth, level)
            i = len(feature)
            for column in (feature, threshold, left, right, default_left, value):
                column.append(0)
            if "leaf_value" in node or "split_feature" not in node:
                feature[i], value[i], left[i], right[i] = -1, float(node.get("leaf_value", 0.0)), i, i
                return i
            if node.get("decision_type", "<=") != "<=":
                raise ModelFileError(f"a split of kind {node.get('decision_type')!r} is not supported")
            feature[i], threshold[i] = int(node["split_feature"]), float(node["threshold"])
            value[i] = float(node.get("internal_value", 0.0))  # what explaining a row starts from
            default_left[i] = bool(node.get("default_left", True))
            left[i] = add(node["left_child"], level + 1)
            right[i] = add(node["right_child"], level + 1)
            return i

        for tree in dump["tree_info"]:
            roots.append(add(tree["tree_structure"], 0))
        return cls(
            tuple(names),
            np.asarray(feature, dtype=np.int32),
            np.asarray(threshold, dtype=np.float64),
            np.asarray(left, dtype=np.int32),
            np.asarray(right, dtype=np.int32),
            np.asarray(default_left, dtype=bool),
            np.asarray(value, dtype=np.float64),
            np.asarray(roots, dtype=np.int32),
            depth,
        )

    @classmethod
    def from_json(cls, data: dict) -> Trees:
        try:
            out = cls(
                tuple(data["names"]),
                np.asarray(data["feature"], dtype=np.int32),
                np.asarray(data["threshold"], dtype=np.float64),
                np.asarray(data["left"], dtype=np.int32),
                np.asarray(data["right"], dtype=np.int32),
                np.asarray(data["default_left"], dtype=bool),
                np.asarray(data["value"], dtype=np.float64),
                np.asarray(data["roots"], dtype=np.int32),
                int(data["depth"]),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise ModelFileError(f"not a trees model: {exc}") from exc
        n = len(out.feature)
        sizes = {len(a) for a in (out.threshold, out.left, out.right, out.default_left, out.value)}
        inside = all(((a >= 0) & (a < n)).all() for a in (out.left, out.right, out.roots))
        if sizes != {n} or not inside or (out.feature >= len(out.names)).any():
            raise ModelFileError("the trees' arrays do not fit together")
        return out

    def to_json(self) -> dict:
        return {
            "kind": self.kind,
            "names": list(self.names),
            "feature": self.feature.tolist(),
            "threshold": [float(f"{x:.9g}") for x in self.threshold],
            "left": self.left.tolist(),
            "right": self.right.tolist(),
            "default_left": [int(x) for x in self.default_left],
            "value": [float(f"{x:.9g}") for x in self.value],
            "roots": self.roots.tolist(),
            "depth": self.depth,
        }

    def raw(self, X: np.ndarray) -> np.ndarray:
        X = np.asarray(X, dtype=np.float64)
        node = np.broadcast_to(self.roots, (len(X), len(self.roots))).copy()
        rows = np.arange(len(X))[:, None]
        for _ in range(self.depth):
            f = self.feature[node]
            inner = f >= 0
            if not inner.any():
                break
            x = X[rows, np.maximum(f, 0)]
            go_left = np.where(np.isnan(x), self.default_left[node], x <= self.threshold[node])
            node = np.where(inner, np.where(go_left, self.left[node], self.right[node]), node)
        return self.value[node].sum(axis=1)

    def predict(self, X: np.ndarray) -> np.ndarray:
        return _sigmoid(self.raw(X))

    def contributions(self, x: np.ndarray) -> dict[str, float]:
        """Each feature's share of one row's raw score (Saabas): along each tree's path, what a split on the
        feature changed (the child's value minus its node's); the roots' values are the ``bias``."""
        out = dict.fromkeys(self.names, 0.0)
        bias = 0.0
        for root in self.roots:
            node = int(root)
            bias += self.value[node] if self.feature[node] >= 0 else 0.0
            while self.feature[node] >= 0:
                v = x[self.feature[node]]
                left = (np.isnan(v) and self.default_left[node]) or v <= self.threshold[node]
                child = int(self.left[node] if left else self.right[node])
                out[self.names[self.feature[node]]] += self.value[child] - self.value[node]
                node = child
            if node == root:
                bias += self.value[node]
        return {"bias": round(bias, 4)} | {n: round(v, 4) for n, v in out.items() if v}


def _sigmoid(z: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-np.clip(z, -50, 50)))


def from_json(data: dict) -> Linear | Trees:
    """A model from its JSON form (``kind`` "linear" or "trees")."""
    kind = data.get("kind", "linear")
    if kind == "linear":
        try:
            return Linear.from_json(data)
        except (KeyError, TypeError, ValueError) as exc:
            raise ModelFileError(f"not a linear model: {exc}") from exc
    if kind == "trees":
        return Trees.from_json(data)
    raise ModelFileError(f"unknown model kind {kind!r}")
