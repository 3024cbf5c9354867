#!/usr/bin/env python
"""PDF text extraction: speed (pages/s) and agreement with the known text, pypdfium2 (ragkit's) against pypdf.

    python scripts/bench_pdf.py [--pages 200] [--real FILE.pdf ...]

Generated PDFs (tests/documents.py, fpdf2): a handbook of ``--pages`` pages in German, English and Swedish
words, with bookmarks. Agreement = difflib's ratio between the words a library extracts from a page and the
words written on it, averaged over the pages. Real PDFs (``--real``; by default the Debian documentation
PDFs found on this machine) have no known text: pages/s, characters, and the two libraries' agreement with
each other. Then ragkit's whole parse (``ragkit.ingest.pdf.parse_pdf``: text, outline or font-size headings,
paragraphs, pages) in pages/s.
"""

from __future__ import annotations

import argparse
import difflib
import importlib.util
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

from ragkit.ingest.pdf import parse_pdf  # noqa: E402
from tests.documents import handbook_spec, write_pdf  # noqa: E402

HAVE_PYPDF = importlib.util.find_spec("pypdf") is not None  # the comparison (pip install pypdf)
REAL = ["/usr/share/doc/libtasn1-doc/libtasn1.pdf", "/usr/share/doc/shared-mime-info/shared-mime-info-spec.pdf"]


def words(text: str) -> list[str]:
    return re.findall(r"\w+", text.lower())


def pypdf_pages(path: Path) -> list[str]:
    import pypdf

    return [page.extract_text() or "" for page in pypdf.PdfReader(str(path)).pages]


def pdfium_pages(path: Path) -> list[str]:
    import pypdfium2 as pdfium

    pdf = pdfium.PdfDocument(str(path))
    try:
        return [page.get_textpage().get_text_range() for page in pdf]
    finally:
        pdf.close()


def timed(fn, path: Path, repeat: int = 3) -> tuple[list[str], float]:
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn(path)
        best = min(best, time.perf_counter() - t)
    return out, best


def agreement(a: list[str], b: list[str]) -> float:
    return statistics.fmean(
        difflib.SequenceMatcher(None, words(x), words(y), autojunk=False).ratio() for x, y in zip(a, b)
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--pages", type=int, default=200)
    ap.add_argument("--real", nargs="*", default=[p for p in REAL if Path(p).exists()])
    args = ap.parse_args()
    tab = Table(title="PDF text extraction (best of 3 runs)")
    for col in ("PDF", "pages", "library", "pages/s", "characters", "agreement"):
        tab.add_column(col, justify="left" if col in ("PDF", "library") else "right")
    with tempfile.TemporaryDirectory() as tmp:
        spec = handbook_spec(args.pages)
        path = write_pdf(spec, Path(tmp) / "handbook.pdf")
        truth = [spec.page_text(i) for i in range(args.pages)]
        for name, fn in (("pypdfium2 (ragkit)", pdfium_pages), ("pypdf", pypdf_pages))[: 2 if HAVE_PYPDF else 1]:
            pages, secs = timed(fn, path)
            tab.add_row(
                f"generated handbook ({path.stat().st_size // 1024} KB)",
                str(len(pages)),
                name,
                f"{len(pages) / secs:,.0f}",
                f"{sum(map(len, pages)):,}",
                f"{agreement(pages, truth):.4f}",
            )
        _, secs = timed(lambda p: parse_pdf(p.read_bytes()), path)
        tab.add_row("", "", "ragkit parse_pdf (whole parse)", f"{args.pages / secs:,.0f}", "", "")
    for real in map(Path, args.real):
        ours, secs = timed(pdfium_pages, real)
        theirs, secs2 = timed(pypdf_pages, real) if HAVE_PYPDF else (ours, 0.0)
        both = f"{agreement(ours, theirs):.4f} (with each other)" if HAVE_PYPDF else ""
        tab.add_row(
            real.name,
            str(len(ours)),
            "pypdfium2 (ragkit)",
            f"{len(ours) / secs:,.0f}",
            f"{sum(map(len, ours)):,}",
            both,
        )
        if HAVE_PYPDF:
            tab.add_row("", "", "pypdf", f"{len(theirs) / secs2:,.0f}", f"{sum(map(len, theirs)):,}", "")
        _, secs = timed(lambda p: parse_pdf(p.read_bytes()), real)
        tab.add_row("", "", "ragkit parse_pdf (whole parse)", f"{len(ours) / secs:,.0f}", "", "")
    Console(width=160).print(tab)


if __name__ == "__main__":
    main()
