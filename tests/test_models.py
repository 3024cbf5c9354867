"""The model layer: every role (embed, rerank, generate) from a spec — a GGUF file in-process, a real server on
loopback (llama-cpp-python's OpenAI-compatible server, ``ragkit models serve``) — and what happens when a server
is down, slow, refuses a key, or serves another model under the same name."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

import ragkit
from ragkit import measure
from ragkit.config import IndexConfig, QueryConfig
from ragkit.embed import BUNDLED, load_embedder
from ragkit.embed.http_encoder import HttpEmbedder
from ragkit.errors import BadInput, EmbedderMismatch, ModelUnavailable
from ragkit.generate import load_generator
from ragkit.httpjson import InputTooLarge
from ragkit.modelspec import parse_spec, redact
from ragkit.rerank.models import GgufReranker, RerankUnavailable, load_reranker, parse_rerank
from tests.conftest import REPO, write
from tests.servers import free_port, llama_server, ragkit_models

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def gguf() -> Path:
    from ragkit.generate import resolve_model

    return resolve_model(None)  # the bundled gemma-3-270m: the stand-in for every GGUF role


@pytest.fixture(scope="module")
def llama(gguf, tmp_path_factory):
    with llama_server(gguf, "gemma", tmp_path_factory.mktemp("llama") / "server.log") as server:
        yield server


@pytest.fixture(scope="module")
def cross_folder(tmp_path_factory) -> Path:
    """A CrossEncoder folder built from the bundled MiniLM's weights with a seeded classification head: its
    scores mean nothing, the plumbing is real."""
    import torch
    from transformers import AutoTokenizer, BertConfig, BertForSequenceClassification

    from ragkit.embed import BUNDLED
    from ragkit.embed.models import torch_model_dir

    mini = torch_model_dir(BUNDLED)  # the float32 weights transformers reads (the torch extra's package)
    folder = tmp_path_factory.mktemp("ce") / "mini-cross"
    cfg = BertConfig.from_pretrained(mini, num_labels=1)
    torch.manual_seed(0)
    BertForSequenceClassification.from_pretrained(mini, config=cfg).save_pretrained(folder)
    AutoTokenizer.from_pretrained(mini).save_pretrained(folder)
    return folder


def _ragkit(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "ragkit", *args],
        capture_output=True,
        text=True,
        cwd=REPO,
        env={**os.environ, "HF_HUB_OFFLINE": "1", **(env or {})},
        timeout=600,
    )


# ---------------------------------------------------------------- specs, answers of servers (no server needed)


def test_a_spec_names_its_kind(tmp_path):
    assert parse_spec("bundled:all-MiniLM-L6-v2").kind == "bundled"
    assert parse_spec(str(tmp_path / "m.gguf")).kind == "gguf"
    assert parse_spec(str(tmp_path)).kind == "folder"
    http = parse_spec("http://127.0.0.1:11434/v1/#bge-m3", {"127.0.0.1": "MY_KEY"})
    assert (http.kind, http.url, http.name, http.raw) == (
        "http",
        "http://127.0.0.1:11434/v1",
        "bge-m3",
        "http://127.0.0.1:11434/v1#bge-m3",
    )
    with pytest.raises(BadInput, match="names no model"):
        parse_spec("http://127.0.0.1:11434/v1")
    with pytest.raises(ModelUnavailable, match=r"\$MY_KEY is not set"):
        http.api_key()


def test_rerank_answers_in_every_shape_and_keys_are_redacted(monkeypatch):
    cohere = {"results": [{"index": 1, "relevance_score": 0.2}, {"index": 0, "relevance_score": 0.9}]}
    tei = [{"index": 0, "score": 0.9}, {"index": 1, "score": 0.2}]
    assert parse_rerank(cohere, 2, "x") == parse_rerank(tei, 2, "x") == [0.9, 0.2]
    with pytest.raises(RerankUnavailable, match="scored 1 of 2"):
        parse_rerank({"results": [{"index": 0, "relevance_score": 0.5}]}, 2, "x")
    monkeypatch.setenv("SOME_API_KEY", "sk-verysecretvalue123")
    assert redact("rejected key sk-verysecretvalue123") == "rejected key ***"


def test_a_refused_batch_is_split_and_a_refused_text_is_cut():
    """The embedder's own logic, with a request function that refuses what a server with small limits would."""

    class Limited(HttpEmbedder):
        def __init__(self):
            self.spec, self.batch_size, self.notes, self.truncated, self.dimension = (
                parse_spec("http://x/v1#m"),
                8,
                [],
                0,
                4,
            )

        def _request(self, texts):
            if len(texts) > 2 or any(len(t) > 100 for t in texts):
                raise InputTooLarge("too large")
            return [np.ones(4, dtype=np.float32) / 2 for _ in texts]

    emb = Limited()
    out = emb.encode(["a"] * 7 + ["long " * 100])
    assert out.shape == (8, 4) and emb.batch_size <= 2 and emb.truncated == 1
    assert any("split" in n for n in emb.notes) and any("cut" in n for n in emb.notes)


# ---------------------------------------------------------------- GGUF in-process


def test_a_gguf_file_embeds_and_reranks_in_process(gguf, corpus, tmp_path):
    emb = load_embedder(str(gguf))
    vecs = emb.encode(["Overtime is paid at 125%.", "Die Kantine öffnet um zwölf."])
    assert vecs.shape == (2, emb.dimension) and np.allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-4)
    assert any("mean-pooled" in n for n in emb.notes)  # the bundled GGUF has no pooling type
    ragkit.index([corpus], tmp_path / "idx", cfg=IndexConfig())  # the bundled model, then another: --full re-embeds
    with pytest.raises(EmbedderMismatch):
        ragkit.index([corpus], tmp_path / "idx", cfg=IndexConfig(embed_model=str(gguf)))
    summary = ragkit.index([corpus], tmp_path / "idx", cfg=IndexConfig(embed_model=str(gguf)), full=True)
    ix = ragkit.open(tmp_path / "idx")
    assert ix.reader.manifest.embedder.kind == "gguf" and len(ix.reader.manifest.embedder.probe) == 3
    assert summary.chunks and ix.query("rollback container image", QueryConfig(k=2)).passages
    ranker = load_reranker(str(gguf))
    assert isinstance(ranker, GgufReranker) and ranker.mode == "yes/no"  # a language model: asked yes or no
    scores = ranker.score("How is overtime paid?", ["Overtime is paid at 125% of the hourly rate.", "Lunch at noon."])
    assert all(0.0 <= s <= 1.0 for s in scores)
    tokens = ranker.pair_tokens("q", "doc")  # the rank layout a cross-encoder GGUF gets
    assert tokens[0] == ranker.llm.token_bos() and tokens[-1] == ranker.llm.token_eos()


# ---------------------------------------------------------------- llama-cpp-python's server


def test_a_served_gguf_embeds_indexes_and_answers(llama, corpus, tmp_path):
    spec = llama.spec("gemma")
    emb = load_embedder(spec)
    assert emb.dimension == 640 and any("one vector per token" in n for n in emb.notes)  # pooled by ragkit
    idx = tmp_path / "idx"
    ragkit.index([corpus], idx, cfg=IndexConfig(embed_model=spec))
    done = _ragkit("query", "--json", "rollback container image", "--index", str(idx), "-k", "2", "-s", "naive")
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)  # (the stand-in's vectors rank nothing well: the plumbing is what is tested)
    assert len(out["passages"]) == 2 and out["timings_ms"]["embed_query"] > 0
    arrivals, t = [], time.perf_counter()
    for _piece in load_generator(spec).stream("Write one sentence about overtime pay.", max_tokens=24, temperature=0):
        arrivals.append(time.perf_counter() - t)
    assert len(arrivals) > 3 and arrivals[0] < arrivals[-1]  # streamed: the first piece before the last
    ix = ragkit.open(idx)
    result = ix.query("How is overtime limited?", QueryConfig(k=2))
    assert ix.answer_for(result, QueryConfig(model=spec, max_tokens=24)).error is None
    assert result.answer.model == "gemma" and result.answer.sources == [1, 2]  # its text: the stand-in's


def test_a_key_comes_from_its_variable_and_is_never_written(gguf, corpus, tmp_path):
    secret = "sk-ragkit-test-0123456789"
    (tmp_path / "ragkit.toml").write_text('[models.keys]\n"127.0.0.1" = "RAGKIT_TEST_KEY"\n')
    with llama_server(gguf, "gemma", tmp_path / "keyed.log", api_key=secret) as server:
        idx = tmp_path / "idx"
        args = ["index", str(corpus), "--index", str(idx), "--embed-model", server.spec("gemma"), "--json"]
        missing = subprocess.run(
            [sys.executable, "-m", "ragkit", *args],
            capture_output=True,
            text=True,
            cwd=tmp_path,
            env={**os.environ, "HF_HUB_OFFLINE": "1"},
        )
        assert missing.returncode == 5 and "$RAGKIT_TEST_KEY is not set" in missing.stderr
        wrong = subprocess.run(
            [sys.executable, "-m", "ragkit", *args],
            capture_output=True,
            text=True,
            cwd=tmp_path,
            env={**os.environ, "HF_HUB_OFFLINE": "1", "RAGKIT_TEST_KEY": "sk-wrong-key-0000000"},
        )
        assert wrong.returncode == 5 and "refused the API key" in wrong.stderr
        ok = subprocess.run(
            [sys.executable, "-m", "ragkit", *args],
            capture_output=True,
            text=True,
            cwd=tmp_path,
            env={**os.environ, "HF_HUB_OFFLINE": "1", "RAGKIT_TEST_KEY": secret},
        )
        assert ok.returncode == 0, ok.stderr
        query = subprocess.run(
            [sys.executable, "-m", "ragkit", "query", "--json", "overtime", "--index", str(idx)],
            capture_output=True,
            text=True,
            cwd=tmp_path,
            env={**os.environ, "HF_HUB_OFFLINE": "1", "RAGKIT_TEST_KEY": secret},
        )
        assert query.returncode == 0, query.stderr
    written = b"".join(p.read_bytes() for p in idx.rglob("*") if p.is_file())
    for out in (written, (ok.stdout + ok.stderr + query.stdout + query.stderr).encode()):
        assert secret.encode() not in out
    assert json.loads((idx / "manifest.json").read_text())["index_config"]["api_keys"] == {
        "127.0.0.1": "RAGKIT_TEST_KEY"
    }


def test_a_server_killed_mid_run_commits_nothing(gguf, corpus, tmp_path):
    with llama_server(gguf, "gemma", tmp_path / "dying.log") as server:
        idx, spec = tmp_path / "idx", server.spec("gemma")
        ragkit.index([corpus], idx, cfg=IndexConfig(embed_model=spec))
        before = json.loads((idx / "manifest.json").read_text())
        for n in range(120):  # enough chunks that the kill lands while they are embedded
            write(corpus, f"more/note{n}.md", f"# Note {n}\n\nParking badge number {n} is at the front desk.\n")
        threading.Timer(2.0, server.kill).start()
        with pytest.raises(ModelUnavailable, match="cannot reach the model server"):
            ragkit.index([corpus], idx, cfg=IndexConfig(embed_model=spec))
    assert json.loads((idx / "manifest.json").read_text()) == before  # the committed run stands
    ix = ragkit.open(idx)
    assert ix.query("rollback container", QueryConfig(strategy="lexical", k=1)).passages  # no model needed


# ---------------------------------------------------------------- ragkit models serve


def test_the_rerank_api_of_a_real_server(cross_folder, corpus, index_with, tmp_path):
    with ragkit_models(tmp_path / "rerank.log", rerank=str(cross_folder)) as server:
        remote = load_reranker(server.spec("mini-cross"))
        local = load_reranker(str(cross_folder))
        docs = ["Overtime is paid at 125%.", "Rollbacks redeploy the previous image.", "Lunch is at noon."]
        assert np.allclose(remote.score("overtime pay", docs), local.score("overtime pay", docs), atol=1e-4)
        _, ix = index_with(corpus)
        r = ix.query("overtime", QueryConfig(rerank="cross", rerank_model=server.spec("mini-cross"), k=3))
        assert r.plan.rerank["used"] == "cross" and "cross_encoder" in r.timings_ms
        server.kill()
        r = ix.query("overtime", QueryConfig(rerank="cross", rerank_model=server.spec("mini-cross"), k=3))
        assert r.plan.rerank["used"] == "features" and "cannot reach" in r.plan.rerank["reason"] and r.passages


def test_a_query_keeps_its_passages_when_the_generator_server_is_gone(llama, corpus, index_with, tmp_path):
    _, ix = index_with(corpus)
    gone = f"http://127.0.0.1:{free_port()}/v1#gemma"  # a port nobody listens on
    result = ix.query("overtime", QueryConfig(k=2))
    failed = ix.answer_for(result, QueryConfig(model=gone)).error
    assert isinstance(failed, ModelUnavailable) and result.passages and "cannot reach" in result.answer_error


def test_another_model_under_the_same_name_is_refused(corpus, tmp_path):
    """The index records its embedder's answers to probe texts: a server that now serves another model under
    the same name (multilingual-e5-small, 384 dimensions too, in a folder named after MiniLM) is refused."""
    from ragkit.embed.e5 import model_dir

    impostor = tmp_path / "all-MiniLM-L6-v2"
    shutil.copytree(model_dir(), impostor)
    idx, port = tmp_path / "idx", free_port()
    with ragkit_models(tmp_path / "mini.log", embed=BUNDLED, port=port) as server:
        spec = server.spec("all-MiniLM-L6-v2")
        ragkit.index([corpus], idx, cfg=IndexConfig(embed_model=spec))
        served = load_embedder(spec).encode(["rollback container image"])[0]
        local = load_embedder(BUNDLED, encoder="onnx-int8").encode(["rollback container image"])[0]
        assert float(served @ local) > 0.999  # the same model, over HTTP
    with ragkit_models(tmp_path / "impostor.log", embed=str(impostor), port=port) as server:
        assert server.spec("all-MiniLM-L6-v2") == spec
        with pytest.raises(EmbedderMismatch, match="no longer answers as the model"):
            ragkit.open(idx).query("overtime", QueryConfig(k=1))
        write(corpus, "notes/new.md", "# New\n\nA new note.\n")
        with pytest.raises(EmbedderMismatch, match="no longer answers as the model"):
            ragkit.index([corpus], idx, cfg=IndexConfig(embed_model=spec))


def test_models_command_and_eval_compare_models(llama, gguf, tmp_path):
    done = _ragkit(
        "models",
        "--json",
        "--embed-model",
        llama.spec("gemma"),
        "--model",
        llama.spec("gemma"),
        "--rerank-model",
        str(gguf),
    )
    assert done.returncode == 0, done.stderr
    roles = {r["role"]: r for r in json.loads(done.stdout)["roles"]}
    assert roles["embed"]["probe"]["dimension"] == 640 and roles["embed"]["probe"]["texts_per_s"] > 0
    assert roles["embed"]["probe"]["notes"] and roles["generate"]["probe"]["first_token_s"] > 0
    assert roles["rerank"]["probe"]["mode"] == "yes/no" and roles["rerank"]["probe"]["ms_per_candidate"] > 0
    data = tmp_path / "beir"
    (data / "qrels").mkdir(parents=True)
    docs = {
        "d1": "Overtime is paid at 125% of the hourly rate.",
        "d2": "Rollbacks redeploy the previous image.",
        "d3": "The cafeteria opens at noon.",
    }
    (data / "corpus.jsonl").write_text(
        "".join(json.dumps({"_id": k, "title": "", "text": v}) + "\n" for k, v in docs.items())
    )
    (data / "queries.jsonl").write_text('{"_id": "q1", "text": "overtime pay"}\n{"_id": "q2", "text": "rollback"}\n')
    (data / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\nq2\td2\t1\n")
    res = measure.evaluate(data, ["hybrid"], index_dir=tmp_path / "ev", k=3, embed_models=[BUNDLED, str(gguf)])
    assert [r["embed_model"] for r in res["results"]] == [BUNDLED, str(gguf)]
    assert (tmp_path / "ev").is_dir() and any(p.name.startswith("ev-") for p in tmp_path.iterdir())
