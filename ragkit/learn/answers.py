"""Fitting the answer scorer (``ragkit.answer.scorer``) from labelled units, with scikit-learn's logistic
regression and LightGBM's gradient-boosted trees; only the fit halves of the labelled sets ever reach it.

The data: for every labelled question, the candidate units of its top passages with their ``UNIT_FEATURES``
(the encoder's similarity included) and whether each holds the gold answer, and its ``QUESTION_STATS``; for a
question the documents do not answer, the same without labels; and claims, a question's answer unit checked
against its own and another question's passages (``UnitData``, written by ``scripts/fit_answers.py features``).

The fit, as the scorer runs:
1. ``unit_no_encoder`` (logistic): units → holds the answer, from the features that need no encoder, over every unit;
2. ``unit`` (trees): the same from all features, over each question's ``shortlist`` best by ``unit_no_encoder``;
3. ``answerable`` (logistic): question → the documents answer it, from ``QUESTION_FEATURES`` computed with unit
   probabilities predicted by models that never saw that question (cross-validation folds by question);
4. ``threshold``: per language, the highest at which at most ``ABSTAIN_ANSWERABLE`` of each of its sets'
   answerable questions abstain, on answerable probabilities predicted out of fold;
5. ``length``: what a unit's length costs against its probability when the quote is chosen, the cost that
   keeps every set's median quote within ``MAX_CHARS`` and holds the gold answer most often (out of fold);
6. ``support``: the least unit probability at which a written sentence counts as supported (answer/check.py).
The sets' say is ``WEIGHTS`` (the legal sets three times a reading-comprehension set's), shared by its questions,
so that a large set of one kind does not drown the legal questions.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ragkit.answer.fingerprint import feature_code
from ragkit.answer.scorer import (
    MODEL_FEATURES,
    QUESTION_FEATURES,
    QUESTION_FEATURES_NO_ENCODER,
    UNIT_FEATURES,
    UNIT_FEATURES_NO_ENCODER,
    AnswerModel,
    columns,
    question_features,
    relative,
)
from ragkit.fitted import Linear, Trees

SHORTLIST = 12
FOLDS = 5
SEED = 43
ABSTAIN_ANSWERABLE = 0.06  # the share of each set's answerable fit questions the threshold may abstain on
C = 1.0  # inverse regularisation of every logistic fit


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


def _fit_linear(X: np.ndarray, y: np.ndarray, w: np.ndarray, names: tuple[str, ...]) -> Linear:
    from sklearn.linear_model import LogisticRegression

    mean = np.average(X, axis=0, weights=w)
    scale = np.sqrt(np.average((X - mean) ** 2, axis=0, weights=w))
    scale[scale < 1e-9] = 1.0
    lr = LogisticRegression(C=C, max_iter=5000)
    keep = w > 0
    lr.fit(((X - mean) / scale)[keep], y[keep], sample_weight=w[keep] / w[keep].mean())
    return Linear(names, mean, scale, lr.coef_[0], float(lr.intercept_[0]))


TREES = dict(  # LightGBM's settings for the unit model: small trees, slow learning, rows and features sampled
    n_estimators=200,
    learning_rate=0.05,
    num_leaves=15,
    min_child_samples=20,
    subsample=0.8,
    subsample_freq=1,
    colsample_bytree=0.8,
    reg_lambda=1.0,
    deterministic=True,  # the same weights from the same data, run after run
    force_row_wise=True,
    verbose=-1,
)


def _fit_trees(X: np.ndarray, y: np.ndarray, w: np.ndarray, names: tuple[str, ...]) -> Trees:
    import lightgbm

    model = lightgbm.LGBMClassifier(**TREES, random_state=SEED)
    model.fit(X, y, sample_weight=w / w.mean())
    return Trees.from_lightgbm(model.booster_.dump_model(), names)


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


def _stack(pool: FitQuestions, items, shortlist: Linear | None, size: int):
    """The units of ``items`` (answerable questions only) as one weighted matrix: every unit, or each
    question's ``size`` best by ``shortlist``, the relative columns computed among them."""
    Xs, ys, ws = [], [], []
    for item in items:
        if not pool.answerable(item):
            continue
        X, y = pool.units(item)
        if not len(X):
            continue
        if shortlist is not None:
            keep = np.argsort(-shortlist.predict(columns(X, shortlist.names)), kind="stable")[:size]
            X, y = relative(X[keep].copy()), y[keep]
        Xs.append(X)
        ys.append(y)
        ws.append(np.full(len(X), pool.weight[item] / len(X)))
    return np.concatenate(Xs), np.concatenate(ys), np.concatenate(ws)


def _unit_models(pool: FitQuestions, items, size: int) -> tuple[Linear, Linear]:
    X, y, w = _stack(pool, items, None, size)
    unit_no_encoder = _fit_linear(columns(X, UNIT_FEATURES_NO_ENCODER), y, w, UNIT_FEATURES_NO_ENCODER)
    X, y, w = _stack(pool, items, unit_no_encoder, size)
    return unit_no_encoder, _fit_trees(columns(X, MODEL_FEATURES), y, w, MODEL_FEATURES)


def _scored(pool: FitQuestions, item: int, unit_no_encoder: Linear, unit: Linear, size: int):
    """A question's shortlist as the scorer sees it: (features, probabilities, labels), best first."""
    X, y = pool.units(item)
    if not len(X):
        return X, np.zeros(0), y
    keep = np.argsort(-unit_no_encoder.predict(columns(X, unit_no_encoder.names)), kind="stable")[:size]
    X, y = relative(X[keep].copy()), y[keep]
    if unit is None:  # as the scorer runs without the encoder: no similarity read
        X[:, _SIMS] = 0.0
        X = relative(X)
        p = unit_no_encoder.predict(columns(X, unit_no_encoder.names))
    else:
        p = unit.predict(columns(X, unit.names))
    order = np.argsort(-p, kind="stable")
    return X[order], p[order], y[order]


def _folds(n: int, k: int, seed: int) -> np.ndarray:
    fold = np.arange(n) % k
    np.random.default_rng(seed).shuffle(fold)
    return fold


WEIGHTS = {"german": 3.0, "swedish": 3.0}  # the legal sets' say against the reading-comprehension sets'


def fit_answer_model(
    data: list[UnitData],
    shortlist: int = SHORTLIST,
    folds: int = FOLDS,
    seed: int = SEED,
    weights: dict[str, float] | None = None,
):
    """The scorer fitted on ``data``'s fit halves, and a table of its cross-validated figures per set:
    ``(AnswerModel, [header, *rows])``; ``weights``: a set's say (``WEIGHTS`` by default)."""
    weights = WEIGHTS if weights is None else weights
    pool = FitQuestions.of(data, weights)
    n = len(pool.items)
    fold = _folds(n, folds, seed)
    # out-of-fold: every fit question scored by unit models that never saw it
    oof: list = [None] * n
    no_encoder: list = [None] * n  # the same by the no-encoder unit model alone (an encoder the scorer does not know)
    for f in range(folds):
        train = [i for i in range(n) if fold[i] != f]
        unit_no_encoder, unit = _unit_models(pool, train, shortlist)
        for i in np.flatnonzero(fold == f):
            oof[i] = _scored(pool, int(i), unit_no_encoder, unit, shortlist)
            no_encoder[i] = _scored(pool, int(i), unit_no_encoder, None, shortlist)
    Z = np.concatenate([_question_row(pool, i, oof[i]) for i in range(n)])
    Z_no_encoder = np.concatenate([_question_row(pool, i, no_encoder[i]) for i in range(n)])
    target = np.asarray([pool.answerable(i) for i in range(n)])
    # the answerable models, out of fold too, for their thresholds
    p_ans = _out_of_fold(pool, Z, target, fold, folds, QUESTION_FEATURES)
    p_no_encoder = _out_of_fold(pool, Z_no_encoder, target, fold, folds, QUESTION_FEATURES_NO_ENCODER)
    threshold = _thresholds(pool, p_ans, target)
    threshold_no_encoder = _thresholds(pool, p_no_encoder, target)
    length = _length(pool, oof)
    unit_no_encoder, unit = _unit_models(pool, range(n), shortlist)
    support, support_row = _support(data, unit_no_encoder, unit, shortlist)
    answerable = _answerable(pool, Z, target, QUESTION_FEATURES)
    answerable_no_encoder = _answerable(pool, Z_no_encoder, target, QUESTION_FEATURES_NO_ENCODER)
    meta = {
        "fitted_on": {d.name: int(len(d.questions(False))) for d in data},
        "no_encoder": _table(pool, no_encoder, p_no_encoder, threshold_no_encoder, length)[1:],
        "script": "python scripts/fit_answers.py features && python scripts/fit_answers.py fit",
        "abstain_answerable": ABSTAIN_ANSWERABLE,
        "C": C,
        "weights": weights,
        "trees": {k: v for k, v in TREES.items() if k != "verbose"},
        "folds": folds,
        "seed": seed,
    }
    encoders = tuple(sorted({d.encoder for d in data if d.encoder}))
    model = AnswerModel(
        unit_no_encoder, unit, answerable, threshold, answerable_no_encoder, threshold_no_encoder, encoders, shortlist, support, length, meta,
        feature_code(),
    )  # fmt: skip
    return model, _table(pool, oof, p_ans, threshold, length) + [support_row]


def _out_of_fold(
    pool: FitQuestions, Z: np.ndarray, target: np.ndarray, fold: np.ndarray, folds: int, names
) -> np.ndarray:
    """Each fit question's probability of being answerable by a model fitted on the other folds (1 where every
    question is answerable: no model to fit)."""
    out = np.ones(len(Z))
    if 0 < target.sum() < len(target):
        X = columns(Z, names, QUESTION_FEATURES)
        for f in range(folds):
            train = fold != f
            model = _fit_linear(X[train], target[train], _balanced(pool, target, train), names)
            out[fold == f] = model.predict(X[fold == f])
    return out


def _answerable(pool: FitQuestions, Z: np.ndarray, target: np.ndarray, names) -> Linear:
    """The answerable model over ``names`` of ``Z``, fitted on every fit question (always answerable where no
    question is unanswerable)."""
    if 0 < target.sum() < len(target):
        everyone = np.ones(len(target), bool)
        return _fit_linear(columns(Z, names, QUESTION_FEATURES), target, _balanced(pool, target, everyone), names)
    zero = np.zeros(len(names))
    return Linear(tuple(names), zero, zero + 1, zero, 10.0)


def _question_row(pool: FitQuestions, item: int, scored) -> np.ndarray:
    s, i = pool.items[item]
    d = pool.sets[s]
    X, p, _ = scored
    return question_features(str(d.language[i]), d.stats[i], X, p)


def _balanced(pool: FitQuestions, target: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Weights for the answerable model: each set with both answerable and unanswerable questions its say
    (``FitQuestions.weight``), shared half and half by its two kinds; a set of one kind none (it would teach the model
    its style, not whether documents answer; the threshold still answers for its questions)."""
    w = np.zeros(int(mask.sum()))
    sets = np.asarray([s for s, _ in pool.items])[mask]
    t, base = target[mask], pool.weight[mask]
    for s in np.unique(sets):
        mine = sets == s
        if t[mine].all() or not t[mine].any():
            continue
        for cls in (True, False):
            kind = mine & (t == cls)
            w[kind] = 0.5 * base[mine].sum() / kind.sum()
    return w


def _thresholds(pool: FitQuestions, p: np.ndarray, target: np.ndarray) -> dict[str, float]:
    """Per language of the questions (each language's encoder has its own scale of similarity), the highest
    threshold at which none of its sets abstains on more than ``ABSTAIN_ANSWERABLE`` of its answerable fit
    questions (probabilities out of fold); ``"*"``, the lowest of them, for any other language."""
    language = np.asarray([str(pool.sets[s].language[i]) for s, i in pool.items])
    sets = np.asarray([s for s, _ in pool.items])
    out = {}
    for lang in sorted(set(language[target])):
        best = 0.0
        for t in np.unique(np.round(p[language == lang], 4)):
            worst = max((p[(sets == s) & target] < t).mean() for s in np.unique(sets[(language == lang) & target]))
            if worst > ABSTAIN_ANSWERABLE:
                break
            best = float(t)
        out[lang] = best
    out["*"] = min(out.values(), default=0.0)
    return out


_SIMS = [UNIT_FEATURES.index("sim"), UNIT_FEATURES.index("sim_chunk")]
MAX_CHARS = 350  # the median quote a set's answers may run to (issue 43 asks at most 400 for the whole answer)
_LOG_LEN = UNIT_FEATURES.index("log_len")


def _chosen(X: np.ndarray, p: np.ndarray, length: float) -> int:
    return int(np.argmax(p - length * X[:, _LOG_LEN]))


def _chars(X: np.ndarray, i: int) -> float:
    return float(np.expm1(X[i, _LOG_LEN] * np.log(1000)))


def _length(pool: FitQuestions, oof) -> float:
    """What a unit's length costs when choosing the quote: of the costs at which every set's median quote
    (out of fold) stays within ``MAX_CHARS``, the one whose quotes hold the gold answer most often (the sets'
    mean)."""
    best, best_hits = None, -1.0
    for length in np.round(np.arange(0.0, 1.01, 0.05), 2):
        hits, medians = [], []
        for s in range(len(pool.sets)):
            mine = [
                i for i in range(len(pool.items)) if pool.items[i][0] == s and pool.answerable(i) and len(oof[i][1])
            ]
            if not mine:
                continue
            picks = [(oof[i][0], _chosen(oof[i][0], oof[i][1], length), oof[i][2]) for i in mine]
            hits.append(np.mean([y[j] for _, j, y in picks]))
            medians.append(np.median([_chars(X, j) for X, j, _ in picks]))
        if medians and max(medians) <= MAX_CHARS and np.mean(hits) > best_hits:
            best, best_hits = float(length), float(np.mean(hits))
    return best if best is not None else 1.0


def _support(data: list[UnitData], unit_no_encoder, unit, size: int) -> tuple[float, tuple]:
    """The least probability at which a written sentence counts as supported by a unit: the threshold that best
    tells a fit question's answer sentence, checked against its own passages, from another question's checked
    against them (Youden's J: accepted own minus accepted foreign, greatest)."""
    own, foreign = [], []
    for d in data:
        c = d.claims
        if c is None:
            continue
        for k in np.flatnonzero(~c["claim_held_out"]):
            rows = np.flatnonzero(c["claim_q"] == k)
            X, y = c["claim_X"][rows], c["claim_y"][rows]
            keep = np.argsort(-unit_no_encoder.predict(columns(X, unit_no_encoder.names)), kind="stable")[:size]
            X, y = relative(X[keep].copy()), y[keep]
            p = unit.predict(columns(X, unit.names))
            if c["claim_own"][k]:
                own.append(float(p[y].max()) if y.any() else 0.0)
            else:
                foreign.append(float(p.max()))
    if not own or not foreign:
        return 0.5, ("written sentences", 0, "support", "0.5 (no claims)", "–", "–")
    own_, foreign_ = np.asarray(own), np.asarray(foreign)
    best = max(np.unique(own_), key=lambda t: (own_ >= t).mean() - (foreign_ >= t).mean())
    row = ("written sentences", f"{len(own)} + {len(foreign)}", "support", f"{best:.3f}")
    row += (f"own accepted {(own_ >= best).mean():.3f}", f"foreign accepted {(foreign_ >= best).mean():.3f}")
    return float(best), row


def _table(pool: FitQuestions, oof, p_ans: np.ndarray, thresholds: dict[str, float], length: float) -> list:
    header = ("set", "fit questions", "quote holds the gold", "ceiling", "abstain answerable", "abstain absent")
    rows = [header]
    for s, d in enumerate(pool.sets):
        mine = [i for i in range(len(pool.items)) if pool.items[i][0] == s]
        good = [i for i in mine if pool.answerable(i)]
        bad = [i for i in mine if not pool.answerable(i)]
        first = sum(bool(len(oof[i][2])) and bool(oof[i][2][_chosen(oof[i][0], oof[i][1], length)]) for i in good)
        ceiling = sum(bool(oof[i][2].any()) for i in good)
        t = thresholds.get(str(d.language[0]) if len(d.language) else "*", thresholds["*"])
        rows.append(
            (
                d.name,
                len(mine),
                f"{first / max(len(good), 1):.3f}",
                f"{ceiling / max(len(good), 1):.3f}",
                f"{np.mean([p_ans[i] < t for i in good]):.3f}" if good else "–",
                f"{np.mean([p_ans[i] < t for i in bad]):.3f} ({len(bad)})" if bad else "–",
            )
        )
    return rows
