"""CLI through typer's CliRunner (fake embedder) and through real subprocesses."""

import json
import os
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from ragkit.cli.app import app
from ragkit.library import Models
from tests.conftest import write
from tests.fakes import FakeEmbedder

runner = CliRunner()


@pytest.fixture
def fake_models():
    """The fake embedder handed to the CLI (click's context object): every command indexes and asks with it."""
    return Models(embedder=FakeEmbedder())


def test_index_query_stats_with_runner(corpus, tmp_path, fake_models):
    idx = str(tmp_path / "idx")
    r = runner.invoke(app, ["index", str(corpus), "--index", idx], obj=fake_models)
    assert r.exit_code == 0, r.output
    assert "new 3" in r.output
    r = runner.invoke(app, ["index", str(corpus), "--index", idx, "--json"], obj=fake_models)
    summary = json.loads(r.output)
    assert summary["unchanged"] == 3 and summary["new"] == 0

    r = runner.invoke(app, ["query", "rollback container", "--index", idx, "-k", "2"], obj=fake_models)
    assert r.exit_code == 0, r.output
    assert "deploy.rst" in r.output and "Deployment > Rollbacks" in r.output

    r = runner.invoke(
        app,
        ["query", "overtime", "--index", idx, "--json", "--strategy", "lexical", "--filter", "doc_type=policy"],
        obj=fake_models,
    )
    d = json.loads(r.output)
    assert d["schema"] == "ragkit.query/1" and d["strategy"] == "lexical"
    assert {p["document"]["path"] for p in d["passages"]} == {"docs/policies/overtime.md"}

    r = runner.invoke(app, ["query", "overtime", "--index", idx, "--jsonl", "-k", "2"], obj=fake_models)
    lines = [json.loads(x) for x in r.output.splitlines()]
    assert len(lines) == 2 and all(x["query"] == "overtime" for x in lines)

    r = runner.invoke(app, ["query", "-", "--index", idx, "--jsonl"], input="overtime\nrollback\n\n", obj=fake_models)
    objs = [json.loads(x) for x in r.output.splitlines()]
    assert [o["query"] for o in objs] == ["overtime", "rollback"]

    r = runner.invoke(app, ["stats", "--index", idx, "--json"], obj=fake_models)
    st = json.loads(r.output)
    assert st["documents"] == 3 and st["embedder"]["name"] == "fake"
    r = runner.invoke(app, ["stats", "--index", idx], obj=fake_models)
    assert "documents" in r.output and r.exit_code == 0


def test_bad_filter_and_strategy_exit_codes(corpus, tmp_path, fake_models):
    idx = str(tmp_path / "idx")
    runner.invoke(app, ["index", str(corpus), "--index", idx], obj=fake_models)
    r = runner.invoke(app, ["query", "x", "--index", idx, "--filter", "oops"], obj=fake_models)
    assert r.exit_code == 6 and "bad filter" in r.output
    r = runner.invoke(app, ["query", "x", "--index", idx, "--strategy", "magic"], obj=fake_models)
    assert r.exit_code == 6 and "unknown strategy" in r.output


def test_eval_with_runner(tmp_path, fake_models):
    ds = tmp_path / "beir"
    write(
        ds,
        "corpus.jsonl",
        "\n".join(
            json.dumps(d)
            for d in [
                {"_id": "d1", "title": "Cats", "text": "Cats purr and chase mice."},
                {"_id": "d2", "title": "Dogs", "text": "Dogs bark at the mail carrier."},
                {"_id": "d3", "title": "Fish", "text": "Fish swim in cold water."},
            ]
        )
        + "\n",
    )
    write(
        ds,
        "queries.jsonl",
        '{"_id": "q1", "text": "which animal purrs"}\n{"_id": "q2", "text": "dogs bark"}\n'
        '{"_id": "q3", "text": "unjudged"}\n',
    )
    write(ds, "qrels/test.tsv", "query-id\tcorpus-id\tscore\nq1\td1\t1\nq2\td2\t1\n")
    r = runner.invoke(app, ["eval", str(ds), "--index", str(tmp_path / "ei"), "--json", "--k", "10"], obj=fake_models)
    assert r.exit_code == 0, r.output
    res = json.loads(r.output)
    assert res["queries"] == 2 and res["documents"] == 3
    assert [x["strategy"] for x in res["results"]] == ["naive", "lexical", "hybrid"]
    lex = res["results"][1]
    assert lex["recall@2"] == 1.0 and lex["mrr@10"] == 1.0
    r = runner.invoke(app, ["eval", str(ds), "--index", str(tmp_path / "ei")], env={"COLUMNS": "200"}, obj=fake_models)
    assert r.exit_code == 0 and "nDCG@10" in r.output and "hybrid" in r.output
    r = runner.invoke(app, ["eval", str(tmp_path), "--index", str(tmp_path / "ei")], obj=fake_models)
    assert r.exit_code == 8 and "not a BEIR dataset" in r.output


# ---------------------------------------------------------------- real subprocesses


def ragkit(*args, cwd, input=None):
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "NO_COLOR": "1", "COLUMNS": "120"}
    return subprocess.run(
        [sys.executable, "-m", "ragkit", *args],
        cwd=cwd,
        input=input,
        text=True,
        capture_output=True,
        env=env,
        timeout=600,
    )


def test_subprocess_missing_path(tmp_path):
    r = ragkit("index", str(tmp_path / "missing"), cwd=tmp_path)
    assert r.returncode == 2
    assert "error: path not found" in r.stderr and "Traceback" not in r.stderr
    assert len([ln for ln in r.stderr.splitlines() if ln.startswith("error")]) == 1


def test_subprocess_empty_folder(tmp_path):
    (tmp_path / "empty").mkdir()
    r = ragkit("index", "empty", cwd=tmp_path)
    assert r.returncode == 2 and "nothing indexable" in r.stderr and "Traceback" not in r.stderr


def test_subprocess_missing_index(tmp_path):
    r = ragkit("query", "anything", "--index", "nowhere", cwd=tmp_path)
    assert r.returncode == 3 and "no index at indexes/nowhere" in r.stderr and "Traceback" not in r.stderr
    r = ragkit("stats", cwd=tmp_path)
    assert r.returncode == 3


def test_subprocess_debug_shows_traceback(tmp_path):
    r = ragkit("--debug", "query", "anything", "--index", str(tmp_path / "none"), cwd=tmp_path)
    assert r.returncode != 0 and "Traceback" in r.stderr


def test_subprocess_help_and_version(tmp_path):
    r = ragkit("--help", cwd=tmp_path)
    assert r.returncode == 0 and "index" in r.stdout and "query" in r.stdout and "eval" in r.stdout
    r = ragkit("--version", cwd=tmp_path)
    assert r.stdout.startswith("ragkit ")


def test_context_output(corpus, tmp_path, fake_models):
    idx = str(tmp_path / "idx")
    runner.invoke(app, ["index", str(corpus), "--index", idx], obj=fake_models)
    r = runner.invoke(app, ["query", "overtime", "--index", idx, "--context", "-k", "3"], obj=fake_models)
    assert r.exit_code == 0 and r.output.startswith("--- Source: Overtime Policy > ")
    r = runner.invoke(
        app, ["query", "overtime", "--index", idx, "--context", "--json", "--context-budget", "30"], obj=fake_models
    )
    ctx = json.loads(r.output)["packed_context"]
    assert ctx["budget"] == 30 and ctx["tokens"] <= 30 and ctx["dropped"]


def test_query_input_matrix(corpus, tmp_path, fake_models):
    """Odd query input (issue 16): each is a clear error with the documented exit code, or a sensible result."""
    idx = str(tmp_path / "idx")
    runner.invoke(app, ["index", str(corpus), "--index", idx], obj=fake_models)

    def ask(*args):
        r = runner.invoke(app, ["query", "--index", idx, "--json", *args], obj=fake_models)
        return r.exit_code, r.output

    code, out = ask("")
    assert code == 6 and "empty query" in out.lower()
    code, out = ask("   ")
    assert code == 6
    code, out = ask("the and of is")  # only stop words: still answered (dense search needs no keyword)
    assert code == 0 and json.loads(out)["passages"]
    code, out = ask("--", "-overtime")  # only an excluded term
    assert code == 6 and "only excluded terms" in out
    code, out = ask("overtime " * 2_500)  # 20,000 characters
    assert code == 0 and json.loads(out)["passages"]
    code, out = ask("overtime", "--strategy", "magic")
    assert code == 6 and "unknown strategy" in out
    code, out = ask("overtime", "--filter", "doc_type")  # no "="
    assert code == 6 and "bad filter" in out
    code, out = ask("overtime", "--filter", "colour=blue")  # unknown key: nothing matches
    assert code == 0 and json.loads(out)["passages"] == []
    code, out = ask("overtime", "--filter", "date_from=last tuesday")
    assert code == 6 and "date" in out
