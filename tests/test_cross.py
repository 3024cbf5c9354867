"""Cross-encoder second stage: a tiny model made in the test, and every fallback path."""

import pytest

from ragkit.config import QueryConfig


@pytest.fixture
def ix(corpus, index_with):
    return index_with(corpus)[1]


def test_missing_and_broken_folders_fall_back(ix, tmp_path):
    r = ix.query("overtime", QueryConfig(rerank="cross", rerank_model=str(tmp_path / "nope")))
    assert r.plan.rerank["used"] == "features" and "not found" in r.plan.rerank["reason"]
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "config.json").write_text("{not json")
    r = ix.query("overtime", QueryConfig(rerank="cross", rerank_model=str(broken)))
    assert r.plan.rerank["used"] == "features" and "cannot load" in r.plan.rerank["reason"]
    assert r.passages


@pytest.mark.integration
def test_tiny_cross_encoder_loads_and_scores(ix, tmp_path):
    from transformers import BertConfig, BertForSequenceClassification, BertTokenizer

    words = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "overtime", "rollback", "meeting", "is", "the", "a"]
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("\n".join(words) + "\n")
    model_dir = tmp_path / "tiny-ce"
    BertTokenizer(str(vocab)).save_pretrained(model_dir)
    cfg = BertConfig(
        vocab_size=len(words),
        hidden_size=8,
        num_hidden_layers=1,
        num_attention_heads=1,
        intermediate_size=16,
        max_position_embeddings=256,
        num_labels=1,
    )
    BertForSequenceClassification(cfg).save_pretrained(model_dir)
    r = ix.query("overtime", QueryConfig(rerank="cross", rerank_model=str(model_dir), k=3))
    assert r.plan.rerank["used"] == "cross" and r.plan.rerank["reason"] is None
    scored = [h for h in r.hits if "cross_encoder" in h.features]
    assert scored and all(isinstance(h.features["cross_encoder"], float) for h in scored)
    assert [h.score for h in scored] == sorted((h.score for h in scored), reverse=True)
    assert "cross_encoder" in r.timings_ms
