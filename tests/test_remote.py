"""Indexes on object storage (issue 17) against a real S3 API: moto's server on a free loopback port. Index,
incremental re-index, query, a killed run, two readers; the manifest upload commits a run."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest

import ragkit
from ragkit.config import QueryConfig, resolve_index_dir
from tests.conftest import REPO, write
from tests.fakes import FakeEmbedder
from tests.s3 import BUCKET


def keys(prefix: str) -> set[str]:
    import boto3

    found = boto3.client("s3").list_objects_v2(Bucket=BUCKET, Prefix=prefix).get("Contents", [])
    return {o["Key"][len(prefix) :] for o in found}


def run_objects(names: set[str]) -> set[int]:
    """The runs whose store (``store.<run>-<token>.duckdb``) is in the bucket."""
    return {int(m.group(1)) for n in names if (m := re.fullmatch(r"store\.(\d+)-[0-9a-f]+\.duckdb", n))}


def test_index_query_reindex_on_s3(s3, corpus, tmp_path):
    uri = f"s3://{BUCKET}/handbook"
    fake = FakeEmbedder()
    summary = ragkit.index([corpus], uri, embedder_factory=lambda cfg: fake)
    assert summary.new == 3
    top = keys("handbook/")
    assert "manifest.json" in top and run_objects(top) == {1}
    assert any(k.startswith("lance/chunks.lance/") for k in top)  # LanceDB writes to the bucket itself

    ix = ragkit.open(uri, embedder=fake)
    r = ix.query("rollback container image", QueryConfig(k=3, strategy="hybrid"))
    assert r.passages and r.passages[0].path.endswith("deploy.rst") and r.run == 1

    write(corpus, "notes/parking.md", "# Parking\n\nParking badges are handed out at the front desk.\n")
    again = ragkit.index([corpus], uri, embedder_factory=lambda cfg: fake)
    assert again.new == 1 and again.unchanged == 3
    top = keys("handbook/")
    assert run_objects(top) == {2}  # the replaced run's objects are gone
    r = ix.query("parking badges", QueryConfig(k=3, strategy="hybrid"))  # the index follows run 2
    assert r.run == 2 and r.passages[0].path.endswith("parking.md")


def test_a_second_reader_elsewhere_and_a_killed_run(s3, corpus, tmp_path):
    """A second reader with a mirror of its own (another machine) reads the same runs; a run killed before its
    manifest upload leaves the committed run answering; the next run completes."""
    uri = f"s3://{BUCKET}/killed"
    fake = FakeEmbedder()
    ragkit.index([corpus], uri, embedder_factory=lambda cfg: fake)
    other = {**os.environ, "RAGKIT_CACHE": str(tmp_path / "machine2"), "PYTHONPATH": str(REPO)}
    ask = (
        f"import sys, json; sys.path.insert(0, {str(REPO)!r})\nfrom tests.fakes import FakeEmbedder\n"
        "import ragkit\nfrom ragkit.config import QueryConfig\n"
        f"r = ragkit.open({uri!r}, embedder=FakeEmbedder()).query('planning meeting', QueryConfig(k=3))\n"
        "print(json.dumps({'run': r.run, 'paths': [p.path for p in r.passages]}))"
    )
    out = json.loads(
        subprocess.run([sys.executable, "-c", ask], env=other, capture_output=True, text=True, check=True).stdout
    )
    assert out["run"] == 1 and any(p.endswith("meeting.txt") for p in out["paths"])

    write(corpus, "notes/meeting.txt", "Meeting notes\n\nThe planning meeting moved to Thursday.\n")
    killed = (
        f"import os, signal, sys; sys.path.insert(0, {str(REPO)!r})\nfrom tests.fakes import FakeEmbedder\n"
        "import ragkit\nimport ragkit.ingest.pipeline as p\n"
        "p.write_manifest = lambda *a, **k: os.kill(os.getpid(), signal.SIGKILL)\n"
        f"ragkit.index([{str(corpus)!r}], {uri!r}, embedder_factory=lambda cfg: FakeEmbedder())"
    )
    done = subprocess.run([sys.executable, "-c", killed], env=dict(os.environ), capture_output=True, text=True)
    assert done.returncode == -9, done.stderr[-2000:]
    assert run_objects(keys("killed/")) == {1, 2}  # run 2's were uploaded, never named by a manifest
    from ragkit.store import check as checker

    problems, facts = checker.check(resolve_index_dir(uri))
    assert problems == [] and any(n.startswith("store.2-") for n in facts["leftovers"])  # noted, never read
    from typer.testing import CliRunner

    from ragkit.cli.app import app

    repaired = CliRunner().invoke(app, ["check", "--repair", "--index", uri])  # takes the killed run's lease over
    assert repaired.exit_code == 0 and "removed what an unfinished run left" in repaired.output
    assert run_objects(keys("killed/")) == {1} and "writer.lease" not in keys("killed/")
    out = json.loads(
        subprocess.run([sys.executable, "-c", ask], env=other, capture_output=True, text=True, check=True).stdout
    )
    assert out["run"] == 1
    summary = ragkit.index([corpus], uri, embedder_factory=lambda cfg: fake)
    assert summary.changed == 1
    out = json.loads(
        subprocess.run([sys.executable, "-c", ask], env=other, capture_output=True, text=True, check=True).stdout
    )
    assert out["run"] == 2
    assert resolve_index_dir(uri) != resolve_index_dir(f"s3://{BUCKET}/handbook")


def test_check_stats_and_eval_on_s3(s3, corpus, tmp_path):
    from typer.testing import CliRunner

    from ragkit.cli.app import app
    from ragkit.library import Models

    fake = FakeEmbedder()
    models = Models(embedder=fake)  # handed to the CLI (the context object): it indexes and asks with it
    runner = CliRunner()
    uri = f"s3://{BUCKET}/cli"
    assert runner.invoke(app, ["index", str(corpus), "--index", uri], obj=models).exit_code == 0
    r = runner.invoke(app, ["check", "--index", uri], obj=models)
    assert r.exit_code == 0 and f"ok {uri}: run 1" in r.output
    st = json.loads(runner.invoke(app, ["stats", "--index", uri, "--json"], obj=models).output)
    assert st["index"] == uri and st["documents"] == 3 and st["bytes"]["vectors"] > 0  # LanceDB bytes from the bucket
    ds = tmp_path / "beir"
    write(
        ds,
        "corpus.jsonl",
        "\n".join(
            json.dumps(d)
            for d in [
                {"_id": "d1", "title": "Cats", "text": "Cats purr and chase mice."},
                {"_id": "d2", "title": "Dogs", "text": "Dogs bark at the mail carrier."},
            ]
        )
        + "\n",
    )
    write(ds, "queries.jsonl", '{"_id": "q1", "text": "which animal purrs"}\n')
    write(ds, "qrels/test.tsv", "query-id\tcorpus-id\tscore\nq1\td1\t1\n")
    r = runner.invoke(
        app, ["eval", str(ds), "--index", f"s3://{BUCKET}/eval", "--json", "--strategy", "hybrid"], obj=models
    )
    assert r.exit_code == 0, r.output
    out = json.loads(r.output)
    assert out["index"] == f"s3://{BUCKET}/eval" and out["results"][0]["recall@10"] == 1.0
    assert "manifest.json" in keys("eval/")


def other_machine(tmp_path, uri: str, folder, **index_kwargs) -> str:
    """A script indexing ``folder`` into ``uri`` as another machine would (a mirror of its own)."""
    return (
        f"import sys; sys.path.insert(0, {str(REPO)!r})\nfrom tests.fakes import FakeEmbedder\nimport ragkit\n"
        "import ragkit.store.lease as lease\nlease.POLL = 0.2\n"
        f"s = ragkit.index([{str(folder)!r}], {uri!r}, embedder_factory=lambda cfg: FakeEmbedder(), **{index_kwargs!r})\n"
        "print(s.new, s.unchanged)"
    )


def test_writers_on_two_machines_take_turns(s3, corpus, tmp_path):
    """A writer on another machine finds the lease held: without waiting it stops at once naming the holder
    (exit 9); waiting, it starts when the lease is given back, from the newest run."""
    from ragkit.store import remote

    uri = f"s3://{BUCKET}/turns"
    fake = FakeEmbedder()
    ragkit.index([corpus], uri, embedder_factory=lambda cfg: fake)
    other = {**os.environ, "RAGKIT_CACHE": str(tmp_path / "machine2")}
    write(corpus, "notes/other.md", "# Other\n\nWritten on the other machine.\n")
    with remote.writing(resolve_index_dir(uri)) as bucket:  # this machine holds the lease
        assert "writer.lease" in keys("turns/")
        busy = subprocess.run(
            [sys.executable, "-c", other_machine(tmp_path, uri, corpus)], env=other, capture_output=True, text=True
        )
        assert busy.returncode != 0 and "IndexBusy" in busy.stderr and f"pid {os.getpid()}" in busy.stderr
        waiting = subprocess.Popen(
            [sys.executable, "-c", other_machine(tmp_path, uri, corpus, wait=True)],
            env=other,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        with pytest.raises(subprocess.TimeoutExpired):
            waiting.wait(timeout=3)  # it waits for the lease
        assert bucket.lease.lost is None
    out, err = waiting.communicate(timeout=120)
    assert waiting.returncode == 0, err[-2000:]
    assert out.split() == ["1", "3"]  # it started from run 1: one new file
    assert "writer.lease" not in keys("turns/")  # given back
    assert ragkit.open(uri, embedder=fake).reader.manifest.run_id == 2


def test_a_run_that_lost_its_lease_commits_nothing(s3, corpus, tmp_path, monkeypatch):
    """A run that stalls past the lease's time loses it to a writer on another machine, which commits; the
    stalled run finds out before its next write and commits nothing (exit 9); the other run stays whole."""
    import time

    from ragkit.errors import IndexBusy
    from ragkit.ingest import commit as pipeline  # (the run is staged there: ingest/commit.py)
    from ragkit.store import lease

    uri = f"s3://{BUCKET}/lost"
    fake = FakeEmbedder()
    ragkit.index([corpus], uri, embedder_factory=lambda cfg: fake)
    other = {**os.environ, "RAGKIT_CACHE": str(tmp_path / "machine2")}
    taking_over = other_machine(tmp_path, uri, corpus).replace("lease.POLL = 0.2", "lease.TTL, lease.RENEW = 2, 0.2")
    derived = pipeline.write_derived

    def stall(*args, **kwargs):  # this run stops renewing; the other machine takes the lease over and commits
        derived(*args, **kwargs)
        time.sleep(3.5)
        write(corpus, "notes/other.md", "# Other\n\nWritten on the other machine.\n")
        done = subprocess.run([sys.executable, "-c", taking_over], env=other, capture_output=True, text=True)
        assert done.returncode == 0, done.stderr[-3000:]

    write(corpus, "notes/mine.md", "# Mine\n\nWritten here.\n")
    monkeypatch.setattr(lease, "RENEW", 3600)  # this run stops renewing its lease
    monkeypatch.setattr(lease, "TTL", 2)
    monkeypatch.setattr(pipeline, "write_derived", stall)
    with pytest.raises(IndexBusy, match="another writer took over its lease"):
        ragkit.index([corpus], uri, embedder_factory=lambda cfg: fake)
    monkeypatch.setattr(pipeline, "write_derived", derived)
    ix = ragkit.open(uri, embedder=fake)
    assert ix.reader.manifest.run_id == 2 and ix.reader.manifest.counts.documents == 5  # the other's run
    r = ix.query("written on the other machine", QueryConfig(k=2, strategy="lexical"))
    assert r.passages[0].path.endswith("other.md")
    from ragkit.store import check as checker

    assert checker.check(resolve_index_dir(uri))[0] == []
    again = ragkit.index([corpus], uri, embedder_factory=lambda cfg: fake)  # starts from run 2: nothing left to do
    assert again.unchanged == 5 and again.new == 0


def test_an_index_in_an_older_format_on_s3_is_rebuilt(s3, corpus, tmp_path):
    import boto3

    from ragkit.store.manifest import FORMAT_VERSION

    uri = f"s3://{BUCKET}/old"
    fake = FakeEmbedder()
    ragkit.index([corpus], uri, embedder_factory=lambda cfg: fake)
    s3c = boto3.client("s3")
    data = json.loads(s3c.get_object(Bucket=BUCKET, Key="old/manifest.json")["Body"].read())
    s3c.put_object(Bucket=BUCKET, Key="old/manifest.json", Body=json.dumps({**data, "format_version": 1}).encode())
    summary = ragkit.index([corpus], uri, embedder_factory=lambda cfg: fake)
    assert summary.new == 3 and any("rebuilding" in w for w in summary.warnings)
    ix = ragkit.open(uri, embedder=fake)
    assert ix.reader.manifest.format_version == FORMAT_VERSION and run_objects(keys("old/")) == {1}  # a new index
    assert ix.query("rollback container image", QueryConfig(k=1)).passages[0].path.endswith("deploy.rst")


def test_the_commit_is_conditional_on_the_manifest_the_run_started_from(s3, corpus, tmp_path, monkeypatch):
    """Were the manifest replaced behind the lease's back, the commit (an upload with If-Match) fails and
    commits nothing; the manifest in the bucket stays the one that replaced it."""
    import boto3

    from ragkit.errors import IndexBusy
    from ragkit.ingest import commit as pipeline  # (the run is staged there: ingest/commit.py)
    from ragkit.store.lease import Lease

    uri = f"s3://{BUCKET}/cas"
    fake = FakeEmbedder()
    ragkit.index([corpus], uri, embedder_factory=lambda cfg: fake)
    s3c = boto3.client("s3")
    committed = s3c.get_object(Bucket=BUCKET, Key="cas/manifest.json")["Body"].read()
    derived = pipeline.write_derived

    def replaced(*args, **kwargs):
        derived(*args, **kwargs)
        s3c.put_object(Bucket=BUCKET, Key="cas/manifest.json", Body=committed + b"\n")  # same run, new ETag

    write(corpus, "notes/mine.md", "# Mine\n\nWritten here.\n")
    monkeypatch.setattr(Lease, "confirm", lambda self: None)
    monkeypatch.setattr(pipeline, "write_derived", replaced)
    with pytest.raises(IndexBusy, match="another writer committed a run"):
        ragkit.index([corpus], uri, embedder_factory=lambda cfg: fake)
    assert s3c.get_object(Bucket=BUCKET, Key="cas/manifest.json")["Body"].read() == committed + b"\n"
