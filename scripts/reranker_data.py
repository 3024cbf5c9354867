"""The reranker's own training questions (issue 51): which federal laws they are written over, and checks that
every written answer stands verbatim in its section.

    python scripts/reranker_data.py draw            # the 300 laws, drawn once (seed 51) -> reranker_data/laws.json
    python scripts/reranker_data.py check           # every question's answer verbatim in its law's section / page

German questions are written over laws of bundestag/gesetze (``fetch`` it; the commit is recorded) other than the
eight of ``../shared/data/german-laws``; Swedish ones over the pages of SweQUAD-MC's fit half (the held-out half's
pages stay out of training). Written by people (sessions), never from ragkit's output.
"""

from __future__ import annotations

import json
import random
import re
import subprocess
from pathlib import Path

import typer

HERE = Path(__file__).resolve().parent
DATA = HERE / "reranker_data"
ROOT = HERE.parent
SHARED = ROOT.parent / "shared" / "data"
GESETZE = Path("/work/.mirror/bundestag+gesetze/repo")
EXCLUDED = {"agg", "arbzg", "bdsg_2018", "betrvg", "gg", "ifg", "kschg", "tzbfg"}  # ../shared/data/german-laws
SEED = 51
MIN_CHARS = 4000  # a law with room for three questions in different sections
MIN_SECTIONS = 5

app = typer.Typer(add_completion=False, help=__doc__)


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout


def law_text(path: str, repo: Path = GESETZE, commit: str = "HEAD") -> str:
    return _git(repo, "show", f"{commit}:{path}")


def sections(text: str) -> list[tuple[str, str]]:
    """(heading, body) of each ``#``-heading of a law's Markdown, front matter left out."""
    text = re.sub(r"\A---\n.*?\n---\n", "", text, flags=re.S)
    out: list[tuple[str, str]] = []
    heading, body = "", []
    for line in text.splitlines():
        if line.startswith("#"):
            out.append((heading, "\n".join(body)))
            heading, body = line.lstrip("#").strip(), []
        else:
            body.append(line)
    out.append((heading, "\n".join(body)))
    return [(h, b) for h, b in out if h]


def norm(text: str) -> str:
    return " ".join(text.split())


@app.command()
def draw(repo: Path = GESETZE, n: int = 300, seed: int = SEED, out: Path = DATA / "laws.json") -> None:
    """Draw ``n`` laws at random (fixed seed) among those with at least MIN_CHARS of text in MIN_SECTIONS
    sections, leaving out the eight of german-laws."""
    commit = _git(repo, "rev-parse", "HEAD").strip()
    paths = sorted(p for p in _git(repo, "ls-tree", "-r", "--name-only", commit).split() if p.endswith("/index.md"))
    eligible = []
    for p in paths:
        slug = p.split("/")[-2]
        if slug in EXCLUDED:
            continue
        secs = [(h, b) for h, b in sections(law_text(p, repo, commit)) if len(norm(b)) > 80]
        if len(secs) >= MIN_SECTIONS and sum(len(norm(b)) for _, b in secs) >= MIN_CHARS:
            eligible.append(p)
    random.Random(seed).shuffle(eligible)
    chosen = sorted(eligible[:n])
    titles = {}
    for p in chosen:
        m = re.search(r"^Title: (.*)$", law_text(p, repo, commit), re.M)
        titles[p] = m.group(1).strip() if m else p
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(
        json.dumps(
            {"repo": "bundestag/gesetze", "commit": commit, "seed": seed, "eligible": len(eligible),
             "rule": f">= {MIN_SECTIONS} sections of > 80 characters, >= {MIN_CHARS} characters, not {sorted(EXCLUDED)}",
             "laws": [{"path": p, "title": titles[p]} for p in chosen]},
            ensure_ascii=False, indent=1,
        ) + "\n"
    )  # fmt: skip
    typer.echo(f"{len(chosen)} of {len(eligible)} eligible laws ({len(paths)} files) -> {out}")


def check_german(path: Path, laws: dict) -> tuple[int, list[str]]:
    problems, n = [], 0
    commit = laws["commit"]
    drawn = {law["path"] for law in laws["laws"]}
    cache: dict[str, dict[str, str]] = {}
    for line_no, line in enumerate(path.read_text().splitlines(), 1):
        if not line.strip():
            continue
        q = json.loads(line)
        n += 1
        if q["law"] not in drawn:
            problems.append(f"{path.name}:{line_no}: {q['law']} is not a drawn law")
            continue
        if q["law"] not in cache:
            cache[q["law"]] = {norm(h): norm(b) for h, b in sections(law_text(q["law"], commit=commit))}
        body = cache[q["law"]].get(norm(q["section"]))
        if body is None:
            problems.append(f"{path.name}:{line_no}: no section {q['section']!r} in {q['law']}")
        elif norm(q["answer"]) not in body:
            problems.append(f"{path.name}:{line_no}: the answer is not verbatim in {q['section']!r}")
    return n, problems


def swequad_pages() -> tuple[dict[int, str], set[int]]:
    """SweQUAD-MC's pages (numbered as tests/answer_sets.py numbers them: ``page-N``) and those of its fit half
    (no question of theirs held out)."""
    import sys

    sys.path.insert(0, str(ROOT))
    from tests.answer_sets import split_of

    held = split_of("swequad")
    items = json.loads((SHARED / "swequad-mc-train" / "training.json").read_text())["data"]
    pages: dict[str, int] = {}
    held_pages: set[int] = set()
    for n, item in enumerate(items):
        context = item["context"].replace("\r\n", "\n")
        number = pages.setdefault(context, len(pages))
        if f"swequad-{n}" in held:
            held_pages.add(number)
    return {v: k for k, v in pages.items()}, set(pages.values()) - held_pages


def check_swedish(path: Path) -> tuple[int, list[str]]:
    pages, fit = swequad_pages()
    problems, n = [], 0
    for line_no, line in enumerate(path.read_text().splitlines(), 1):
        if not line.strip():
            continue
        q = json.loads(line)
        n += 1
        if q["page"] not in fit:
            problems.append(f"{path.name}:{line_no}: page {q['page']} is not a fit-half page")
        elif norm(q["answer"]) not in norm(pages[q["page"]]):
            problems.append(f"{path.name}:{line_no}: the answer is not verbatim on page {q['page']}")
    return n, problems


@app.command()
def check(folder: Path = DATA) -> None:
    """Every written question's answer stands verbatim in its section (German) or page (Swedish)."""
    laws = json.loads((folder / "laws.json").read_text())
    total, bad = 0, []
    for path in sorted(folder.glob("questions_de*.jsonl")):
        n, problems = check_german(path, laws)
        total, bad = total + n, bad + problems
    for path in sorted(folder.glob("questions_sv*.jsonl")):
        n, problems = check_swedish(path)
        total, bad = total + n, bad + problems
    for p in bad:
        typer.echo(p)
    typer.echo(f"{total} questions, {len(bad)} problems")
    raise typer.Exit(1 if bad else 0)


@app.command()
def pages(out: Path = DATA / "swequad_fit_pages.json") -> None:
    """The fit half's SweQUAD-MC pages, numbered, for writing Swedish questions over them."""
    all_pages, fit = swequad_pages()
    out.write_text(json.dumps({str(k): all_pages[k] for k in sorted(fit)}, ensure_ascii=False, indent=1) + "\n")
    typer.echo(f"{len(fit)} fit-half pages of {len(all_pages)} -> {out}")


@app.command()
def outline(path: str) -> None:
    """A drawn law's headings, each with its body's characters (for writing questions)."""
    commit = json.loads((DATA / "laws.json").read_text())["commit"]
    for heading, body in sections(law_text(path, commit=commit)):
        typer.echo(f"{len(norm(body)):6d}  {heading}")


@app.command()
def section(path: str, heading: str) -> None:
    """The body of one section of a drawn law (``heading`` as ``outline`` prints it)."""
    commit = json.loads((DATA / "laws.json").read_text())["commit"]
    for h, body in sections(law_text(path, commit=commit)):
        if norm(h) == norm(heading):
            typer.echo(body.strip())
            return
    raise typer.Exit(1)


if __name__ == "__main__":
    app()
