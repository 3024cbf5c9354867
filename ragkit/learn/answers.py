"""Fitting the answer scorer (``ragkit.answer.scorer``) from labelled units, with scikit-learn's logistic
regression and LightGBM's gradient-boosted trees; only the fit halves of the labelled sets ever reach it.

The data: for every labelled question, the candidate units of its top passages with their ``UNIT_FEATURES``
(the encoder's similarity included) and whether each holds the gold answer, and its ``QUESTION_STATS``; for a
question the documents do not answer, the same without labels; and claims, a question's answer unit checked
against its own and another question's passages (``UnitData``, written by ``scripts/fit_answers.py features``;
ragkit/learn/answer_data.py).

The fit, as the scorer runs:
1. ``unit_no_encoder`` (logistic): units → holds the answer, from the features that need no encoder, over every unit;
2. ``unit`` (trees): the same from all features, over each question's ``shortlist`` best by ``unit_no_encoder``;
3. ``answerable`` (logistic): question → the documents answer it, from ``QUESTION_FEATURES`` computed with unit
   probabilities predicted by models that never saw that question (cross-validation folds by question);
4. ``threshold``: per language, the highest at which at most ``ABSTAIN_ANSWERABLE`` of each of its sets'
   answerable questions abstain, on answerable probabilities predicted out of fold;
5. ``length``: what a unit's length costs against its probability when the quote is chosen, the cost that
   keeps every set's median quote within ``MAX_CHARS`` and holds the gold answer most often (out of fold);
6. ``support``: the least unit probability at which a written sentence counts as supported (answer/verify.py).
Steps 4 to 6 and the table of figures are ragkit/learn/answer_calibration.py's.
The sets' say is ``WEIGHTS`` (the legal sets three times a reading-comprehension set's), shared by its questions,
so that a large set of one kind does not drown the legal questions.
"""

from __future__ import annotations

import numpy as np

from ragkit.answer.features import (
    MODEL_FEATURES,
    QUESTION_FEATURES,
    QUESTION_FEATURES_NO_ENCODER,
    UNIT_FEATURES,
    UNIT_FEATURES_NO_ENCODER,
    columns,
    question_features,
    relative,
)
from ragkit.answer.fingerprint import feature_code
from ragkit.answer.scorer import AnswerModel
from ragkit.fitted import Linear, Trees
from ragkit.learn.answer_calibration import ABSTAIN_ANSWERABLE, quote_length, support_threshold, table, thresholds
from ragkit.learn.answer_data import FitQuestions, UnitData

SHORTLIST = 12
FOLDS = 5
SEED = 43
C = 1.0  # inverse regularisation of every logistic fit
_SIMS = [UNIT_FEATURES.index("sim"), UNIT_FEATURES.index("sim_chunk")]


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
    threshold = thresholds(pool, p_ans, target)
    threshold_no_encoder = thresholds(pool, p_no_encoder, target)
    length = quote_length(pool, oof)
    unit_no_encoder, unit = _unit_models(pool, range(n), shortlist)
    support, support_row = support_threshold(data, unit_no_encoder, unit, shortlist)
    answerable = _answerable(pool, Z, target, QUESTION_FEATURES)
    answerable_no_encoder = _answerable(pool, Z_no_encoder, target, QUESTION_FEATURES_NO_ENCODER)
    meta = {
        "fitted_on": {d.name: int(len(d.questions(False))) for d in data},
        "no_encoder": table(pool, no_encoder, p_no_encoder, threshold_no_encoder, length)[1:],
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
    return model, table(pool, oof, p_ans, threshold, length) + [support_row]


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
