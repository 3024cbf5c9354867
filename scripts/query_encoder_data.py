#!/usr/bin/env python
"""The query encoder's own German training questions (issue 62): which further federal laws they are written over,
the sections each writer is given, and checks that every written answer stands verbatim in its section.

    python scripts/query_encoder_data.py draw            # 650 more laws, drawn once (seed 62) -> laws.json
    python scripts/query_encoder_data.py tasks W         # per writer: the drawn laws' chosen sections, as text
    python scripts/query_encoder_data.py check           # every question's answer verbatim in its section

The laws are drawn from bundestag/gesetze (``fetch`` it; the commit is recorded) among those with room for several
questions, leaving out the eight of ``../shared/data/german-laws``, the laws ragkit is measured on
(``../shared/data/heldout-laws.txt``) and the 300 the reranker's questions were written over
(scripts/reranker_data/laws.json). Questions are written by people (sessions) from the sections' text, the way
people ask (everyday words, some long like a forum post, some naming no law), never from ragkit's output; each
answer is a verbatim span of its section. They are kept apart from every evaluation set.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import typer
from reranker_data import DATA as RERANKER_DATA
from reranker_data import EXCLUDED, GESETZE, MIN_CHARS, MIN_SECTIONS, SHARED, _git, law_text, norm, sections

HERE = Path(__file__).resolve().parent
DATA = HERE / "query_encoder_data"
SEED = 62
SECTION_CHARS = (250, 2600)  # a section a writer is given: room for a question, short enough to read whole
SECTIONS_PER_LAW = 7  # given; a writer asks about five of them

app = typer.Typer(add_completion=False, help=__doc__)


def held_out_laws() -> set[str]:
    """The ``index.md`` paths of the laws ragkit is measured on (never trained on)."""
    lines = (SHARED / "heldout-laws.txt").read_text().splitlines()
    return {ln.strip().removeprefix("laws/") + "/index.md" for ln in lines if ln.strip() and not ln.startswith("#")}


def reranker_laws() -> set[str]:
    return {law["path"] for law in json.loads((RERANKER_DATA / "laws.json").read_text())["laws"]}


@app.command()
def draw(repo: Path = GESETZE, n: int = 650, seed: int = SEED, out: Path = DATA / "laws.json") -> None:
    """Draw ``n`` laws at random (fixed seed) among those with at least MIN_CHARS of text in MIN_SECTIONS sections,
    leaving out german-laws' eight, the held-out laws and the reranker's 300."""
    commit = _git(repo, "rev-parse", "HEAD").strip()
    paths = sorted(p for p in _git(repo, "ls-tree", "-r", "--name-only", commit).split() if p.endswith("/index.md"))
    taken = held_out_laws() | reranker_laws()
    eligible = []
    for p in paths:
        if p.split("/")[-2] in EXCLUDED or p in taken:
            continue
        secs = [(h, b) for h, b in sections(law_text(p, repo, commit)) if len(norm(b)) > 80]
        if len(secs) >= MIN_SECTIONS and sum(len(norm(b)) for _, b in secs) >= MIN_CHARS:
            eligible.append(p)
    random.Random(seed).shuffle(eligible)
    chosen = sorted(eligible[:n])
    titles = {}
    for p in chosen:
        first = next((ln for ln in law_text(p, repo, commit).splitlines() if ln.startswith("Title: ")), "")
        titles[p] = first.removeprefix("Title: ").strip() or p
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(
        json.dumps(
            {"repo": "bundestag/gesetze", "commit": commit, "seed": seed, "eligible": len(eligible),
             "rule": f">= {MIN_SECTIONS} sections of > 80 characters, >= {MIN_CHARS} characters, not {sorted(EXCLUDED)}, "
                     "not ../shared/data/heldout-laws.txt, not scripts/reranker_data/laws.json",
             "laws": [{"path": p, "title": titles[p]} for p in chosen]},
            ensure_ascii=False, indent=1,
        ) + "\n"
    )  # fmt: skip
    typer.echo(f"{len(chosen)} of {len(eligible)} eligible laws ({len(paths)} files) -> {out}")


def chosen_sections(path: str, commit: str, seed: int = SEED) -> list[tuple[str, str]]:
    """The sections of a drawn law a writer is given: up to SECTIONS_PER_LAW of those of SECTION_CHARS, drawn
    with the law's own seed, in the law's order."""
    secs = [(h, b.strip()) for h, b in sections(law_text(path, commit=commit))]
    fit = [i for i, (_, b) in enumerate(secs) if SECTION_CHARS[0] <= len(norm(b)) <= SECTION_CHARS[1]]
    picked = sorted(random.Random(f"{seed}:{path}").sample(fit, min(SECTIONS_PER_LAW, len(fit))))
    return [secs[i] for i in picked]


@app.command()
def tasks(out: Path, writers: int = 8, folder: Path = DATA) -> None:
    """One text file per writer (``out/task_K.md``): its share of the drawn laws, each with its title, path and
    chosen sections (heading, then the body as the law has it)."""
    laws = json.loads((folder / "laws.json").read_text())
    out.mkdir(parents=True, exist_ok=True)
    shares = [laws["laws"][k::writers] for k in range(writers)]
    for k, share in enumerate(shares):
        parts = []
        for law in share:
            parts.append(f"\n\n######## LAW {law['path']}\nTITLE: {law['title']}\n")
            for heading, body in chosen_sections(law["path"], laws["commit"]):
                parts.append(f"\n=== SECTION: {heading}\n{body}\n")
        (out / f"task_{k}.md").write_text("".join(parts))
        typer.echo(f"task_{k}.md: {len(share)} laws")


def check_file(path: Path, laws: dict) -> tuple[int, list[str]]:
    problems, n, seen = [], 0, set()
    drawn = {law["path"] for law in laws["laws"]}
    cache: dict[str, dict[str, str]] = {}
    for line_no, line in enumerate(path.read_text().splitlines(), 1):
        if not line.strip():
            continue
        try:
            q = json.loads(line)
        except json.JSONDecodeError as exc:
            problems.append(f"{path.name}:{line_no}: not JSON ({exc})")
            continue
        n += 1
        missing = {"id", "law", "section", "question", "answer"} - set(q)
        if missing:
            problems.append(f"{path.name}:{line_no}: lacks {sorted(missing)}")
            continue
        if q["id"] in seen:
            problems.append(f"{path.name}:{line_no}: id {q['id']} given twice")
        seen.add(q["id"])
        if q["law"] not in drawn:
            problems.append(f"{path.name}:{line_no}: {q['law']} is not a drawn law")
            continue
        if q["law"] not in cache:  # a heading may stand more than once (articles of an amending law: § 1, § 2 …)
            cache[q["law"]] = {}
            for h, b in sections(law_text(q["law"], commit=laws["commit"])):
                cache[q["law"]][norm(h)] = cache[q["law"]].get(norm(h), "") + "\n" + norm(b)
        body = cache[q["law"]].get(norm(q["section"]))
        if body is None:
            problems.append(f"{path.name}:{line_no}: no section {q['section']!r} in {q['law']}")
        elif len(norm(q["answer"])) < 2 or norm(q["answer"]) not in body:
            problems.append(f"{path.name}:{line_no}: the answer {q['answer']!r} is not verbatim in {q['section']!r}")
        elif norm(q["question"]).lower() in body.lower():
            problems.append(f"{path.name}:{line_no}: the question is copied from the section")
    return n, problems


@app.command()
def check(folder: Path = DATA, files: list[Path] | None = typer.Argument(None)) -> None:
    """Every written question's answer stands verbatim in its section (``files``: these only)."""
    laws = json.loads((folder / "laws.json").read_text())
    total, bad = 0, []
    for path in files or sorted(folder.glob("questions_de*.jsonl")):
        n, problems = check_file(path, laws)
        total, bad = total + n, bad + problems
    for p in bad:
        typer.echo(p)
    typer.echo(f"{total} questions, {len(bad)} problems")
    raise typer.Exit(1 if bad else 0)


if __name__ == "__main__":
    app()
