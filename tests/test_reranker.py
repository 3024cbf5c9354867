"""ragkit's own reranker (issue 51): it reads pairs as it was trained on them and decides by language where plain
queries use it; its graph is not shipped (issue 62), and asking for it says so; the held-out guard adopts only a
gain its size can tell from noise (``ragkit learn`` too)."""

from __future__ import annotations

import numpy as np

from ragkit.config import QueryConfig
from ragkit.learn import guard
from ragkit.rerank import bundled
from ragkit.retrieve.pipeline import cross_wanted


def test_a_pair_is_read_as_the_model_was_trained_on_it():
    """The pair layout the training script and the reranker share, with e5's own vocabulary (the reranker's is a cut
    of it: the same special tokens)."""
    from tokenizers import Tokenizer

    from ragkit.embed import e5

    tok = Tokenizer.from_file(str(e5.model_dir() / "tokenizer.json"))
    tok.no_padding()
    tok.no_truncation()
    ids, mask = bundled.encode_pairs(tok, "Wie lange?", ["kurz", "ein viel längerer Text " * 100], max_tokens=64)
    bos, eos, pad = (tok.token_to_id(t) for t in ("<s>", "</s>", "<pad>"))
    assert ids.shape == mask.shape and ids.shape[1] == 64  # the long text cut to the pair's budget
    first = ids[0][mask[0] == 1].tolist()
    assert first[0] == bos and first[-1] == eos and first.count(eos) == 3  # <s> q </s></s> t </s>
    assert (ids[0][mask[0] == 0] == pad).all()
    asked = tok.encode(bundled.PROMPTS[0] + "Wie lange?", add_special_tokens=False).ids
    assert first[1 : 1 + len(asked)] == asked and first[1 + len(asked)] == eos  # the question, then the text


def test_the_unshipped_reranker_asked_for_falls_back_to_the_features_and_says_why(corpus, index_with):
    """Its graph left the package (issue 62); its card stays, and asking for it keeps the passages in the features'
    order with the reason."""
    assert not bundled.available() and bundled.card()["shipped"] is False
    _, ix = index_with(corpus)
    result = ix.query("overtime limits", QueryConfig(rerank="cross", k=5, log=False))
    assert result.plan.rerank["used"] == "features" and "is not shipped" in result.plan.rerank["reason"]
    assert "scripts/train_reranker.py" in result.plan.rerank["reason"] and result.passages


def test_auto_reranks_answers_and_the_languages_the_card_names():
    card = frozenset({"de"})  # a shipped reranker whose card names German
    plain = QueryConfig()
    assert plain.rerank == "auto"
    assert cross_wanted(plain, "de", card) and not cross_wanted(plain, "en", card)
    assert not cross_wanted(QueryConfig(answer=True), "en", card)  # answers too: where the guard says it pays
    assert not cross_wanted(QueryConfig(rerank="features", answer=True), "de", card)  # --no-rerank
    assert cross_wanted(QueryConfig(rerank="cross"), "en", card)
    assert cross_wanted(QueryConfig(rerank_model="/some/folder"), "en", card)  # a model one configured
    assert not bundled.available() and bundled.default_languages() == frozenset()  # not shipped: no language
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


def test_the_answer_scorer_reads_no_reranker():
    """Fitted with the reranker's unit scores the answer scorer gained little and cost ~0.4 s (scripts/README.md)."""
    from ragkit.answer import features

    assert not {"ce", "ce_rel", "ce_passage"} & set(features.UNIT_FEATURES)
