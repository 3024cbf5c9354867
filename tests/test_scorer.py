"""The answer scorer's parts: its features, its models read back from JSON (logistic, and LightGBM's trees walked
in numpy exactly as LightGBM walks them), the shipped model file, and what its fitting refuses to learn from."""

import json

import numpy as np
import pytest

from ragkit.answer import Evidence, idf_of
from ragkit.answer.extractive import cited_by, question_of
from ragkit.answer.features import (
    MODEL_FEATURES,
    UNIT_FEATURES,
    UNIT_FEATURES_NO_ENCODER,
    relative,
    unit_features,
    with_vectors,
)
from ragkit.answer.scorer import AnswerModel, default_model
from ragkit.fitted import Linear, ModelFileError, Trees, from_json
from ragkit.records import Passage, Plan, QueryResult

LAW = """(1) Die werktägliche Arbeitszeit der Arbeitnehmer darf acht Stunden nicht überschreiten. Sie kann auf bis
zu zehn Stunden nur verlängert werden, wenn innerhalb von sechs Kalendermonaten im Durchschnitt acht Stunden
werktäglich nicht überschritten werden.

(2) Die Arbeit ist durch Ruhepausen von mindestens 30 Minuten zu unterbrechen."""


def _evidence(*texts: str) -> Evidence:
    passages = [
        Passage(i, 1.0 / i, 1.0, f"d{i}", f"p{i}.md", "Arbeitszeitgesetz", f"ArbZG > § {i + 2}", 1, 5, t, [f"c{i}"], 50)
        for i, t in enumerate(texts, start=1)
    ]
    q = "Wie lange darf ich am Tag höchstens arbeiten?"
    return Evidence.of(QueryResult(q, "hybrid", Plan("hybrid", "", q, q), passages, [], {}))


def test_every_unit_gets_a_row_of_every_feature_and_the_relative_columns_compare_them():
    evidence = _evidence(LAW, "Die Ruhezeit beträgt elf Stunden. Sie beginnt mit dem Ende der Arbeit.")
    q = question_of("Wie lange darf ich am Tag höchstens arbeiten?", idf_of(None, 100), "de")
    X = unit_features(q, evidence.sentences, cited_by(q))
    assert X.shape == (len(evidence.sentences), len(UNIT_FEATURES)) and np.isfinite(X).all()
    kinds = {s.kind for s in evidence.sentences}
    assert {"sentence", "paragraph", "pair"} <= kinds
    sims = np.linspace(0.8, 0.9, len(X))
    Y = with_vectors(X, sims)
    i = UNIT_FEATURES.index
    assert Y[:, i("sim_rel")].max() == 0.0 and Y[:, i("sim_rank")].max() == 1.0
    assert abs(Y[:, i("sim_z")].mean()) < 1e-9  # the same whatever the encoder's scale
    Z = with_vectors(X, sims * 0.1)
    assert np.allclose(columns_of(Y, MODEL_FEATURES), columns_of(Z, MODEL_FEATURES))
    assert not set(UNIT_FEATURES_NO_ENCODER) & {"sim", "sim_z", "sim_rank", "sim_chunk"}


def columns_of(X, names):
    return X[:, [UNIT_FEATURES.index(n) for n in names]]


def test_trees_from_lightgbm_score_exactly_as_lightgbm_does():
    lightgbm = pytest.importorskip("lightgbm")
    rng = np.random.default_rng(0)
    X = rng.normal(size=(1500, 5))
    X[rng.random(X.shape) < 0.05] = np.nan  # missing values go the way each split says
    y = (np.nan_to_num(X[:, 0]) + np.nan_to_num(X[:, 1] * X[:, 2]) + rng.normal(size=1500) * 0.3) > 0
    model = lightgbm.LGBMClassifier(n_estimators=60, num_leaves=11, verbose=-1).fit(X, y)
    trees = Trees.from_lightgbm(model.booster_.dump_model(), tuple("abcde"))
    test = rng.normal(size=(300, 5))
    test[rng.random(test.shape) < 0.05] = np.nan
    assert np.allclose(trees.raw(test), model.booster_.predict(test, raw_score=True), atol=1e-9)
    again = from_json(json.loads(json.dumps(trees.to_json())))
    assert np.allclose(again.predict(test), model.predict_proba(test)[:, 1], atol=1e-7)
    parts = trees.contributions(test[0])
    assert abs(sum(parts.values()) - trees.raw(test[:1])[0]) < 1e-3  # each feature's share adds up


def test_a_linear_model_round_trips_and_explains_its_score():
    model = Linear(("a", "b"), np.array([1.0, 0.0]), np.array([2.0, 1.0]), np.array([0.5, -1.0]), 0.25)
    again = from_json(json.loads(json.dumps(model.to_json())))
    x = np.array([[3.0, 2.0]])
    assert np.allclose(again.raw(x), [0.25 + 0.5 - 2.0]) and again.contributions(x[0]) == {"a": 0.5, "b": -2.0}


@pytest.mark.parametrize(
    "broken",
    [
        {"kind": "trees", "names": ["a"], "feature": [0], "threshold": [0], "left": [5], "right": [0]},
        {"kind": "trees", "names": ["a"], "feature": [3, -1], "threshold": [0, 0], "left": [1, 1], "right": [1, 1],
         "default_left": [1, 1], "value": [0, 1], "roots": [0], "depth": 1},
        {"kind": "linear", "names": ["a", "b"], "mean": [0], "scale": [1], "coef": [1], "intercept": 0},
        {"kind": "pickle", "data": "gASV"},
    ],
)  # fmt: skip
def test_a_model_file_that_does_not_fit_together_is_refused(broken):
    with pytest.raises(ModelFileError):
        from_json(broken)


def test_the_shipped_answer_model_reads_and_says_how_it_was_fitted(tmp_path):
    model = default_model()
    assert set(model.threshold) >= {"de", "sv", "en", "*"} and 0 < model.support < 1
    assert {"multilingual-e5-small", "all-MiniLM-L6-v2"} <= set(model.encoders)
    assert set(model.meta["fitted_on"]) == {"german", "swedish", "hotpotqa", "xquad", "swequad"}
    assert model.unit.names == MODEL_FEATURES
    path = tmp_path / "model.json"
    path.write_text(json.dumps(model.to_json()))
    assert AnswerModel.load(path).to_json() == model.to_json()
    path.write_text(json.dumps(model.to_json() | {"format": 99}))
    with pytest.raises(ModelFileError):
        AnswerModel.load(path)


def test_scores_stay_the_same_whatever_order_the_units_come_in():
    evidence = _evidence(LAW, "Die Ruhezeit beträgt elf Stunden.")
    q = question_of("Wie lange darf ich am Tag höchstens arbeiten?", idf_of(None, 100), "de")
    X = relative(unit_features(q, evidence.sentences, cited_by(q)))
    flipped = relative(unit_features(q, evidence.sentences[::-1], cited_by(q)))
    assert np.allclose(X, flipped[::-1])
