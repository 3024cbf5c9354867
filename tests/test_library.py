"""ragkit as a Python library (issue 53): the README's example run as written, ``ragkit.open()`` finding an index
as the CLI does (from the directory you stand in upwards, else under $RAGKIT_HOME), and settings checked."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest

from tests.conftest import REPO

pytestmark = pytest.mark.integration


def readme_example() -> str:
    text = (REPO / "README.md").read_text()
    section = text.split("### Python: `ragkit.open()`", 1)[1]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


def run(code: str, cwd, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-P", "-c", code],  # -P: the folder it runs in (holding ragkit/samples) is not on the path
        cwd=cwd,
        env={**os.environ, "HF_HUB_OFFLINE": "1", "RAGKIT_HOME": "", **env},
        capture_output=True,
        text=True,
        timeout=900,
    )


@pytest.fixture(scope="module")
def handbook(tmp_path_factory):
    """A folder where the README's example ran as written (its sample path linked in): the index it made."""
    work = tmp_path_factory.mktemp("library")
    (work / "ragkit").mkdir()
    (work / "ragkit" / "samples").symlink_to(REPO / "ragkit" / "samples")
    done = run(readme_example(), work)
    assert done.returncode == 0, done.stderr[-3000:]
    return work, done.stdout


def test_the_readme_example_runs_as_written(handbook):
    work, out = handbook
    lines = out.splitlines()
    assert lines[0] == "handbook/policies/working-time.md Working Time Policy > Overtime > Limits on overtime"
    assert "limited to 10 hours per week" in lines[1]  # the answer quotes the policy
    assert (work / "indexes" / "handbook" / "manifest.json").is_file()
    assert int(lines[-1]) >= 3  # the documents ix.stats() counts


def test_an_index_is_found_from_a_folder_below_and_under_ragkit_home(handbook, tmp_path):
    work, _ = handbook
    below = work / "notes" / "deeper"
    below.mkdir(parents=True)
    code = (
        "import ragkit; ix = ragkit.open('handbook'); print(ix.path); print(ix.query('overtime', k=1).passages[0].path)"
    )
    found = run(code, below)
    assert found.returncode == 0, found.stderr[-2000:]
    assert found.stdout.splitlines()[0] == str(work / "indexes" / "handbook")
    stats = subprocess.run(
        [sys.executable, "-m", "ragkit", "stats", "--index", "handbook", "--json"],
        cwd=below, env={**os.environ, "RAGKIT_HOME": ""}, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert stats.returncode == 0, stats.stderr
    assert json.loads(stats.stdout)["found"] == f"in {work / 'indexes'} (above the current directory)"
    home = tmp_path / "home"
    made = run("import ragkit; print(ragkit.index(['" + str(REPO / "ragkit/samples/handbook") + "'], 'mine').new)",
               tmp_path, RAGKIT_HOME=str(home))  # fmt: skip
    assert made.returncode == 0, made.stderr[-2000:]
    assert (home / "indexes" / "mine" / "manifest.json").is_file() and not (tmp_path / "indexes").exists()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    again = run("import ragkit; print(ragkit.open('mine').stats()['documents'])", elsewhere, RAGKIT_HOME=str(home))
    assert again.returncode == 0 and int(again.stdout) >= 3, again.stderr[-2000:]
    missing = run("import ragkit; ragkit.open('mine')", elsewhere)  # without $RAGKIT_HOME: not there
    assert missing.returncode != 0 and "IndexNotFound" in missing.stderr


def test_settings_and_ratings_are_checked(handbook):
    work, _ = handbook
    code = """
import ragkit
from ragkit.errors import BadQuery
ix = ragkit.open("handbook")
for call in (lambda: ix.query("overtime", top=3), lambda: ix.feedback("q", rank=1),
             lambda: ragkit.index([], "handbook", chunk_size=3)):
    try:
        call()
    except BadQuery as exc:
        print(type(exc).__name__, exc)
print(ix.query("overtime", k=2, strategy="lexical").strategy, len(ix.query("overtime", k=2).passages))
"""
    done = run(code, work)
    assert done.returncode == 0, done.stderr[-2000:]
    lines = done.stdout.splitlines()
    assert lines[0] == "BadQuery unknown query setting: top"
    assert lines[1].startswith("BadQuery say good=True")
    assert lines[2].startswith("BadQuery unknown index setting: chunk_size")
    assert lines[3] == "lexical 2"


def test_an_answer_that_cannot_be_written_says_why_and_keeps_its_passages(handbook, tmp_path):
    """``ix.answer()`` returns one typed result: the passages stand, ``.error`` is the typed error (a generate
    model that is not there), and ``.text`` raises it; the same call with the quoting answer has its text."""
    work, _ = handbook
    code = f"""
import ragkit
from ragkit.errors import ModelUnavailable
with ragkit.open("handbook") as ix:
    failed = ix.answer("how are overtime hours limited?", answer_mode="generate", model="{tmp_path / "gone.gguf"}")
    print(type(failed.error).__name__, failed.answer is None, len(failed.passages) > 0)
    try:
        failed.text
    except ModelUnavailable as exc:
        print("raised", type(exc).__name__)
    print(ix.answer("how are overtime hours limited?").text)
print(ix.closed)
try:
    ix.query("overtime")
except Exception as exc:
    print(type(exc).__name__)
"""
    done = run(code, work)
    assert done.returncode == 0, done.stderr[-2000:]
    lines = done.stdout.splitlines()
    assert lines[0] == "ModelUnavailable True True"
    assert lines[1] == "raised ModelUnavailable"
    assert "10 hours per week" in lines[2]
    assert lines[3:] == ["True", "BadQuery"]


def test_an_index_with_a_handed_in_embedder_adds_documents_with_it(corpus, index_with, fake, tmp_path):
    """``ix.add`` writes the new chunks' vectors with the embedder handed in (the settings' model would be another
    one, refused by the index); ``close()`` lets the reader go at once."""
    import ragkit

    _, built = index_with(corpus)
    ix = ragkit.open(built.path, embedder=fake)
    more = tmp_path / "more"
    more.mkdir()
    (more / "parking.md").write_text("# Parking\n\nStaff park in the north garage; visitors use level 2.\n")
    summary = ix.add([corpus, more])
    assert summary.new == 1 and ix.query("where do visitors park?", k=1).passages[0].path.endswith("parking.md")
    reader = ix.reader
    ix.close()
    assert ix.closed and not reader.__dict__
