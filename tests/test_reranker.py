"""ragkit's own reranker (issue 51): the shipped cross-encoder reads pairs as it was trained on them, re-scores the
first hits of every strategy when on, keeps a cited section first, and decides by language where plain queries
use it; the held-out guard adopts only a gain its size can tell from noise (``ragkit learn`` too)."""

from __future__ import annotations

import numpy as np
import pytest

from ragkit import api
from ragkit.config import QueryConfig
from ragkit.learn import guard
from ragkit.rerank import bundled
from ragkit.retrieve.pipeline import cross_wanted

shipped = pytest.mark.skipif(not bundled.available(), reason="the shipped reranker is not in this checkout")


def test_a_pair_is_read_as_the_model_was_trained_on_it():
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(bundled.FOLDER / bundled.TOKENIZER)) if bundled.available() else None
    if tok is None:
        pytest.skip("the shipped reranker is not in this checkout")
    ids, mask = bundled.encode_pairs(tok, "Wie lange?", ["kurz", "ein viel längerer Text " * 100], max_tokens=64)
    bos, eos, pad = (tok.token_to_id(t) for t in ("<s>", "</s>", "<pad>"))
    assert ids.shape == mask.shape and ids.shape[1] == 64  # the long text cut to the pair's budget
    first = ids[0][mask[0] == 1].tolist()
    assert first[0] == bos and first[-1] == eos and first.count(eos) == 3  # <s> q </s></s> t </s>
    assert (ids[0][mask[0] == 0] == pad).all()
    asked = tok.encode(bundled.PROMPTS[0] + "Wie lange?", add_special_tokens=False).ids
    assert first[1 : 1 + len(asked)] == asked and first[1 + len(asked)] == eos  # the question, then the text


@shipped
def test_the_shipped_reranker_tells_an_answer_from_a_neighbour_in_german_swedish_and_english():
    model = bundled.shipped()
    cases = [
        (
            "Wie lange muss meine Mittagspause mindestens sein, wenn ich acht Stunden arbeite?",
            "§ 4 Ruhepausen\nDie Arbeit ist durch im voraus feststehende Ruhepausen von mindestens 30 Minuten bei "
            "einer Arbeitszeit von mehr als sechs bis zu neun Stunden zu unterbrechen.",
            "§ 5 Ruhezeit\nDie Arbeitnehmer müssen nach Beendigung der täglichen Arbeitszeit eine ununterbrochene "
            "Ruhezeit von mindestens elf Stunden haben.",
        ),
        (
            "Hur länge gäller ett typkontrollintyg för en stege?",
            "4 kap. 8 §\nEtt typkontrollintyg för en stege gäller i fem år och kan därefter förlängas.",
            "5 kap. 2 §\nArbetsgivaren ska se till att byggnadsställningar besiktigas innan de används.",
        ),
        (
            "How long may an employee work per day?",
            "Working time\nThe working time of an employee may not exceed eight hours a day.",
            "Holidays\nEmployees receive at least 24 working days of paid holiday per year.",
        ),
    ]
    for question, answer, neighbour in cases:
        good, other = model.score(question, [answer, neighbour])
        assert good > other, question


@shipped
def test_reranking_keeps_a_cited_section_first_and_says_what_it_did(corpus, index_with):
    _, reader = index_with(corpus)
    result = api.query(reader, "overtime limits", QueryConfig(rerank="cross", k=5, log=False))
    assert result.plan.rerank["used"] == "cross" and result.plan.rerank["model"] == bundled.SPEC
    assert "cross_encoder" in result.passages[0].features
    assert "cross_encoder" in result.timings_ms


def test_auto_reranks_answers_and_the_languages_the_card_names(monkeypatch):
    monkeypatch.setattr(bundled, "available", lambda folder=None: True)
    monkeypatch.setattr(bundled, "_defaults", lambda: frozenset({"de"}))
    plain = QueryConfig()
    assert plain.rerank == "auto"
    assert cross_wanted(plain, "de") and not cross_wanted(plain, "en")
    assert not cross_wanted(QueryConfig(answer=True), "en")  # answers too: where the guard says it pays
    assert not cross_wanted(QueryConfig(rerank="features", answer=True), "de")  # --no-rerank
    assert cross_wanted(QueryConfig(rerank="cross"), "en")
    assert cross_wanted(QueryConfig(rerank_model="/some/folder"), "en")  # a model one configured
    monkeypatch.setattr(bundled, "available", lambda folder=None: False)
    assert not cross_wanted(plain, "de")


def test_the_guard_tells_a_real_gain_from_noise():
    rng = np.random.default_rng(1)
    before = rng.random(47)
    moved = rng.normal(0.0, 0.1, 47)  # SciFact's case: queries move both ways, +0.002 on the mean
    assert not guard.better(before, before + moved - moved.mean() + 0.002)[0]
    assert not guard.better(before, before)[0]
    assert guard.better(before, before + 0.1 + 0.05 * rng.standard_normal(47))[0]
    gains = [0.0] * 90 + [1.0] * 10  # ten of a hundred questions right now, none wrong
    assert guard.better([0.0] * 100, gains)[0]
    assert not guard.better([0.0] * 100, [0.0] * 99 + [1.0])[0]  # one question is chance
    assert guard.paired_bootstrap([], []) == 1.0


@shipped
def test_an_answer_does_not_pay_for_the_reranker_by_default(corpus, index_with, monkeypatch):
    """Fitted with the reranker's unit scores the answer scorer gained little and cost ~0.4 s (scripts/README.md):
    an answer reads it only where the guard turned it on or the reader asked for it."""
    from ragkit.answer import scorer

    assert not {"ce", "ce_rel", "ce_passage"} & set(scorer.UNIT_FEATURES)
    monkeypatch.setattr(bundled, "_defaults", lambda: frozenset())
    _, reader = index_with(corpus)
    result = api.query(reader, "overtime limits", QueryConfig(answer=True, k=5, log=False))
    assert result.plan.rerank["used"] == "features" and "cross_encoder" not in result.timings_ms


GESETZ = """# Arbeitszeitgesetz

## § 3 Arbeitszeit der Arbeitnehmer

Die werktägliche Arbeitszeit der Arbeitnehmer darf acht Stunden nicht überschreiten. Sie kann auf bis zu zehn
Stunden nur verlängert werden, wenn innerhalb von sechs Kalendermonaten im Durchschnitt acht Stunden werktäglich
nicht überschritten werden.

## § 4 Ruhepausen

Die Arbeit ist durch im voraus feststehende Ruhepausen von mindestens 30 Minuten bei einer Arbeitszeit von mehr
als sechs bis zu neun Stunden und 45 Minuten bei einer Arbeitszeit von mehr als neun Stunden insgesamt zu
unterbrechen.

## § 5 Ruhezeit

Die Arbeitnehmer müssen nach Beendigung der täglichen Arbeitszeit eine ununterbrochene Ruhezeit von mindestens
elf Stunden haben.
"""


@shipped
@pytest.mark.integration
def test_the_command_line_shows_the_reranker_and_turns_it_off(tmp_path):
    import json
    import subprocess
    import sys

    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "arbzg.md").write_text(GESETZ)
    idx = str(tmp_path / "idx")
    run = [sys.executable, "-m", "ragkit"]
    subprocess.run([*run, "index", str(docs), "--index", idx], check=True, capture_output=True)
    shown = subprocess.run([*run, "models", "--json"], capture_output=True, text=True, check=True)
    rerank = {r["role"]: r for r in json.loads(shown.stdout)["roles"]}["rerank"]
    assert rerank["spec"] == bundled.SPEC and rerank["kind"] == "bundled" and rerank["probe"]["ms_per_candidate"] > 0
    ask = "Wie lange muss meine Pause sein, wenn ich acht Stunden arbeite?"
    on = subprocess.run([*run, "query", ask, "--index", idx, "--json", "--answer", "extract", "--rerank", "cross"],
                        capture_output=True, text=True, check=True)  # fmt: skip
    plan = json.loads(on.stdout)["plan"]["rerank"]
    assert plan["used"] == "cross" and plan["model"] == bundled.SPEC
    assert json.loads(on.stdout)["answer"]["quotes"]  # still an answer
    default = "cross" if "de" in bundled.card().get("on_by_default", []) else "features"
    plain = subprocess.run([*run, "query", ask, "--index", idx, "--json"], capture_output=True, text=True, check=True)
    assert json.loads(plain.stdout)["plan"]["rerank"]["used"] == default  # as the held-out guard decided
    off = subprocess.run([*run, "query", ask, "--index", idx, "--json", "--answer", "extract", "--no-rerank"],
                         capture_output=True, text=True, check=True)  # fmt: skip
    assert json.loads(off.stdout)["plan"]["rerank"]["used"] == "features"
