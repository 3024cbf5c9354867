#!/usr/bin/env python
"""Scanned PDFs read by OCR (issue 52): how many characters come out wrong, whether the scanned copies are found
as well as their text copies, and what it costs.

    python scripts/bench_ocr.py make [--work DIR]         # the copies: text PDFs and their scans
    python scripts/bench_ocr.py cer [--work DIR] [--every N]
    python scripts/bench_ocr.py retrieval [--work DIR]
    python scripts/bench_ocr.py cost [--work DIR] [--pages 500]
    python scripts/bench_ocr.py engines [--work DIR]      # tesserocr in process vs the tesseract program

The copies (``make``): the 59 shared Swedish regulations as they are (their text PDFs), and the eight shared German
laws typeset to PDF with fpdf2 (the test extras' renderer: headings bold and larger, no bookmarks, Helvetica, so
text outside Latin-1 is written with its nearest Latin-1 look-alike, "–" as "-"); then a scanned copy of each:
every page drawn at 200 dpi in grey, the text layer gone (``tests/documents.py`` ``write_scan_of``), and a worn
copy: turned 1.5° and 0.2 % of its pixels flipped to black or white.

``cer``: each scanned page read by OCR (ragkit/ingest/ocr.py, as ``ragkit index`` reads it) against the same
page's text layer in the text copy: the character error rate is the edit distance over the text layer's
characters, both with runs of white space as one space and dashes (‐ – — −) as "-" (a page's words in another
order count as errors). ``--every N``: every N-th page (all by default).

``retrieval``: the quality gate's questions over the text copies and over the scanned copies, side by side in one
run: Swedish held-out everyday questions top-3 (their page among the first three passages), Swedish reference
questions first (the cited paragraph first), German everyday questions top-3 (the held-out half: the labelled
section of the right law among the first three), and extractive answers (the gold answer in the answer) for the
German and Swedish answer sets' held-out halves. The scanned copies' figure over the text copies' is the ratio
the issue asks ≥ 0.95 of.

``cost``: seconds per page on this machine's cores and peak memory for a scan of ``--pages`` pages (the
Swedish scans' pages repeated), and the re-index of the unchanged scans (OCR seconds: none).

Every subcommand takes ``--json``.
"""

from __future__ import annotations

import re
import shutil
import statistics
import subprocess
import time
from pathlib import Path

import harness
from harness import arg, print_table

cli = harness.CLI(__doc__)
documents = harness.tests_module("documents")
quality = harness.tests_module("quality")
WORK = arg("--work", type=Path, default=Path("/tmp/ragkit-bench-ocr"), help="copies, indexes and caches")
DPI = 200
SKEW, NOISE = 1.5, 0.002
_LATIN = str.maketrans({"–": "-", "—": "-", "‐": "-", "−": "-", "„": '"', "“": '"', "”": '"', "‚": "'", "‘": "'",
                        "’": "'", "…": "...", "€": "EUR", "•": "-", "\u00a0": " ", "\u202f": " "})  # fmt: skip
_DASHES = str.maketrans({"‐": "-", "–": "-", "—": "-", "−": "-"})


def _copies(work: Path) -> dict[str, Path]:
    return {kind: work / kind for kind in ("text", "scan", "worn")}


@cli.command("make", WORK)
def make(args) -> None:
    """Typeset the German laws, copy the Swedish regulations, and scan both (clean and worn)."""
    work = args.work
    where = _copies(work)
    laws = sorted(quality.GERMAN_LAWS.glob("*/*/index.md"))
    for md in laws:
        out = where["text"] / "de" / md.relative_to(quality.GERMAN_LAWS).with_suffix(".pdf")
        out.parent.mkdir(parents=True, exist_ok=True)
        if not out.exists():
            typeset(md.read_text(encoding="utf-8"), out)
    for pdf in sorted(quality.SWEDISH_REGULATIONS.glob("*.pdf")):
        out = where["text"] / "sv" / pdf.name
        out.parent.mkdir(parents=True, exist_ok=True)
        if not out.exists():
            shutil.copy(pdf, out)
    made = 0
    for text in sorted(where["text"].rglob("*.pdf")):
        rel = text.relative_to(where["text"])
        for kind, skew, noise in (("scan", 0.0, 0.0), ("worn", SKEW, NOISE)):
            out = where[kind] / rel
            out.parent.mkdir(parents=True, exist_ok=True)
            if not out.exists():
                documents.write_scan_of(text, out, dpi=DPI, skew=skew, noise=noise, seed=made)
                made += 1
    pages = {lang: sum(_pages(p) for p in (where["text"] / lang).rglob("*.pdf")) for lang in ("de", "sv")}
    print_table("scanned copies", ["set", "files", "pages"],
                [[lang, len(list((where["text"] / lang).rglob("*.pdf"))), n] for lang, n in pages.items()],
                notes=[f"in {work}: text/, scan/ (200 dpi), worn/ (1.5°, 0.2 % noise)"])  # fmt: skip


def typeset(markdown: str, out: Path) -> None:
    """A law's Markdown as a plain text PDF: headings bold at 17/14.5/13 points, paragraphs at 10.5."""
    from fpdf import FPDF

    body = re.sub(r"\A---\n.*?\n---\n", "", markdown, flags=re.S)
    pdf = FPDF(format="A4")
    pdf.set_margins(22, 20, 22)
    pdf.set_auto_page_break(True, margin=20)
    pdf.add_page()
    for block in re.split(r"\n\s*\n", body):
        text = " ".join(line.strip() for line in block.strip().splitlines()).translate(_LATIN)
        text = text.encode("latin-1", "replace").decode("latin-1")
        if not text:
            continue
        heading = re.match(r"^(#{1,6})\s+(.*)", text)
        if heading:
            level = len(heading.group(1))
            pdf.set_font("Helvetica", "B", {1: 17, 2: 14.5}.get(level, 13))
            pdf.ln(3)
            pdf.multi_cell(0, 7, heading.group(2))
            pdf.ln(1)
        else:
            pdf.set_font("Helvetica", "", 10.5)
            pdf.multi_cell(0, 5.2, re.sub(r"^:\s+", "", text))
            pdf.ln(2)
    pdf.output(str(out))


def _pages(path: Path) -> int:
    import pypdfium2 as pdfium

    pdf = pdfium.PdfDocument(str(path))
    try:
        return len(pdf)
    finally:
        pdf.close()


_LEADER = re.compile(r"\s*(?:\.\s?){3,}")  # a table of contents' dot leader, however many dots: one sign


def _norm(text: str) -> str:
    return " ".join(_LEADER.sub(" … ", text.translate(_DASHES)).split())


@cli.command("cer", WORK, arg("--every", type=int, default=1, help="every N-th page of the scans"),
             arg("--worn-every", type=int, default=5, help="every N-th page of the worn copies"))  # fmt: skip
def cer(args) -> None:
    """Character error rate of the scanned and the worn copies against the text layer, per set."""
    work = args.work
    import pypdfium2 as pdfium
    import pypdfium2.raw as pdfium_c
    from rapidfuzz.distance import Levenshtein

    from ragkit.ingest import ocr
    from ragkit.ingest.ocr_finish import finish
    from ragkit.ingest.pdf_lines import dehyphenate as _dehyphenate
    from ragkit.ingest.pdf_lines import ocr_lines
    from ragkit.ingest.scans import read_scans

    where = _copies(work)
    rows, notes = [], []
    by_kind: dict[tuple[str, str, str], list[int]] = {}  # (set, copy, kind of page) → errors, characters, pages
    for lang in ("sv", "de"):
        for kind in ("scan", "worn"):
            errors = chars = pages = signs_truth = signs_read = raw_errors = 0
            seconds = 0.0
            for text_pdf in sorted((where["text"] / lang).rglob("*.pdf")):
                scanned = where[kind] / text_pdf.relative_to(where["text"])
                truth_doc, scan_doc = pdfium.PdfDocument(str(text_pdf)), pdfium.PdfDocument(str(scanned))
                try:
                    numbers = list(range(1, len(truth_doc) + 1, args.every if kind == "scan" else args.worn_every))
                    t = time.perf_counter()
                    read = read_scans(scan_doc, numbers, ocr.OcrSettings(), [], pdfium_c)
                    seconds += time.perf_counter() - t
                    as_read = {n: _norm(" ".join(ln.text for ln in page.lines)) for n, page in read.items()}
                    finish([read[n] for n in sorted(read)])  # what the index gets: tables' order, leaders, § numbers
                    indexed = {n: " ".join(ln.text for ln in ocr_lines({n: page})) for n, page in read.items()}
                    for n in numbers:
                        textpage = truth_doc[n - 1].get_textpage()
                        layer = _dehyphenate(textpage.get_text_range())
                        textpage.close()
                        truth = _norm(layer)
                        got = _norm(indexed.get(n, ""))  # (words broken at a line's end joined)
                        if not truth:
                            continue
                        wrong = Levenshtein.distance(truth, got)
                        errors += wrong
                        part = by_kind.setdefault((lang, kind, _page_kind(layer, got)), [0, 0, 0])
                        part[0], part[1], part[2] = part[0] + wrong, part[1] + len(truth), part[2] + 1
                        raw_errors += Levenshtein.distance(truth, as_read.get(n, ""))
                        chars += len(truth)
                        pages += 1
                        signs_truth += truth.count("§")
                        signs_read += got.count("§")
                finally:
                    truth_doc.close()
                    scan_doc.close()
            drawn = by_kind.get((lang, kind, "pictures"), [0, 0, 0])  # text in pictures, which the layer lacks
            rows.append([lang, kind, pages, f"{raw_errors / max(chars, 1):.4f}", f"{errors / max(chars, 1):.4f}",
                         f"{(errors - drawn[0]) / max(chars - drawn[1], 1):.4f}",
                         f"{signs_read}/{signs_truth}", f"{seconds / max(pages, 1):.2f}"])  # fmt: skip
    notes.append("CER: edit distance / the text layer's characters (white space runs as one space, dashes as -, a dot")
    notes.append("leader as one sign; line-end hyphens joined), the page's text as one string: a table or a margin")
    notes.append("note read in another order than the text layer's counts as wrong; CER, text layer whole: without")
    notes.append("pages that hold text in pictures (below), which the layer lacks and OCR reads;")
    notes.append("§: signs OCR gave / the text layer holds; s/page: wall seconds a page (cached pages ~0) on all cores")
    notes.append("CER as read: Tesseract's words as the cache keeps them; CER: the text the index gets (tables' cells")
    notes.append("in order, their rules left out, leaders tidied, dashes, raised numbers, §: ocr_finish.finish;")
    notes.append("words broken at a line's end joined: ragkit.ingest.pdf.ocr_lines)")
    columns = ["set", "copy", "pages", "CER as read", "CER", "CER, text layer whole", "§", "s/page"]
    print_table("OCR character error rate", columns, rows, notes=notes)
    total = {(lang, kind): sum(v[0] for k, v in by_kind.items() if k[:2] == (lang, kind)) for lang, kind, _ in by_kind}
    rows = [[lang, kind, page_kind, n, f"{wrong / max(chars, 1):.4f}", f"{wrong / max(total[lang, kind], 1):.2f}"]
            for (lang, kind, page_kind), (wrong, chars, n) in sorted(by_kind.items())]  # fmt: skip
    print_table("CER by kind of page", ["set", "copy", "page", "pages", "CER", "share of errors"], rows,
                notes=[f"contents: dot leaders in the text layer; tables: ≥ {TABLE_SHARE:.0%} of its lines of ≤ 3 words;",
                       "pictures: OCR read over 1.3 × the layer's characters (text in pictures the layer lacks)"])  # fmt: skip


TABLE_SHARE = 0.4  # of a page's lines with at most three words: a table


def _page_kind(layer: str, read: str) -> str:
    """What a page mostly is, by its text layer: a table of contents, a table, a picture with text, text."""
    if re.search(r"\.{8,}", layer):
        return "contents"
    if len(read) > 1.3 * len(_norm(layer)) + 50:
        return "pictures"
    lines = [ln for ln in layer.splitlines() if ln.strip()]
    return "tables" if sum(len(ln.split()) <= 3 for ln in lines) >= TABLE_SHARE * max(len(lines), 1) else "text"


@cli.command("retrieval", WORK)
def retrieval(args) -> None:
    """The quality gate's questions over the text copies and the scanned copies, one table."""
    work = args.work
    where = _copies(work)
    indexes = {}
    for kind in ("text", "scan"):
        for lang in ("de", "sv"):
            idx = work / "indexes" / f"{kind}-{lang}"
            t = time.perf_counter()
            if not (idx / "manifest.json").exists():
                harness.index_into([where[kind] / lang], idx)
            print(f"{kind}-{lang}: indexed in {time.perf_counter() - t:.0f} s", flush=True)
            indexes[kind, lang] = harness.open_index(idx)
    swedish = quality.swedish_questions()
    german = quality.german_questions(held_out=True)
    answers = {lang: quality.answer_questions(name) for lang, name in (("sv", "swedish"), ("de", "german"))}
    rows = []
    figures: dict[str, dict[str, float]] = {}
    for kind in ("text", "scan"):
        sv = quality.swedish_hits(indexes[kind, "sv"], swedish)
        de = quality.german_hits(indexes[kind, "de"], german)
        said = {lang: quality.answer_eval(indexes[kind, lang], *answers[lang]) for lang in ("sv", "de")}
        figures[kind] = {
            "Swedish everyday top-3": sv.get("everyday_top3", 0.0),
            "Swedish reference first": sv.get("reference_top1", 0.0),
            "German everyday top-3 (held-out)": de["top3"],
            "German everyday top-1 (held-out)": de["top1"],
            "Swedish answers: gold contained (held-out)": said["sv"]["contained"],
            "Swedish answers: quote on the gold page": said["sv"]["page_right"],
            "German answers: gold contained (held-out)": said["de"]["contained"],
        }
    for name in figures["text"]:
        before, after = figures["text"][name], figures["scan"][name]
        rows.append([name, f"{before:.3f}", f"{after:.3f}", f"{after / before:.3f}" if before else "–"])
    print_table("retrieval: text copies vs scanned copies", ["figure", "text", "scan", "scan / text"], rows,
                notes=[f"Swedish: {len(swedish)} questions; German: {len(german)} held-out questions; answers: "
                       + ", ".join(f"{lang} {len(g)} + {len(b)} absent" for lang, (g, b) in answers.items())])  # fmt: skip


@cli.command("cost", WORK, arg("--pages", type=int, default=500, help="pages of the long scan"))
def cost(args) -> None:
    """Seconds per page and peak memory indexing a long scan; a re-index of it (no OCR)."""
    work, pages = args.work, args.pages
    import pypdfium2 as pdfium

    where = _copies(work)
    long_dir = work / "long" / str(pages)  # the scan alone in its folder (and the note the re-index adds)
    long_dir.mkdir(parents=True, exist_ok=True)
    long_pdf = long_dir / f"scan-{pages}.pdf"
    if not long_pdf.exists():
        out = pdfium.PdfDocument.new()
        sources = sorted((where["worn"] / "sv").glob("*.pdf"))
        n = 0
        for src in sources:
            doc = pdfium.PdfDocument(str(src))
            take = min(len(doc), pages - n)
            out.import_pages(doc, list(range(take)))
            n += take
            doc.close()
            if n >= pages:
                break
        out.save(str(long_pdf))
        out.close()
    from ragkit.cache import cache_root

    cache = work / "cost-cache"  # an OCR cache of its own; the model exports shared with the user's cache
    shutil.rmtree(cache, ignore_errors=True)
    cache.mkdir(parents=True)
    for kept in cache_root().iterdir():
        if kept.is_dir() and kept.name not in ("ocr", "pages"):
            (cache / kept.name).symlink_to(kept)
    idx = work / "indexes" / "cost"
    shutil.rmtree(idx, ignore_errors=True)
    env = {"RAGKIT_CACHE": str(cache)}
    first, peak = _timed_index(long_dir, idx, env)
    (long_dir / "note.md").write_text("# Anteckning\n\nEn ändring bredvid skanningen.\n")
    again, peak2 = _timed_index(long_dir, idx, env, full=True)
    rows = [["first index (OCR)", f"{first:.0f}", f"{first / pages:.2f}", f"{peak:,.0f}"],
            ["re-index --full (pages from the OCR cache)", f"{again:.0f}", f"{again / pages:.2f}", f"{peak2:,.0f}"]]  # fmt: skip
    print_table(f"cost: a {pages}-page scan", ["run", "seconds", "s/page", "peak MiB"], rows,
                notes=["the worn Swedish scans' pages (1.5°, noise); an empty OCR cache, the models already exported",
                       "peak MiB: the whole ragkit index process (model, OCR threads, LanceDB, DuckDB)"])  # fmt: skip


def _timed_index(folder: Path, idx: Path, env: dict, full: bool = False) -> tuple[float, float]:
    import os

    # (a 500-page scan drawn in grey at 200 dpi is 142 MB: over the default --max-file-size of 50 MB)
    cmd = harness.ragkit_cmd("index", folder, "--index", idx, "--max-file-size", "1000", *(["--full"] if full else []))
    old = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        return harness.timed(cmd)
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


@cli.command("engines", WORK, arg("--pages", type=int, default=6, help="pages compared"))
def engines(args) -> None:
    """tesserocr (one engine kept per thread) against pytesseract (the tesseract program per page)."""
    work, pages = args.work, args.pages
    import pypdfium2 as pdfium

    from ragkit.ingest import ocr

    scans = sorted((_copies(work)["scan"] / "sv").glob("*.pdf"))[:2]
    images = []
    for path in scans:
        doc = pdfium.PdfDocument(str(path))
        images += [doc[i].render(scale=DPI / 72, grayscale=True).to_pil() for i in range(min(len(doc), pages))]
        doc.close()
    images = images[:pages]
    times = {"tesserocr": [], "pytesseract": []}
    for image in images:
        t = time.perf_counter()
        ocr.recognise(image, "swe", 72.0 / DPI)
        times["tesserocr"].append(time.perf_counter() - t)
        t = time.perf_counter()
        try:
            subprocess.run(["tesseract", "-", "-", "-l", "swe", "--dpi", str(DPI)], input=_png(image),
                           capture_output=True, check=True)  # fmt: skip
        except (OSError, subprocess.CalledProcessError):
            times["pytesseract"].append(float("nan"))
            continue
        times["pytesseract"].append(time.perf_counter() - t)
    rows = [[name, len(ts), f"{statistics.median(ts):.2f}"] for name, ts in times.items() if ts]
    print_table("OCR engines, one page at a time", ["engine", "pages", "s/page p50"], rows,
                notes=["the tesseract program is what pytesseract runs per page (Debian's tesseract-ocr)"])  # fmt: skip


def _png(image) -> bytes:
    import io

    buf = io.BytesIO()
    image.save(buf, format="PNG")
    return buf.getvalue()


if __name__ == "__main__":
    cli.main()
