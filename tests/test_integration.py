"""Real bundled model (all-MiniLM-L6-v2) on small data, in process and as a subprocess."""

import json
import os
import shutil
import signal
import sys

import pexpect
import pytest

from ragkit import library
from ragkit.config import QueryConfig
from ragkit.ingest.discover import discover, stable_id
from ragkit.ingest.parse import parse_markdown
from ragkit.ingest.sections import build_sections
from tests.conftest import SAMPLES, SHARED_DATA, needs_shared
from tests.test_cli import ragkit

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def sample_index(tmp_path_factory):
    idx = tmp_path_factory.mktemp("real") / "idx"
    summary = library.index([SAMPLES], idx)
    return summary, library.open(idx)


def test_expected_passage_first(sample_index):
    summary, ix = sample_index
    assert summary.new == 5 and summary.skipped == 0
    for strategy in ("naive", "lexical", "hybrid"):
        r = ix.query("how are overtime hours limited?", QueryConfig(strategy=strategy, k=3))
        top = r.passages[0]
        assert top.path.endswith("policies/working-time.md"), strategy
        assert top.section == "Working Time Policy > Overtime > Limits on overtime", strategy
        assert "10 hours per week" in top.text
    r = ix.query("what happens when a release breaks production", QueryConfig(k=3))
    assert {p.path.split("/")[-1] for p in r.passages[:2]} == {"deployment.rst", "incident-response.html"}
    assert "Deployment Guide > Release process > Rollbacks" in [p.section for p in r.passages]


def test_real_embedder_properties(sample_index):
    _, ix = sample_index
    emb = ix.reader.embedder
    assert emb.dimension == 384 and emb.max_tokens == 256
    v = emb.encode(["overtime limits", "rest periods"])
    assert v.shape == (2, 384)
    assert abs(float((v[0] ** 2).sum()) - 1.0) < 1e-4
    with ix.reader.duck() as store:
        n = store.con.execute("SELECT max(token_count) FROM chunks").fetchone()[0]
    assert n <= 240


def test_subprocess_index_query_with_binary_file(tmp_path):
    docs = tmp_path / "docs"
    shutil.copytree(SAMPLES, docs)
    (docs / "logo.txt").write_bytes(b"\x89PNG\x00\x00\x00binary")
    r = ragkit("index", "docs", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "warning: skipped docs/logo.txt: binary file" in r.stderr
    assert "skipped 1" in r.stdout
    r = ragkit("query", "--json", "how are overtime hours limited?", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    assert d["passages"][0]["section"] == "Working Time Policy > Overtime > Limits on overtime"
    assert d["passages"][0]["document"]["path"] == "docs/policies/working-time.md"
    r = ragkit("query", "--jsonl", "-", cwd=tmp_path, input="rollback\nsecurity of company data\n")
    objs = [json.loads(x) for x in r.stdout.splitlines()]
    assert len(objs) == 2 and objs[1]["passages"][0]["section"] == "Remote Work Policy > Security"
    # the index was built by another model (as if the embedder package had changed)
    manifest = tmp_path / "indexes/default/manifest.json"
    m = json.loads(manifest.read_text())
    m["embedder"]["fingerprint"] = "0000000000000000"
    manifest.write_text(json.dumps(m))
    r = ragkit("query", "overtime", cwd=tmp_path)
    assert r.returncode == 4 and "error:" in r.stderr and "Traceback" not in r.stderr


@needs_shared("rust-book")
def test_rust_book_section_tree():
    files = discover([SHARED_DATA / "rust-book" / "src"], ["*.md"], [])
    headings = 0
    for f in files:
        raw = parse_markdown(f.path.read_text())
        secs, _ = build_sections(raw, "d", f.path.stem, stable_id)
        headings += len(secs) - 1 + (secs[0].heading != f.path.stem)
        assert all(s.line_start <= s.line_end for s in secs)
    assert len(files) == 112
    assert headings >= 500  # the book has 531 headings (some H1s are folded into the root)


def _default_sigint() -> None:
    """A shell without job control starts background jobs with SIGINT ignored, and children inherit that:
    the session must get Ctrl-C as a terminal user does."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_interactive_session_in_a_pseudo_terminal(sample_index):
    """The real session on a terminal: warm queries, commands, quoted and written answers, Ctrl-C cancels the
    written answer, Ctrl-D leaves."""
    _, ix = sample_index
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "NO_COLOR": "1", "COLUMNS": "200", "TERM": "dumb"}
    child = pexpect.spawn(
        sys.executable,
        ["-m", "ragkit", "query", "--index", str(ix.path), "--temperature", "0"],
        env=env,
        encoding="utf-8",
        timeout=120,
        dimensions=(50, 200),  # (a worker's longer temporary path must not wrap the banner)
        preexec_fn=_default_sigint,
    )
    try:
        child.expect("Ctrl-D to leave")
        child.expect("ragkit> ")
        child.sendline("how are overtime hours limited?")
        child.expect("overtime")
        child.expect("ragkit> ")
        child.sendline(":k 1")
        child.expect("k 1")
        child.expect("ragkit> ")
        child.sendline(":answer on")
        child.expect("answer auto")
        child.expect("ragkit> ")
        child.sendline("how are overtime hours limited?")
        child.expect("“[^”]*[Oo]vertime[^”]*” \\[1\\]")  # no model asked: quoted from the passages
        child.expect("ragkit> ")
        child.sendline(":answer generate")
        child.expect("answer generate")
        child.expect("ragkit> ")
        child.sendline("how are overtime hours limited?")
        child.expect_exact("According to [")  # the answer's forced first words (sent before the model runs) ...
        child.expect(r"\d+\], overtime hours")  # ... then what only the model writes: a source number and words
        child.expect(r"gemma-3-270m-q4_k_m\.gguf · \d+ prompt \+ [1-9]\d* answer tokens")
        child.expect("ragkit> ")
        child.sendline("what must remote workers do to keep company data secure?")
        child.expect_exact("According to [")  # the model starts reading the new sources ...
        child.sendintr()  # ... and Ctrl-C stops the answer, not the session
        child.expect("cancelled")
        child.expect("ragkit> ")
        child.sendline(":answer off")
        child.expect("answer off")
        child.expect("ragkit> ")
        for _ in range(20):  # Ctrl-D; a ^D that lands before the prompt switched the terminal to raw mode is lost
            child.sendeof()
            if child.expect([pexpect.EOF, pexpect.TIMEOUT], timeout=3) == 0:
                break
    finally:
        child.close()
    assert child.exitstatus == 0
    assert "how are overtime hours limited?" in (ix.path / ".query_history").read_text()
