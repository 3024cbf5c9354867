"""Crash safety (issue 16): an indexing run killed with SIGKILL at each step of its commit leaves an index that
`ragkit check` passes and that answers from the last committed run; the next run completes, and the index then
equals a clean `--full` build of the folder. Queries running in a loop while runs commit never fail and always
answer from a committed run. (scripts/crash_test.py kills the real CLI at random times; this test kills at
each commit step, deterministically, with the fake embedder.)"""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path

import ragkit
from ragkit.config import QueryConfig
from ragkit.store import check as checker
from ragkit.store.chunks import open_chunks
from ragkit.store.layout import LANCE_DIR
from ragkit.store.manifest import Manifest
from tests.conftest import REPO, write
from tests.fakes import FakeEmbedder

# a run that kills itself (SIGKILL: no cleanup of any kind) before or after one function of the commit
KILLED_RUN = """
import importlib, os, signal, sys
sys.path.insert(0, {repo!r})
from tests.fakes import FakeEmbedder
import ragkit

module, name, when = {module!r}, {name!r}, {when!r}
owner = importlib.import_module(module)
*path, attr = name.split(".")
for part in path:
    owner = getattr(owner, part)
original = getattr(owner, attr)

def killed(*args, **kwargs):
    if when == "before":
        os.kill(os.getpid(), signal.SIGKILL)
    out = original(*args, **kwargs)
    os.kill(os.getpid(), signal.SIGKILL)

setattr(owner, attr, killed)
ragkit.index([{folder!r}], {index!r}, embedder_factory=lambda cfg: FakeEmbedder())
print("not killed")
"""

STEPS = [  # (module, function, before/after): where in the run the kill lands
    ("ragkit.store.lance_write", "ChunkWriter.finish", "after"),  # a new LanceDB version, nothing else
    ("ragkit.store.knowledge.sql", "refresh", "before"),  # inside the DuckDB transaction
    ("ragkit.ingest.commit", "write_derived", "after"),  # the run's store and graphs written
    ("ragkit.ingest.pipeline", "write_manifest", "before"),  # everything but the commit
    ("ragkit.ingest.pipeline", "write_manifest", "after"),  # committed; the replaced run's files not removed
]
QUERIES = ["overtime limit per week", "rollback container image", "planning meeting", "parking badges"]


def chunk_ids(index_dir: Path, manifest: Manifest | None = None) -> set[str]:
    run = (manifest or ragkit.open(index_dir, embedder=FakeEmbedder()).reader.manifest).last_run
    table = open_chunks(index_dir / LANCE_DIR, run.lance_table, run.lance_version)
    return {r["id"] for r in table.rows("true", limit=1 << 20)}


def change(folder: Path, step: int) -> None:
    """A folder that changes between runs: one file edited, one added, one removed."""
    write(folder, f"added/note{step}.md", f"# Note {step}\n\nParking badges for step {step} are at the desk.\n")
    (folder / "notes/meeting.txt").write_text(f"Meeting notes\n\nThe team moved the planning meeting to day {step}.\n")
    old = folder / f"added/note{step - 2}.md"
    if old.exists():
        old.unlink()


def top10(index_dir: Path) -> list[set[str]]:
    """The top 10 of each query, as sets: equal scores are ordered by where the rows lie, which differs
    between an index built run by run and one built at once (killed or not)."""
    ix = ragkit.open(index_dir, embedder=FakeEmbedder())
    return [{h.chunk_id for h in ix.query(q, QueryConfig(k=10, strategy="hybrid")).hits[:10]} for q in QUERIES]


def test_a_run_killed_at_each_commit_step_leaves_a_whole_index(corpus, tmp_path):
    idx = tmp_path / "idx"
    ragkit.index([corpus], idx, embedder_factory=lambda cfg: FakeEmbedder())
    for step, (module, name, when) in enumerate(STEPS, start=1):
        before = ragkit.open(idx, embedder=FakeEmbedder()).reader.manifest
        ids_before = chunk_ids(idx, before)
        change(corpus, step)
        script = KILLED_RUN.format(
            repo=str(REPO), module=module, name=name, when=when, folder=str(corpus), index=str(idx)
        )
        done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
        assert done.returncode == -9, (name, when, done.stdout, done.stderr[-2000:])

        problems, facts = checker.check(idx)
        assert problems == [], (name, when, problems)
        ix = ragkit.open(idx, embedder=FakeEmbedder())
        committed = name == "write_manifest" and when == "after"
        assert ix.reader.manifest.run_id == before.run_id + committed, (name, when)
        live = chunk_ids(idx, ix.reader.manifest)
        assert (live != ids_before) if committed else (live == ids_before)
        for q in QUERIES:
            result = ix.query(q, QueryConfig(k=5, strategy="auto"))
            assert result.run == ix.reader.manifest.run_id
            assert {c for p in result.passages for c in p.chunk_ids} <= live
        if not committed:
            assert facts["leftovers"] or name == "ChunkWriter.finish", (name, when)  # what the killed run wrote

        summary = ragkit.index([corpus], idx, embedder_factory=lambda cfg: FakeEmbedder())  # the next run
        assert summary.total_chunks > 0 and checker.check(idx) == ([], checker.check(idx)[1])
        assert checker.check(idx)[1]["leftovers"] == []

    clean = tmp_path / "clean"
    ragkit.index([corpus], clean, full=True, embedder_factory=lambda cfg: FakeEmbedder())
    assert chunk_ids(idx) == chunk_ids(clean)
    a, b = ragkit.open(idx, embedder=FakeEmbedder()), ragkit.open(clean, embedder=FakeEmbedder())
    assert a.reader.manifest.counts == b.reader.manifest.counts
    assert top10(idx) == top10(clean)


def test_repair_restores_a_lost_manifest_and_removes_leftovers(corpus, tmp_path):
    from typer.testing import CliRunner

    from ragkit.cli.app import app

    idx = tmp_path / "idx"
    ragkit.index([corpus], idx, embedder_factory=lambda cfg: FakeEmbedder())
    saved = (idx / "manifest.json").read_text()
    (idx / "store.99.duckdb").write_bytes(b"half a store")  # what a killed run left
    (idx / "graph.99").mkdir()
    (idx / "manifest.json").write_text("{ not json")
    runner = CliRunner()
    r = runner.invoke(app, ["check", "--index", str(idx)])
    assert r.exit_code == 7 and "unreadable manifest" in r.output and "check --repair" in r.output
    r = runner.invoke(app, ["check", "--index", str(idx), "--repair"])
    assert r.exit_code == 0, r.output
    assert "went back to run 1" in r.output and "removed what an unfinished run left" in r.output
    assert not (idx / "store.99.duckdb").exists() and not (idx / "graph.99").exists()
    import json

    assert json.loads((idx / "manifest.json").read_text())["last_run"] == json.loads(saved)["last_run"]
    (idx / "manifest.json").unlink()
    assert runner.invoke(app, ["check", "--index", str(idx), "--repair"]).exit_code == 0
    assert ragkit.open(idx, embedder=FakeEmbedder()).query("overtime", QueryConfig(k=3)).passages


def test_queries_while_runs_commit_answer_from_committed_runs(corpus, tmp_path):
    """A reader that follows the index answers every query while three runs commit (in another process),
    each answer from a committed run: its passages are that run's chunks."""
    idx = tmp_path / "idx"
    ragkit.index([corpus], idx, embedder_factory=lambda cfg: FakeEmbedder())
    runs = {1: chunk_ids(idx)}
    answers: list[tuple[int, set[str]]] = []
    failures: list[BaseException] = []
    stop = threading.Event()

    def ask() -> None:
        ix = ragkit.open(idx, embedder=FakeEmbedder())
        n = 0
        while not stop.is_set():
            try:
                result = ix.query(
                    QUERIES[n % len(QUERIES)],
                    QueryConfig(k=5, strategy=("hybrid", "auto", "hippo", "local")[n % 4]),
                )
                answers.append((result.run, {c for p in result.passages for c in p.chunk_ids}))
            except BaseException as exc:  # noqa: BLE001 (every failure counts)
                failures.append(exc)
            n += 1

    asking = threading.Thread(target=ask)
    asking.start()
    try:
        for step in range(1, 4):
            change(corpus, step)
            script = (
                f"import sys; sys.path.insert(0, {str(REPO)!r})\n"
                "from tests.fakes import FakeEmbedder\nimport ragkit\n"
                f"ragkit.index([{str(corpus)!r}], {str(idx)!r}, embedder_factory=lambda cfg: FakeEmbedder())"
            )
            subprocess.run([sys.executable, "-c", script], check=True, timeout=120)
            runs[step + 1] = chunk_ids(idx)
        time.sleep(0.3)
    finally:
        stop.set()
        asking.join(timeout=60)
    assert failures == []
    assert len({run for run, _ in answers}) >= 2 and len(answers) >= 20
    for run, ids in answers:
        assert run in runs and ids <= runs[run], run
