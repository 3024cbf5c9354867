#!/usr/bin/env python
"""Reading and indexing input: PDF extraction, the not-prose checks, odd files, indexing with Ray.

    python scripts/bench_ingest.py SUBCOMMAND [options]     (SUBCOMMAND --help for its options)

Subcommands:
  pdf      PDF text extraction: pages/s and agreement with the known text, pypdfium2 (ragkit's) against pypdf
  prose    the not-prose checks: false positives on every shared data set, and generated noise
  hostile  the bad-input matrix: each odd file indexed beside one ordinary document, outcome and seconds
  ray      ``ragkit index --engine ray`` with 1 and 2 workers against the local pipeline, and a paper estimate
  regulations  real Swedish regulation PDFs read by this checkout and another (``--before``): running headers
           and footers left in chunks, words printed wrong at line-end hyphens, scans and blank pages, the legal
           structure (sections, "N §" paragraphs, "Page N" sections, the designation), parse seconds

Every subcommand also takes ``--json`` (each table as one JSON object per line). ``pdf`` and ``hostile`` load
tests/documents.py by path (harness.tests_module): they need fpdf2 (the test extra).
"""

from __future__ import annotations

import base64
import difflib
import importlib.util
import json
import os
import random
import re
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

import harness
from harness import SHARED, arg, print_table

cli = harness.CLI(__doc__)


# --- pdf -----------------------------------------------------------------------------------------------------------

HAVE_PYPDF = importlib.util.find_spec("pypdf") is not None  # the comparison (pip install pypdf)
REAL = ["/usr/share/doc/libtasn1-doc/libtasn1.pdf", "/usr/share/doc/shared-mime-info/shared-mime-info-spec.pdf"]


@cli.command(
    "pdf",
    arg("--pages", type=int, default=200),
    arg("--real", nargs="*", default=[p for p in REAL if Path(p).exists()]),
)
def pdf(args) -> None:
    """PDF text extraction: speed (pages/s) and agreement with the known text, pypdfium2 (ragkit's) against pypdf.

        python scripts/bench_ingest.py pdf [--pages 200] [--real FILE.pdf ...]

    Generated PDFs (tests/documents.py, fpdf2): a handbook of ``--pages`` pages in German, English and Swedish
    words, with bookmarks. Agreement = difflib's ratio between the words a library extracts from a page and the
    words written on it, averaged over the pages. Real PDFs (``--real``; by default the Debian documentation
    PDFs found on this machine) have no known text: pages/s, characters, and the two libraries' agreement with
    each other. Then ragkit's whole parse (``ragkit.ingest.pdf.parse_pdf``: text, outline or font-size
    headings, paragraphs, pages) in pages/s.
    """
    from ragkit.ingest.pdf import parse_pdf

    documents = harness.tests_module("documents")
    libraries = [("pypdfium2 (ragkit)", pdfium_pages), ("pypdf", pypdf_pages)][: 2 if HAVE_PYPDF else 1]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        spec = documents.handbook_spec(args.pages)
        path = documents.write_pdf(spec, Path(tmp) / "handbook.pdf")
        truth = [spec.page_text(i) for i in range(args.pages)]
        for name, fn in libraries:
            pages, secs = best_of(fn, path)
            size = f"generated handbook ({path.stat().st_size // 1024} KB)"
            chars = f"{sum(map(len, pages)):,}"
            rows.append((size, len(pages), name, f"{len(pages) / secs:,.0f}", chars, f"{agreement(pages, truth):.4f}"))
        _, secs = best_of(lambda p: parse_pdf(p.read_bytes()), path)
        rows.append(("", "", "ragkit parse_pdf (whole parse)", f"{args.pages / secs:,.0f}", "", ""))
    for real in map(Path, args.real):
        ours, secs = best_of(pdfium_pages, real)
        theirs, secs2 = best_of(pypdf_pages, real) if HAVE_PYPDF else (ours, 0.0)
        both = f"{agreement(ours, theirs):.4f} (with each other)" if HAVE_PYPDF else ""
        chars = f"{sum(map(len, ours)):,}"
        rows.append((real.name, len(ours), "pypdfium2 (ragkit)", f"{len(ours) / secs:,.0f}", chars, both))
        if HAVE_PYPDF:
            rows.append(("", "", "pypdf", f"{len(theirs) / secs2:,.0f}", f"{sum(map(len, theirs)):,}", ""))
        _, secs = best_of(lambda p: parse_pdf(p.read_bytes()), real)
        rows.append(("", "", "ragkit parse_pdf (whole parse)", f"{len(ours) / secs:,.0f}", "", ""))
    cols = ("PDF", "pages", "library", "pages/s", "characters", "agreement")
    print_table("PDF text extraction (best of 3 runs)", cols, rows, left=("PDF", "library"))


def pypdf_pages(path: Path) -> list[str]:
    import pypdf

    return [page.extract_text() or "" for page in pypdf.PdfReader(str(path)).pages]


def pdfium_pages(path: Path) -> list[str]:
    import pypdfium2 as pdfium

    doc = pdfium.PdfDocument(str(path))
    try:
        return [page.get_textpage().get_text_range() for page in doc]
    finally:
        doc.close()


def best_of(fn, path: Path, repeat: int = 3) -> tuple[list[str], float]:
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn(path)
        best = min(best, time.perf_counter() - t)
    return out, best


def agreement(a: list[str], b: list[str]) -> float:
    def words(text: str) -> list[str]:
        return re.findall(r"\w+", text.lower())

    return statistics.fmean(
        difflib.SequenceMatcher(None, words(x), words(y), autojunk=False).ratio() for x, y in zip(a, b)
    )


# --- prose ---------------------------------------------------------------------------------------------------------


@cli.command("prose", arg("--data", type=Path, default=SHARED))
def prose(args) -> None:
    """The not-prose checks (``ragkit.text.word_share`` < ``PROSE_MIN``, ``repetition`` > ``REPEAT_MAX``): false
    positives on every shared data set, and what they say of generated noise.

        python scripts/bench_ingest.py prose [--data ../shared/data]

    Every document of every data set (Markdown/HTML/text files parsed as the indexer parses them; each record
    of a BEIR corpus.jsonl) is scored; a real document below ``PROSE_MIN`` would be skipped at index time (the
    target is none). Then base64, a hex dump, minified JavaScript and random bytes decoded as Windows-1252.
    """
    from ragkit.text import PROSE_MIN, REPEAT_MAX, repetition, word_share

    by_set: dict[str, list[tuple[float, float, str]]] = {}
    for name, doc, text in prose_documents(args.data):
        by_set.setdefault(name, []).append((word_share(text), repetition(text), doc))
    rows = []
    for name, scores in sorted(by_set.items()):
        scores.sort()
        values = [s for s, _, _ in scores]
        worst = max(scores, key=lambda x: x[1])
        rows.append(
            (
                name,
                f"{len(values):,}",
                f"{values[0]:.3f} ({scores[0][2]})",
                f"{values[len(values) // 100]:.3f}",
                f"{statistics.median(values):.3f}",
                f"{worst[1]:.1f}× ({worst[2]})",
                sum(1 for v, r, _ in scores if v < PROSE_MIN or r > REPEAT_MAX),
            )
        )
    for label, text in noise().items():
        share, ratio = word_share(text), repetition(text)
        skipped = "skipped" if share < PROSE_MIN or ratio > REPEAT_MAX else "INDEXED"
        rows.append((label, "1", f"{share:.3f}", "", "", f"{ratio:.1f}×", skipped))
    title = f"word share of every document (not prose below {PROSE_MIN}) and compression of its start "
    cols = ("data set", "documents", "lowest word share", "1st percentile", "median", "highest compression")
    print_table(title + f"(repeats itself above {REPEAT_MAX:g}×)", (*cols, "would be skipped"), rows)


def prose_documents(data: Path):
    """(data set, document, text as indexed) for every document under ``data``."""
    from ragkit.ingest.discover import decode
    from ragkit.ingest.parse import format_for
    from ragkit.records import Block

    for f in sorted(data.rglob("*")):
        if not f.is_file():
            continue
        name = f.relative_to(data).parts[0]
        if f.name == "corpus.jsonl":
            for line in f.open():
                obj = json.loads(line)
                yield name, obj["_id"], f"{obj.get('title', '')}\n{obj.get('text', '')}"
        elif f.suffix in (".md", ".markdown", ".txt", ".rst", ".html", ".htm"):
            raw = format_for(f.name).parse(decode(f.read_bytes()))
            yield name, str(f.relative_to(data)), "\n".join(i.text for i in raw.items if isinstance(i, Block))


def noise() -> dict[str, str]:
    rng = random.Random(1)
    return {
        "base64 (300 KB)": base64.b64encode(rng.randbytes(225_000)).decode(),
        "hex dump": "\n".join(" ".join(f"{rng.randrange(256):02x}" for _ in range(16)) for _ in range(4000)),
        "minified JavaScript": "var a=function(b){return b*2},c=[1,2,3].map(a);" * 2000,
        "random bytes as Windows-1252": rng.randbytes(60_000).decode("cp1252", errors="replace"),
        "one word repeated (1 MB line)": "word " * 200_000,
        "one sentence repeated": "Large text file. " * 80_000,
    }


# --- hostile -------------------------------------------------------------------------------------------------------


@cli.command("hostile", arg("--work", type=Path))
def hostile(args) -> None:
    """The bad-input matrix: each odd file indexed on its own (beside one ordinary document), outcome and seconds.

        python scripts/bench_ingest.py hostile [--work DIR]

    Every case is a fresh index of a folder holding ``policy.md`` and the odd file, with the bundled model and
    the default settings (``--max-file-size`` 50 MB: the oversized case writes a 51 MB file). Outcome: what the
    run said of the odd file (skipped and why, indexed and how many chunks), and whether ``policy.md`` was
    indexed too.
    """
    from ragkit.events import Reporter

    work = harness.workdir(args.work, "hostile")
    rows = []
    for label, make in hostile_cases(random.Random(1)).items():
        root = work / "docs"
        shutil.rmtree(work, ignore_errors=True)
        root.mkdir(parents=True)
        (root / "policy.md").write_text("# Overtime\n\nOvertime is limited to ten hours per week.\n")
        make(root)
        t = time.perf_counter()
        ix, summary = harness.indexed(root, work / "idx", reporter=Reporter())
        secs = time.perf_counter() - t
        said = [w.replace(f"{root.name}/", "") for w in summary.warnings if "policy.md" not in w]
        odd_docs = summary.documents - 1
        outcome = "; ".join(said) if said else "no warning"
        if odd_docs > 0:
            indexed = f"indexed ({odd_docs} document(s), {summary.chunks} chunks in all)"
            outcome = indexed + (f"; {outcome}" if said else "")
        with ix.reader.duck() as store:
            policy = bool(store.value("SELECT count(*) FROM documents WHERE path LIKE '%policy.md'"))
        rows.append((label, outcome, "yes" if policy else "NO", f"{secs:.2f}"))
    title = "bad-input matrix (each case: a fresh index of policy.md + the odd file)"
    print_table(title, ("case", "outcome", "policy.md indexed", "seconds"), rows, left=("case", "outcome"), width=200)
    if not args.work:
        shutil.rmtree(work, ignore_errors=True)


def hostile_cases(rng: random.Random) -> dict:
    def write(name: str, data: bytes | str):
        return lambda root: (root / name).write_bytes(data if isinstance(data, bytes) else data.encode())

    def deep(root: Path):
        folder = root.joinpath(*(f"d{i}" for i in range(60)))
        folder.mkdir(parents=True)
        (folder / "deep.md").write_text("# Deep\n\nA file sixty folders down.\n")

    def unreadable(root: Path):
        (root / "secret.md").write_text("# Secret\n\nNot for the index.\n")
        (root / "secret.md").chmod(0)

    def encrypted_pdf(root: Path):
        documents = harness.tests_module("documents")
        documents.write_pdf(documents.handbook_spec(1), root / "secret.pdf", password="x")

    hex_dump = "\n".join(" ".join(f"{rng.randrange(256):02x}" for _ in range(16)) for _ in range(4000))
    return {
        "base64 blob, 400 KB .txt": write("blob.txt", base64.b64encode(rng.randbytes(300_000))),
        "hex dump .txt": write("dump.txt", hex_dump),
        "minified code .txt": write("app.txt", "var a=function(b){return b*2},c=[1,2].map(a);" * 4000),
        "random bytes .txt": write("random.txt", rng.randbytes(100_000)),
        "NUL bytes in text": write("nul.txt", b"some text\x00with a NUL byte " * 100),
        "Latin-1 / Windows-1252 text": write("latin1.txt", "Überstunden müssen genehmigt werden.".encode("cp1252")),
        "invalid UTF-8 sequence": write("mixed.txt", b"Valid start \xff\xfe then more text about overtime."),
        "malformed HTML": write("broken.html", "<html><body><h1>Broken<p>unclosed <b>html text"),
        "invalid YAML front matter": write("front.md", "---\ntitle: [unclosed\n---\n# Parking\n\nBadges.\n"),
        "empty file": write("empty.md", ""),
        "whitespace only": write("blank.txt", "  \n\n\t \n"),
        "1 MB single line": write("line.txt", "word " * 200_000),
        "51 MB file": write("huge.txt", "Large text file. " * 3_000_000),
        "60-deep nesting": deep,
        "symlink loop": lambda root: os.symlink(root, root / "loop"),
        "symlink out of the tree": lambda root: os.symlink("/etc/hostname", root / "hostname.txt"),
        "no read permission (chmod 000)": unreadable,
        "encrypted PDF": encrypted_pdf,
        "broken PDF": write("broken.pdf", b"%PDF-1.4 not really"),
        "broken DOCX": write("broken.docx", b"PK not a zip"),
    }


# --- ray -----------------------------------------------------------------------------------------------------------


@cli.command(
    "ray",
    arg("--corpus", type=Path, default=SHARED / "scifact-train" / "corpus.jsonl"),
    arg("--docs", type=int),
    arg("--work", type=Path),
    arg("--as-files", action="store_true", help="index one text file per document"),
)
def ray(args) -> None:
    """``ragkit index --engine ray`` with 1 and 2 workers vs the local pipeline, side by side in one run, and a
    paper estimate for a large corpus from the measured per-worker rate.

        python scripts/bench_ingest.py ray [--corpus ../shared/data/scifact-train/corpus.jsonl] [--docs N]
            [--work DIR] [--as-files]

    The corpus (default scifact-train's corpus.jsonl, which Ray takes in parts of records; ``--as-files``: one
    text file per document instead) is indexed by fresh ``ragkit index`` processes (model load, Ray start-up
    and commit included), one after the other in one run.
    """
    work = harness.workdir(args.work, "ray")
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    if args.as_files:
        source = work / "files"
        n = files_of(args.corpus, source, args.docs)
    else:
        source = harness.corpus_source(args.corpus, args.docs, work)  # the corpus itself without --docs
        n = sum(1 for line in source.open() if line.strip())
    runs = []
    for label, extra in (
        ("local pipeline", ()),
        ("Ray, 1 worker", ("--engine", "ray", "--ray-workers", "1")),
        ("Ray, 2 workers", ("--engine", "ray", "--ray-workers", "2")),
    ):
        shutil.rmtree(work / "idx", ignore_errors=True)
        t = time.perf_counter()
        cmd = harness.ragkit_cmd("index", source, "--index", work / "idx", "--json", *extra)
        out = subprocess.run(cmd, check=True, capture_output=True, text=True)
        runs.append((label, time.perf_counter() - t, json.loads(out.stdout)))
    base = runs[0][1]
    rows = []
    for label, secs, s in runs:
        stage = s["seconds"].get("ray_work") or s["seconds"].get("parse_chunk", 0) + s["seconds"].get("embed", 0)
        rows.append(
            (
                label,
                f"{secs:.1f}",
                f"{base / secs:.2f}×",
                f"{s['chunks']:,}",
                f"{s['chunks'] / secs:.1f}",
                f"{stage:.1f}",
                f"{s['seconds'].get('ray_start', 0):.1f}",
                f"{s['seconds'].get('write_lance', 0):.1f}",
                f"{s['seconds'].get('commit', 0):.1f}",
                f"{s.get('peak_rss_mb', 0):,.0f}",
            )
        )
    one = runs[1][2]
    per_worker = one["chunks"] / one["seconds"]["ray_work"]
    rate = "per-worker rate (Ray, 1 worker, one CPU, parse + chunk + embed + write the fragment)"
    notes = [f"{rate}: {per_worker:.1f} chunks/s"]
    for nodes, cores in ((10, 16), (50, 32), (100, 64)):
        hours = 100e6 / (per_worker * nodes * cores) / 3600
        notes.append(
            f"paper estimate, 100 M chunks on {nodes} nodes × {cores} cores: {hours:,.1f} h of workers "
            "(plus the driver: reading the files, the FTS index, the DuckDB run)"
        )
    what = "files" if args.as_files else "documents in one corpus.jsonl"
    cols = ["pipeline", "wall s", "vs local", "chunks", "chunks / s", "parse + embed s", "Ray start s"]
    cols += ["driver: LanceDB s", "driver: DuckDB + commit s", "driver peak MiB"]
    title = f"ragkit index of {n:,} {what} ({args.corpus.parent.name}), fresh builds, one run"
    print_table(title, cols, rows, notes=notes)


def files_of(corpus: Path, folder: Path, docs: int | None) -> int:
    folder.mkdir(parents=True)
    n = 0
    with corpus.open() as fh:
        for line in fh:
            if docs is not None and n >= docs:
                break
            rec = json.loads(line)
            (folder / f"{rec['_id']}.txt").write_text(f"{rec.get('title', '')}\n\n{rec.get('text', '')}\n")
            n += 1
    return n


# --- regulations ---------------------------------------------------------------------------------------------------

# run in a checkout's own interpreter (its ragkit on the path): parse and chunk every PDF, print one JSON line
_MEASURE = r"""
import json, sys, time
from pathlib import Path
from ragkit.ingest.config import IndexConfig
from ragkit.ingest.discover import discover
from ragkit.ingest.source import SourceParser, read_source
from ragkit.legal import heading_key

class Words:  # chunks cut at 256 words (no model: the same cut for both checkouts)
    max_tokens = 256
    def count_tokens(self, texts): return [len(t.split()) for t in texts] if isinstance(texts, list) else len(texts.split())

parser = SourceParser(IndexConfig(), Words())
out = {"files": [], "seconds": 0.0}
for src in discover([Path(sys.argv[1])], ["*.pdf"], [], False, []):
    data = read_source(src)
    t = time.perf_counter()
    parsed = parser.parse(src, data, "h")
    out["seconds"] += time.perf_counter() - t
    for doc, chunks in parsed:
        meta = doc.document.metadata
        out["files"].append({
            "name": src.path.name,
            "chunks": [[c.text, c.page_start, c.page_end] for c in chunks],
            "sections": len(doc.sections),
            "paragraphs": sum(heading_key(s.heading or "") == ("§", heading_key(s.heading or "")[1])
                              for s in doc.sections if heading_key(s.heading or "")),
            "page_sections": sum((s.heading or "").startswith("Page ") for s in doc.sections),
            "scans": len(meta.get("pages_without_text") or []),
            "blank": len(meta.get("blank_pages") or []),
            "designation": bool(meta.get("designation")),
        })
print(json.dumps(out))
"""


def _running_lines(pdf_path: Path) -> dict[int, set[str]]:
    """The oracle, from PDFium's own page text and not from ragkit: per page, its first and last two lines whose
    shape (digits as #) stands first or last on at least 3 pages, and lone page numbers."""
    import pypdfium2 as pdfium

    pages = []
    pdf = pdfium.PdfDocument(str(pdf_path))
    for page in pdf:
        lines = [x.strip() for x in re.split(r"[\r\n]+", page.get_textpage().get_text_range()) if x.strip()]
        pages.append(lines[:2] + lines[-2:])
    pdf.close()

    def shape(text: str) -> str:
        return re.sub(r"\d+", "#", " ".join(text.lower().split()))

    seen: dict[str, set[int]] = {}
    for n, edge in enumerate(pages, start=1):
        for line in edge:
            seen.setdefault(shape(line), set()).add(n)
    running = {k for k, on in seen.items() if len(on) >= 3}
    return {
        n: {x for x in edge if shape(x) in running or re.fullmatch(r"\d{1,3}", x)} for n, edge in enumerate(pages, 1)
    }


def _hyphen_errors(pdf_path: Path) -> list[str]:
    """The wrong forms a line-end hyphen gives when its marker is simply dropped where the hyphen must stay:
    "hälsooch" (for "hälso- och"), "CEmärkningen" (for "CE-märkningen")."""
    import pypdfium2 as pdfium

    wrong = []
    pdf = pdfium.PdfDocument(str(pdf_path))
    for page in pdf:
        for m in re.finditer(r"(\w+)\ufffe(\w+)", page.get_textpage().get_text_range()):
            before, after = m.group(1), m.group(2)
            if after.lower() in ("och", "eller", "samt") or before[-1].isupper() or before[-1].isdigit():
                wrong.append(before + after)
    pdf.close()
    return wrong


def _regulation_figures(checkout: Path, data: Path) -> dict:
    env = dict(os.environ, PYTHONPATH=str(checkout))
    run = subprocess.run(["python", "-c", _MEASURE, str(data)], env=env, cwd=checkout, capture_output=True, text=True)
    if run.returncode:
        raise SystemExit(run.stderr[-2000:])
    got = json.loads(run.stdout.strip().splitlines()[-1])
    chunks = with_header = wrong = 0
    for f in got["files"]:
        running = _running_lines(data / f["name"])
        errors = set(_hyphen_errors(data / f["name"]))
        for text, first, last in f["chunks"]:
            chunks += 1
            lines = {x.strip() for x in text.splitlines()}
            pages = range(first or 1, (last or first or 1) + 1)
            with_header += any(lines & running.get(p, set()) for p in pages)
            wrong += sum(w in text for w in errors)
    files = got["files"]
    return {
        "chunks": chunks,
        "chunks holding a running header/footer line": with_header,
        "words printed wrong at a line-end hyphen": wrong,
        "pages reported as scans": sum(f["scans"] for f in files),
        "blank pages told apart": sum(f["blank"] for f in files),
        "sections": sum(f["sections"] for f in files),
        '"N §" paragraphs as sections': sum(f["paragraphs"] for f in files),
        '"Page N" sections': sum(f["page_sections"] for f in files),
        "designation found": sum(f["designation"] for f in files),
        "parse s": round(got["seconds"], 2),
    }


@cli.command(
    "regulations",
    arg("--before", type=Path, required=True, help="another checkout of ragkit (e.g. a git worktree)"),
    arg("--data", type=Path, default=SHARED / "swedish-regulations"),
)
def regulations(args) -> None:
    """Real Swedish regulation PDFs (../shared/data/swedish-regulations) read by this checkout and by
    ``--before``, side by side in one run.

        python scripts/bench_ingest.py regulations --before <checkout> [--data DIR]

    Each checkout parses and chunks every PDF in its own interpreter (chunks cut at 256 words, no model). A
    running header or footer is judged by an oracle built from PDFium's own page text, not ragkit's: the first
    and last two lines of each page whose shape (digits aside) stands there on at least 3 pages, and lone page
    numbers; a chunk holds one when one of its lines is such a line of its pages. A word is printed wrong at a
    line-end hyphen when the hyphen must stay ("hälso- och", "CE-märkning") and the chunk has it dropped.
    """
    before = _regulation_figures(args.before.resolve(), args.data)
    after = _regulation_figures(Path(__file__).resolve().parent.parent, args.data)
    rows = [(name, before[name], after[name]) for name in before]
    print_table(f"{args.data.name}: {len(list(args.data.glob('*.pdf')))} PDFs", ("figure", "before", "after"), rows)


if __name__ == "__main__":
    cli.main()
