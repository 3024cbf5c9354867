"""Indexes on object storage (issue 17) against a real S3 API: moto's server on a free loopback port. Index,
incremental re-index, query, a killed run, two readers; the manifest upload commits a run."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest

from ragkit import api
from ragkit.config import QueryConfig, resolve_index_dir
from tests.conftest import REPO, write
from tests.fakes import FakeEmbedder

BUCKET = "ragkit-test"


@pytest.fixture(scope="module")
def s3(tmp_path_factory):
    """moto's S3 server on loopback, the standard AWS variables pointing at it (skipped, saying why, only
    when moto cannot start)."""
    from tests.s3 import NoServer, moto_s3

    try:
        with moto_s3(tmp_path_factory.mktemp("moto") / "moto.log", BUCKET, tmp_path_factory.mktemp("cache")) as env:
            yield env
    except NoServer as exc:
        pytest.skip(str(exc))


def keys(prefix: str) -> set[str]:
    import boto3

    found = boto3.client("s3").list_objects_v2(Bucket=BUCKET, Prefix=prefix).get("Contents", [])
    return {o["Key"][len(prefix):] for o in found}


def run_objects(names: set[str]) -> set[int]:
    """The runs whose store (``store.<run>-<token>.duckdb``) is in the bucket."""
    return {int(m.group(1)) for n in names if (m := re.fullmatch(r"store\.(\d+)-[0-9a-f]+\.duckdb", n))}


def test_index_query_reindex_on_s3(s3, corpus, tmp_path):
    uri = f"s3://{BUCKET}/handbook"
    fake = FakeEmbedder()
    summary = api.index([corpus], uri, embedder_factory=lambda cfg: fake)
    assert summary.new == 3
    top = keys("handbook/")
    assert "manifest.json" in top and run_objects(top) == {1}
    assert any(k.startswith("lance/chunks.lance/") for k in top)  # LanceDB writes to the bucket itself

    reader = api.open_index(uri, embedder=fake)
    r = api.query(reader, "rollback container image", QueryConfig(k=3, strategy="hybrid"))
    assert r.passages and r.passages[0].path.endswith("deploy.rst") and r.run == 1

    write(corpus, "notes/parking.md", "# Parking\n\nParking badges are handed out at the front desk.\n")
    again = api.index([corpus], uri, embedder_factory=lambda cfg: fake)
    assert again.new == 1 and again.unchanged == 3
    top = keys("handbook/")
    assert run_objects(top) == {2}  # the replaced run's objects are gone
    r = api.query(reader, "parking badges", QueryConfig(k=3, strategy="hybrid"))  # the reader follows run 2
    assert r.run == 2 and r.passages[0].path.endswith("parking.md")


def test_a_second_reader_elsewhere_and_a_killed_run(s3, corpus, tmp_path):
    """A second reader with a mirror of its own (another machine) reads the same runs; a run killed before its
    manifest upload leaves the committed run answering; the next run completes."""
    uri = f"s3://{BUCKET}/killed"
    fake = FakeEmbedder()
    api.index([corpus], uri, embedder_factory=lambda cfg: fake)
    other = {**os.environ, "RAGKIT_CACHE": str(tmp_path / "machine2"), "PYTHONPATH": str(REPO)}
    ask = ("import sys, json; sys.path.insert(0, {repo!r})\nfrom tests.fakes import FakeEmbedder\n"
           "from ragkit import api\nfrom ragkit.config import QueryConfig\n"
           "r = api.query(api.open_index({uri!r}, embedder=FakeEmbedder()), 'planning meeting', QueryConfig(k=3))\n"
           "print(json.dumps({{'run': r.run, 'paths': [p.path for p in r.passages]}}))").format(repo=str(REPO), uri=uri)
    out = json.loads(subprocess.run([sys.executable, "-c", ask], env=other, capture_output=True, text=True,
                                    check=True).stdout)
    assert out["run"] == 1 and any(p.endswith("meeting.txt") for p in out["paths"])

    write(corpus, "notes/meeting.txt", "Meeting notes\n\nThe planning meeting moved to Thursday.\n")
    killed = ("import os, signal, sys; sys.path.insert(0, {repo!r})\nfrom tests.fakes import FakeEmbedder\n"
              "from ragkit import api\nimport ragkit.ingest.pipeline as p\n"
              "p.write_manifest = lambda *a, **k: os.kill(os.getpid(), signal.SIGKILL)\n"
              "api.index([{folder!r}], {uri!r}, embedder_factory=lambda cfg: FakeEmbedder())").format(
        repo=str(REPO), folder=str(corpus), uri=uri)
    done = subprocess.run([sys.executable, "-c", killed], env=dict(os.environ), capture_output=True, text=True)
    assert done.returncode == -9, done.stderr[-2000:]
    assert run_objects(keys("killed/")) == {1, 2}  # run 2's were uploaded, never named by a manifest
    from ragkit.store import check as checker

    problems, facts = checker.check(resolve_index_dir(uri))
    assert problems == [] and any(n.startswith("store.2-") for n in facts["leftovers"])  # noted, never read
    out = json.loads(subprocess.run([sys.executable, "-c", ask], env=other, capture_output=True, text=True,
                                    check=True).stdout)
    assert out["run"] == 1
    summary = api.index([corpus], uri, embedder_factory=lambda cfg: fake)
    assert summary.changed == 1
    out = json.loads(subprocess.run([sys.executable, "-c", ask], env=other, capture_output=True, text=True,
                                    check=True).stdout)
    assert out["run"] == 2
    assert resolve_index_dir(uri) != resolve_index_dir(f"s3://{BUCKET}/handbook")


def test_check_stats_and_eval_on_s3(s3, corpus, tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from ragkit.cli.app import app

    fake = FakeEmbedder()
    monkeypatch.setattr("ragkit.api._default_embedder_factory", lambda cfg: fake)
    monkeypatch.setattr("ragkit.store.reader.load_embedder", lambda spec, *a, **kw: fake)
    runner = CliRunner()
    uri = f"s3://{BUCKET}/cli"
    assert runner.invoke(app, ["index", str(corpus), "--index", uri]).exit_code == 0
    r = runner.invoke(app, ["check", "--index", uri])
    assert r.exit_code == 0 and f"ok {uri}: run 1" in r.output
    st = json.loads(runner.invoke(app, ["stats", "--index", uri, "--json"]).output)
    assert st["index"] == uri and st["documents"] == 3 and st["bytes"]["vectors"] > 0  # LanceDB bytes from the bucket
    ds = tmp_path / "beir"
    write(ds, "corpus.jsonl", "\n".join(json.dumps(d) for d in [
        {"_id": "d1", "title": "Cats", "text": "Cats purr and chase mice."},
        {"_id": "d2", "title": "Dogs", "text": "Dogs bark at the mail carrier."}]) + "\n")
    write(ds, "queries.jsonl", '{"_id": "q1", "text": "which animal purrs"}\n')
    write(ds, "qrels/test.tsv", "query-id\tcorpus-id\tscore\nq1\td1\t1\n")
    r = runner.invoke(app, ["eval", str(ds), "--index", f"s3://{BUCKET}/eval", "--json", "--strategy", "hybrid"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.output)
    assert out["index"] == f"s3://{BUCKET}/eval" and out["results"][0]["recall@10"] == 1.0
    assert "manifest.json" in keys("eval/")


def test_a_writer_on_another_machine_commits_first(s3, corpus, tmp_path, monkeypatch):
    """Two writers of one index on two machines (two mirrors): the one that commits second finds out before its
    manifest upload, commits nothing and says so (exit 9); the first one's run stays whole."""
    from ragkit.errors import IndexBusy
    from ragkit.ingest import pipeline

    uri = f"s3://{BUCKET}/race"
    fake = FakeEmbedder()
    api.index([corpus], uri, embedder_factory=lambda cfg: fake)
    other = {**os.environ, "RAGKIT_CACHE": str(tmp_path / "machine2")}
    script = ("import sys; sys.path.insert(0, {repo!r})\nfrom tests.fakes import FakeEmbedder\nfrom ragkit import api\n"
              "api.index([{folder!r}], {uri!r}, embedder_factory=lambda cfg: FakeEmbedder())").format(
        repo=str(REPO), folder=str(corpus), uri=uri)
    derived = pipeline.write_derived

    def meanwhile(*args, **kwargs):  # while this run commits, the other machine's run commits
        derived(*args, **kwargs)
        write(corpus, "notes/other.md", "# Other\n\nWritten on the other machine.\n")
        subprocess.run([sys.executable, "-c", script], env=other, check=True, capture_output=True)

    write(corpus, "notes/mine.md", "# Mine\n\nWritten here.\n")
    monkeypatch.setattr(pipeline, "write_derived", meanwhile)
    with pytest.raises(IndexBusy, match="another writer committed run 2"):
        api.index([corpus], uri, embedder_factory=lambda cfg: fake)
    monkeypatch.setattr(pipeline, "write_derived", derived)
    reader = api.open_index(uri, embedder=fake)
    assert reader.manifest["last_run"]["id"] == 2 and reader.manifest["counts"]["documents"] == 5  # the other's run
    again = api.index([corpus], uri, embedder_factory=lambda cfg: fake)  # starts from run 2: nothing left to do
    assert again.unchanged == 5 and again.new == 0
