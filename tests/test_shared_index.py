"""A shared index is data, not a program (issue 50): a crafted DuckDB store reads none of the reader's files, a
manifest's names stay inside the index, the query log is a table a rating looks up by key, and nothing about a
reader leaks (token names, paths). Unit tests with the fake embedder; a real ``ragkit serve`` and moto's S3 where
the issue says so."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import duckdb
import pytest

import ragkit
from ragkit import library
from ragkit.config import QueryConfig
from ragkit.errors import BadQuery, IndexCorrupt
from ragkit.learn.feedback import Feedback
from ragkit.names import checked_name
from ragkit.rerank.ranker import collections_of, scope_of
from ragkit.store import layout
from ragkit.store.events import EventLog
from ragkit.store.manifest import read_manifest
from tests.s3 import BUCKET

SECRET = "the-reader-s-secret-7c1f"


@pytest.fixture
def secret(tmp_path):
    """A file of the reader's, outside every index: no crafted store may read it."""
    path = tmp_path / "outside" / "secret.txt"
    path.parent.mkdir()
    path.write_text(SECRET)
    (path.parent / "secret.csv").write_text(f"a\n{SECRET}\n")
    duckdb.sql(f"COPY (SELECT '{SECRET}' AS a) TO '{path.parent / 'secret.parquet'}' (FORMAT parquet)")
    return path


def _store(ix):
    return layout.store_path(ix.path, read_manifest(ix.path))


def _craft(path, *statements):
    con = duckdb.connect(str(path))
    try:
        for s in statements:
            con.execute(s)
    finally:
        con.close()


def crafts(secret):
    d = secret.parent
    return {
        "a view over read_text in a table's place": [
            "ALTER TABLE documents RENAME TO documents_real",
            f"CREATE VIEW documents AS SELECT * REPLACE (title || (SELECT content FROM read_text('{secret}')) AS "
            "title) FROM documents_real",
        ],
        "a view over read_csv": [f"CREATE OR REPLACE VIEW entities AS SELECT a AS key FROM read_csv('{d}/secret.csv')"],
        "a view over read_parquet": [f"CREATE VIEW sneaky AS SELECT * FROM read_parquet('{d}/secret.parquet')"],
        "a view over glob": [f"CREATE VIEW files AS SELECT * FROM glob('{d}/*')"],
        "a table macro over read_text": [
            "CREATE MACRO leak() AS TABLE SELECT content FROM read_text('/etc/hostname')",
            "CREATE OR REPLACE VIEW alias_map AS SELECT content AS alias, content AS entity FROM leak()",
        ],
        "a default that reads a setting of the reader": [
            "CREATE TABLE notes (a VARCHAR DEFAULT (current_setting('home_directory')))",
            "INSERT INTO notes DEFAULT VALUES",
        ],
        "a sequence and a type": ["CREATE SEQUENCE s1", "CREATE TYPE mood AS ENUM ('a')"],
    }


def test_crafted_stores_are_refused_and_read_no_file_of_the_reader(corpus, index_with, secret, tmp_path):
    import shutil

    _, ix = index_with(corpus)
    clean = tmp_path / "clean-copy"
    shutil.copytree(ix.path, clean)
    for what, statements in crafts(secret).items():
        shutil.rmtree(ix.path)
        shutil.copytree(clean, ix.path)
        _craft(_store(ix), *statements)
        crafted = ragkit.open(ix.path, embedder=ix.reader.embedder)
        for call in (
            lambda c: c.documents(10, 0),
            lambda c: c.stats(),
            lambda c: c.query("overtime", QueryConfig(strategy="local", k=3, log=False)).passages,
        ):
            try:
                out = call(crafted)
            except IndexCorrupt as exc:
                assert "not ragkit's own" in exc.message and "--repair" in exc.hint, what
                continue
            assert SECRET not in json.dumps(out, default=str), what  # (a path that never opens the store)
        report = library.check(ix.path)
        assert not report.to_dict()["ok"], what


def test_a_sealed_connection_reads_nothing_outside_its_folder(corpus, index_with, secret):
    _, ix = index_with(corpus)
    with ix.reader.duck() as store:
        for sql in (
            f"SELECT * FROM read_text('{secret}')",
            f"SELECT * FROM read_csv('{secret.parent}/secret.csv')",
            f"SELECT * FROM glob('{secret.parent}/*')",
            f"ATTACH '{secret.parent}/other.duckdb' AS x",
            "SET enable_external_access = true",
            "INSTALL httpfs",
            f"COPY (SELECT 1) TO '{secret.parent}/out.csv'",
        ):
            with pytest.raises(duckdb.Error):
                store.con.execute(sql).fetchall()
    assert not (secret.parent / "out.csv").exists() and not (secret.parent / "other.duckdb").exists()


def test_check_repair_writes_a_clean_store_and_a_replaced_table_needs_a_rebuild(corpus, index_with, secret, tmp_path):
    import shutil

    _, ix = index_with(corpus)
    backup = tmp_path / "backup"
    shutil.copytree(ix.path, backup)
    _craft(_store(ix), *crafts(secret)["a table macro over read_text"], "CREATE TABLE extra (a INTEGER)")
    problems = library.check(ix.path).to_dict()["problems"]
    assert problems[0]["foreign"] and problems[0]["repair"] == "ragkit check --repair"
    done = library.check(ix.path, repair=True).repaired
    assert any("ragkit's own tables and views only" in d for d in done)
    assert library.check(ix.path).to_dict()["ok"]
    fixed = ragkit.open(ix.path, embedder=ix.reader.embedder)
    assert fixed.stats()["documents"] == ragkit.open(backup, embedder=ix.reader.embedder).stats()["documents"]
    assert fixed.query("overtime", QueryConfig(strategy="local", k=3, log=False)).passages
    # a table of ragkit's replaced by a view: its rows cannot be trusted, the hint is a rebuild
    shutil.rmtree(ix.path)
    shutil.copytree(backup, ix.path)
    _craft(_store(ix), *crafts(secret)["a view over read_text in a table's place"])
    problems = library.check(ix.path).to_dict()["problems"]
    assert "--full" in problems[0]["repair"]
    with pytest.raises(IndexCorrupt):
        library.check(ix.path, repair=True)


def test_the_cli_says_one_line_and_no_traceback(corpus, index_with, secret):
    _, ix = index_with(corpus)
    _craft(_store(ix), *crafts(secret)["a view over read_csv"])
    out = subprocess.run(
        [sys.executable, "-m", "ragkit", "stats", "--index", str(ix.path)], capture_output=True, text=True
    )
    assert out.returncode == 7 and "Traceback" not in out.stderr + out.stdout
    assert "not ragkit's own" in out.stderr + out.stdout and SECRET not in out.stderr + out.stdout


# --------------------------------------------------------------------------------------------------- names


@pytest.mark.parametrize(
    "key, value",
    [
        ("store", "../outside.duckdb"),
        ("store", "/etc/passwd"),
        ("store", "../other-index/store.1.duckdb"),
        ("store", "store.1.duckdb/../../x.duckdb"),
        ("graph", "../graph.1"),
        ("graph", "/tmp"),
    ],
)
def test_a_manifest_naming_files_outside_the_index_is_refused(corpus, index_with, key, value, tmp_path):
    _, ix = index_with(corpus)
    outside = tmp_path / "outside.duckdb"
    _craft(outside, "CREATE TABLE documents (id VARCHAR)")
    data = json.loads((ix.path / "manifest.json").read_text())
    (ix.path / "manifest.json").write_text(json.dumps({**data, key: value}))
    with pytest.raises(IndexCorrupt, match="not one of ragkit's own names"):
        ragkit.open(ix.path, embedder=ix.reader.embedder)


def test_a_lance_table_and_a_learned_model_name_are_checked_too(corpus, index_with):
    _, ix = index_with(corpus)
    data = json.loads((ix.path / "manifest.json").read_text())
    data["last_run"]["lance_table"] = "../../elsewhere"
    (ix.path / "manifest.json").write_text(json.dumps(data))
    with pytest.raises(IndexCorrupt):
        ragkit.open(ix.path, embedder=ix.reader.embedder)
    for name in ("../../etc/passwd", "/etc/passwd", "ranker.all.1.json/../../x.json"):
        with pytest.raises(IndexCorrupt):
            checked_name("ranker", name)
    assert checked_name("ranker", "ranker.all-1a2b3c4d.3.json")


def test_a_remote_manifest_naming_files_outside_the_mirror_is_refused(s3, corpus, tmp_path):
    import boto3

    uri = f"s3://{BUCKET}/names"
    ragkit.index([corpus], uri, embedder_factory=lambda c: _fake())
    s3c = boto3.client("s3")
    data = json.loads(s3c.get_object(Bucket=BUCKET, Key="names/manifest.json")["Body"].read())
    s3c.put_object(Bucket=BUCKET, Key="names/store.9.duckdb", Body=b"x")
    s3c.put_object(Bucket=BUCKET, Key="names/manifest.json", Body=json.dumps({**data, "store": "../escaped"}).encode())
    cache = tmp_path / "second-machine"
    env = {**os.environ, "RAGKIT_CACHE": str(cache)}
    out = subprocess.run(
        [sys.executable, "-m", "ragkit", "stats", "--index", uri], capture_output=True, text=True, env=env
    )
    assert out.returncode == 7 and "not one of ragkit's own names" in out.stderr
    assert not any(p.name == "escaped" for p in cache.rglob("*"))


def _fake():
    from tests.fakes import FakeEmbedder

    return FakeEmbedder()


# --------------------------------------------------------------------------------------------------- the log


def test_a_rating_looks_up_one_row_and_never_reads_the_whole_log(corpus, index_with, monkeypatch):
    _, ix = index_with(corpus)
    result = ix.query("overtime", QueryConfig(k=3))
    ix.log(result, QueryConfig(k=3))
    EventLog(ix.path).append([{"type": "query", "id": f"{i:016x}", "query": "x", "passages": []} for i in range(5000)])

    def whole(*a, **k):
        raise AssertionError("the whole log was read for one rating")

    monkeypatch.setattr(EventLog, "read", whole)
    monkeypatch.setattr(EventLog, "rated", whole)
    event = ix.feedback(result.query_id, rank=1, grade="good")
    assert event["grade"] == 3 and event["event_id"]
    monkeypatch.undo()
    assert EventLog(ix.path).count() == 5002
    assert [j.id for j in Feedback(ix.path).judged()] == [result.query_id]


def test_an_older_json_lines_log_is_taken_in_once(tmp_path):
    old = tmp_path / "feedback" / "events.jsonl"
    old.parent.mkdir()
    lines = [
        {"type": "query", "id": "q1", "query": "a", "passages": [{"rank": 1}]},
        {"type": "feedback", "query_id": "q1", "rank": 1, "grade": 3},
    ]
    old.write_text("".join(json.dumps(e) + "\n" for e in lines) + "not json\n")
    log = EventLog(tmp_path)
    assert log.query("q1")["query"] == "a" and log.count() == 2
    assert not old.exists() and (old.parent / "events.jsonl.imported").exists()
    assert EventLog(tmp_path).count() == 2  # (taken in once)


def test_the_log_on_s3_goes_up_in_batches_and_a_second_machine_finds_it(s3, corpus, tmp_path, monkeypatch):
    import boto3

    uri = f"s3://{BUCKET}/batches"
    ragkit.index([corpus], uri, embedder_factory=lambda c: _fake())
    ix = ragkit.open(uri, embedder=_fake())
    ids = []
    for text in ("overtime", "rest periods", "remote work"):
        result = ix.query(text, QueryConfig(k=3))
        ix.log(result, QueryConfig(k=3))
        ids.append(result.query_id)
    keys = lambda: [  # noqa: E731
        o["Key"]
        for o in boto3.client("s3").list_objects_v2(Bucket=BUCKET, Prefix="batches/feedback/").get("Contents", [])
    ]
    assert keys() == []  # waiting for their batch
    assert ix.flush_log() == 3
    assert len(keys()) == 1 and keys()[0].endswith(".jsonl.gz")
    monkeypatch.setenv("RAGKIT_CACHE", str(tmp_path / "machine-b"))
    from ragkit.config import resolve_index_dir

    other = resolve_index_dir(uri)
    assert other != ix.path
    second = ragkit.open(uri, embedder=_fake())
    assert second.path == other
    assert second.feedback(ids[1], rank=1, grade="bad")["grade"] == 0  # found on the second machine
    assert second.flush_log() == 1 and len(keys()) == 2


# --------------------------------------------------------------------------------------------------- small items


def test_a_rating_must_say_good_or_bad_everywhere(corpus, index_with, tmp_path):
    _, ix = index_with(corpus)
    result = ix.query("overtime", QueryConfig(k=3))
    ix.log(result, QueryConfig(k=3))
    with pytest.raises(BadQuery, match="good or bad"):
        ix.feedback(result.query_id, rank=1, grade=None, source="cli")
    with pytest.raises(BadQuery, match="good=True, good=False or a grade"):
        ix.feedback(result.query_id, rank=1)
    rows = tmp_path / "rows.jsonl"
    rows.write_text(json.dumps({"query_id": result.query_id, "rank": 1}) + "\n")
    with pytest.raises(BadQuery, match="line 1"):
        ix.feedback_file(rows)
    from ragkit.serve import ops
    from ragkit.serve.access import Caller

    state = ops.State(str(ix.path))
    with pytest.raises(BadQuery):
        ops.feedback(state, {"query_id": result.query_id, "rank": 1}, Caller())
    assert ops.feedback(state, {"query_id": result.query_id, "rank": 1, "good": False}, Caller())["event"]["grade"] == 0


def test_a_collection_with_a_comma_is_one_collection():
    assert scope_of(("a,b",)) != scope_of(("a", "b"))
    for readable in (("a,b",), ("a", "b"), ("50%", "x,y%2C")):
        assert collections_of(scope_of(readable)) == tuple(sorted(readable))
    assert collections_of("all") is None
    from ragkit.learn.ranker import _slug

    assert _slug(scope_of(("a,b",))) != _slug(scope_of(("a", "b")))


def test_the_page_cache_stays_under_its_size(tmp_path):
    from ragkit import pages

    folder = tmp_path / "pages"
    folder.mkdir()
    for i in range(20):
        (folder / f"{i:02d}.png").write_bytes(b"x" * 1000)
        os.utime(folder / f"{i:02d}.png", (i, i))
    pages.prune(folder, 5000)
    left = sorted(p.name for p in folder.iterdir())
    assert left == [f"{i:02d}.png" for i in range(15, 20)]  # the most recently used kept


def test_the_answer_model_was_fitted_with_the_feature_code_of_today():
    from ragkit.answer.fingerprint import feature_code
    from ragkit.answer.scorer import default_model

    assert default_model().feature_code == feature_code(), (
        "the answer scorer's features changed since answer_model.json was fitted: refit it "
        "(python scripts/fit_answers.py features && python scripts/fit_answers.py fit)"
    )


def test_learned_models_of_an_s3_index_reach_every_reader(s3, corpus, tmp_path, monkeypatch):
    from ragkit.learn import ranker as ranking
    from ragkit.rerank.ranker import Rankers
    from tests.test_feedback import _flipping_ranker

    uri = f"s3://{BUCKET}/learned"
    ragkit.index([corpus], uri, embedder_factory=lambda c: _fake())
    ix = ragkit.open(uri, embedder=_fake())
    outcome = ranking.Outcome("all", 20, before={"ndcg@10": 0, "top1": 0}, after={"ndcg@10": 1, "top1": 1})
    ranking.adopt(ix.path, "all", _flipping_ranker(), outcome)
    from ragkit.store import remote

    remote.push_learned(ix.path)
    monkeypatch.setenv("RAGKIT_CACHE", str(tmp_path / "machine-b"))
    other = ragkit.open(uri, embedder=_fake())
    assert other.path != ix.path
    assert set(Rankers(other.path).adopted()) == {"all"}
    ix.unlearn()
    remote.pull(other.path)
    assert Rankers(other.path).adopted() == {}


@pytest.mark.integration
def test_a_server_tells_nobody_where_its_index_lives(tmp_path):
    from tests.team import build_index, serve, tokens_file

    index = build_index(tmp_path / "src", tmp_path / "private-place" / "laws")
    tokens, env = tokens_file(tmp_path / "tokens.toml")
    with serve(index, tmp_path / "server.log", "--tokens", str(tokens), env=env) as srv:
        places = (str(tmp_path), str(index.resolve()), "private-place")
        seen = []
        for path in ("/healthz", "/openapi.json", "/v1/stats", "/v1/documents", "/v1/documents/nope.md"):
            status, body = srv.call(path, token=None)
            seen.append((path, status, json.dumps(body, default=str)))
        import urllib.request

        for path in ("/docs", "/"):
            with urllib.request.urlopen(srv.url + path, timeout=60) as resp:
                seen.append((path, resp.status, resp.read().decode()))
        status, body = srv.call("/v1/query", {"query": "x"}, token="wrong-token-value-0123456789")
        seen.append(("/v1/query", status, json.dumps(body)))
        for path, status, text in seen:
            assert not any(p in text for p in places), (path, status, text[:300])
        assert srv.call("/healthz")[1]["index"] == "laws"
        _, stats = srv.call("/v1/stats", token=srv.token("a"))
        assert stats["index"] == "laws" and "spec" not in stats["embedder"]
        assert not any(p in json.dumps(stats) for p in places)
        status, missing = srv.call("/v1/documents/nope.md", token=srv.token("a"))
        assert status == 404 and not any(p in json.dumps(missing) for p in places)
