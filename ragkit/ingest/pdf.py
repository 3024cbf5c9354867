"""PDF → the format-independent ``RawDoc``, with the page of every line.

Text comes from PDFium's text layer (pypdfium2): on generated PDFs it gives the same words as pypdf at 4.5×
its speed, on real ones 12× (``scripts/bench_ingest.py pdf``). Lines are numbered through the document (1-based,
across pages); ``RawDoc.page_starts`` holds the first line of each page, so that every chunk and passage
knows its pages.

The section tree comes from the PDF's outline (bookmarks) when it has one: each bookmark is a heading on its
page, at the line that starts with its title (else at the top of the page). Without an outline, lines set
in a larger font than the body text (the size most characters have) are headings, one level per size
(ragkit/ingest/pdf_headings.py). A document with neither gets one section per page. A paragraph starts where a
line sits further below the last than the page's usual line pitch, at a new font size, and on each page (the
lines and their look: ragkit/ingest/pdf_lines.py).

The text is made to read as a reader sees it:
- running headers and footers are removed: lines at a page's top or bottom edge (``EDGE_LINES`` of its
  outermost lines, within ``MARGIN`` of the page's height) whose shape, digits aside, recurs on at least
  max(3, a quarter of the) pages, and lone page numbers ("12", "Sida 3 av 9"); the same shapes are removed in a
  page's top quarter (a title page's masthead repeating the header). The designation they carry ("AFS
  2023:4") is kept as metadata (``designation``) and leads the title when the PDF's own title lacks it;
- line-end hyphens (PDFium marks them) are joined, "verk-/samheten" → "verksamheten", but a hyphen after a
  capital or a digit ("CE-märkning") or after "icke" stays, and one before a conjunction ("hälso- och") keeps
  its space (``pdf_lines.dehyphenate``);
- pages with neither text nor an image are blank (``blank_pages``: the empty backs of title pages); pages
  with an image and no text are scans, read by OCR (ragkit/ingest/ocr.py: their lines' size and place from the
  words' boxes, ``ocr_pages``: page → the engine's confidence) or, without an engine or with ``--no-ocr``, not
  read (``pages_without_text``: reported and counted). Encrypted and broken files raise ``ParseError`` (skipped
  and counted).
"""

from __future__ import annotations

import bisect
import datetime as dt
import re
from collections import Counter

from ragkit.ingest import ocr as ocr_engine
from ragkit.ingest.ocr import OcrPage, OcrSettings
from ragkit.ingest.ocr_finish import finish as finish_ocr
from ragkit.ingest.pdf_headings import HEADING_RATIO, MASTHEAD, font_headings, outline_headings, squeeze
from ragkit.ingest.pdf_lines import Line, body_size, has_image, ocr_lines, page_lines
from ragkit.ingest.raw import ParseError, RawDoc, RawHeading
from ragkit.ingest.scans import read_scans
from ragkit.records import Block

MARGIN = 0.25  # a running header or footer sits within this share of the page's height from its edge …
EDGE_LINES = 3  # … among its outermost lines
MIN_RUNNING, MAX_RUNNING = 2, 5  # and recurs on at least a quarter of the pages, at least 2, at most 5 needed
_PAGE_NUMBER = re.compile(r"^(?:(?:sida|seite|page|s\.)\s*)?\d{1,4}(?:\s*(?:\(|av|von|of|/)\s*\d{1,4}\)?)?$", re.I)
DESIGNATION = re.compile(r"\b([A-ZÅÄÖ]{1,8}FS|SFS)\s*(\d{4}:\d{1,4})\b")  # "AFS 2023:4", "SSMFS 2008:1"


def page_of(page_starts: list[int], line: int) -> int:
    """The 1-based page of a 1-based line (``page_starts``: the first line of each page)."""
    return max(1, bisect.bisect_right(page_starts, line))


def parse_pdf(data: bytes, ocr: OcrSettings | None = None) -> RawDoc:
    """``ocr``: how pages without text are read (None: they are not)."""
    import pypdfium2 as pdfium
    import pypdfium2.raw as pdfium_c

    try:
        pdf = pdfium.PdfDocument(data)
    except pdfium.PdfiumError as exc:
        if "password" in str(exc).lower():
            raise ParseError("encrypted PDF (a password is needed)") from exc
        raise ParseError(f"not a readable PDF ({exc})") from exc
    try:
        lines: list[Line] = []
        blank: list[int] = []
        scans: list[int] = []
        for number, page in enumerate(pdf, start=1):
            found = page_lines(page, number, pdfium_c)
            if not found:
                (scans if has_image(page, pdfium_c) else blank).append(number)
            lines.extend(found)
        pages = len(pdf)
        outline = _outline(pdf)
        meta = _metadata(pdf.get_metadata_dict(), pages)
        known = [ln.text for ln in lines[:400]]
        read = read_scans(pdf, scans, ocr, known, pdfium_c) if scans and ocr is not None else {}
    finally:
        pdf.close()
    return assemble(lines, pages, meta, outline, scans, blank, read)


def assemble(
    lines: list[Line],
    pages: int,
    meta: dict,
    outline: list[tuple[int, str, int]],
    scans: list[int],
    blank: list[int],
    read: dict[int, OcrPage],
) -> RawDoc:
    """A paged document's ``RawDoc`` from its text layer's ``lines`` and the pages OCR ``read`` (the rest of
    ``scans`` stays unread): running headers out, headings from the outline or the lines' sizes."""
    read = {n: page for n, page in read.items() if page.lines}  # (a page OCR found no word on stays unread)
    if read:
        finish_ocr([page for _, page in sorted(read.items())])
        lines = sorted([*lines, *ocr_lines(read)], key=lambda ln: ln.page)  # (stable: reading order kept)
        scans = [n for n in scans if n not in read]
        meta["ocr_pages"] = {str(n): page.confidence for n, page in sorted(read.items())}
        meta["ocr_engine"] = ocr_engine.engine()
    running = _running(lines, pages)
    designation = _designation(lines, running)
    lines = [ln for i, ln in enumerate(lines) if i not in running]
    page_starts = _page_starts(lines, pages)
    if scans:
        meta["pages_without_text"] = scans
    if blank:
        meta["blank_pages"] = blank
    headings = outline_headings(outline, lines, page_starts) if outline else font_headings(lines)
    if designation:
        meta["designation"] = designation
        top = min((h[0] for h in headings.values() if h[0]), default=None)  # the title: the first top heading
        first = min((n for n, h in headings.items() if h[0] == top), default=None) if top else None
        if first is not None and designation not in headings[first][1]:  # the breadcrumbs start "AFS 2023:2 …"
            headings[first] = (top, f"{designation} {headings[first][1]}", headings[first][2])
        if designation not in (meta.get("title") or "") or meta["title"].strip() == designation:
            # a title that only spells the designation otherwise ("SRVFS-2004-7", a file's name) says no more
            own = meta.get("title") if squeeze(meta.get("title", "")) != squeeze(designation) else None
            title = own or (headings[first][1] if first is not None else designation)
            meta["title"] = title if title.startswith(designation) else f"{designation} {title}"
    raw = RawDoc(title=meta.get("title"), metadata=meta, line_count=len(lines), page_starts=page_starts)
    if not headings and len(page_starts) > 1:  # neither: a section per page
        headings = {
            page_starts[p - 1]: (1, f"Page {p}", False)
            for p in range(1, len(page_starts) + 1)
            if p not in blank and p not in scans and page_starts[p - 1] <= len(lines)
        }
    _fill(raw, lines, headings)
    return raw


def _page_starts(lines: list[Line], pages: int) -> list[int]:
    """The first line (1-based) of each page; a page without lines starts where the next one does."""
    starts, n = [], 0
    for page in range(1, pages + 1):
        while n < len(lines) and lines[n].page < page:
            n += 1
        starts.append(n + 1)
    return starts


def _running(lines: list[Line], pages: int) -> set[int]:
    """Indices of the running headers and footers (and lone page numbers) among ``lines``."""
    by_page: dict[int, list[int]] = {}
    for i, ln in enumerate(lines):
        by_page.setdefault(ln.page, []).append(i)
    edges: list[int] = []
    for idx in by_page.values():
        ordered = sorted(idx, key=lambda i: -lines[i].bottom)  # top first
        h = lines[idx[0]].height or 1.0
        top = [i for i in ordered[:EDGE_LINES] if lines[i].bottom > (1 - MARGIN) * h]
        bottom = [i for i in reversed(ordered[-EDGE_LINES:]) if lines[i].bottom < MARGIN * h]
        for side in (top, bottom):  # a shape twice at one edge: the outer is the header ("Bilaga 1" over "Bilaga 1")
            seen: set[str] = set()
            edges += [i for i in side if not (lines[i].shape in seen or seen.add(lines[i].shape))]
    pages_of: dict[str, set[int]] = {}
    for i in edges:
        pages_of.setdefault(lines[i].shape, set()).add(lines[i].page)
    need = max(MIN_RUNNING, min(pages // 4, MAX_RUNNING))
    body = body_size(lines)
    big = {lines[i].shape for i in edges if lines[i].size >= body * HEADING_RATIO}  # headings, more likely
    shapes = {s for s, on in pages_of.items() if len(on) >= (max(3, pages // 4) if s in big else need)}
    out = {i for i in edges if lines[i].shape in shapes or _PAGE_NUMBER.match(lines[i].text)}
    for i, ln in enumerate(lines):  # a masthead in a page's top quarter: the header's shapes, the gazette's name
        top = ln.bottom > 0.75 * (ln.height or 1.0)
        if top and (ln.shape in shapes or MASTHEAD.search(ln.text)) or DESIGNATION.fullmatch(ln.text):
            out.add(i)  # (a line that is only the regulation's number is never body text)
        if top and MASTHEAD.search(ln.text) and i and lines[i - 1].page == ln.page and lines[i - 1].size == ln.size:
            out.add(i - 1)  # the gazette's name wrapped: "Statens räddningsverks / författningssamling"
    return out


def _designation(lines: list[Line], running: set[int]) -> str | None:
    """The regulation's number its running headers carry ("AFS 2023:4", maybe over two lines), the most
    frequent."""
    pages: dict[int, list[str]] = {}
    for i in sorted(running):
        pages.setdefault(lines[i].page, []).append(lines[i].text)
    found = Counter(f"{m.group(1)} {m.group(2)}" for t in pages.values() for m in DESIGNATION.finditer(" ".join(t)))
    if not found:  # none in the margins: the first page's own
        first = " ".join(ln.text for ln in lines if ln.page == (lines[0].page if lines else 1))
        found = Counter(f"{m.group(1)} {m.group(2)}" for m in DESIGNATION.finditer(first))
    return found.most_common(1)[0][0] if found else None


def _outline(pdf) -> list[tuple[int, str, int]]:
    """(level 1.., title, 1-based page) of the bookmarks that point into the document."""
    out = []
    for item in pdf.get_toc():
        dest = item.get_dest()
        index = dest.get_index() if dest is not None else None
        title = " ".join((item.get_title() or "").split())
        if title and index is not None and 0 <= index < len(pdf):
            out.append((item.level + 1, title, index + 1))
    return out


def _fill(raw: RawDoc, lines: list[Line], headings: dict[int, tuple[int, str, bool]]) -> None:
    """Headings and paragraph blocks in line order."""
    para: list[int] = []

    def flush():
        if para:
            raw.items.append(Block("\n".join(lines[n - 1].text for n in para), para[0], para[-1]))
            para.clear()

    for n, ln in enumerate(lines, start=1):
        if n in headings:
            level, title, own = headings[n]
            flush()
            if level:
                raw.items.append(RawHeading(level, title, n))
            if own:
                continue
        if ln.paragraph:
            flush()
        para.append(n)
    flush()


def _pdf_date(value: str | None) -> str | None:
    """ISO date of a PDF date string (``D:20240301090000+01'00'``)."""
    m = re.match(r"(?:D:)?(\d{4})(\d{2})?(\d{2})?", value or "")
    if not m:
        return None
    try:
        return dt.date(int(m.group(1)), int(m.group(2) or 1), int(m.group(3) or 1)).isoformat()
    except ValueError:
        return None


def _metadata(info: dict[str, str], pages: int) -> dict:
    meta: dict = {"pages": pages}
    for key, name in (("Title", "title"), ("Author", "author"), ("Subject", "subject"), ("Keywords", "keywords")):
        value = " ".join((info.get(key) or "").split())
        if value:
            meta[name] = value
    for key, name in (("CreationDate", "created"), ("ModDate", "modified")):
        date = _pdf_date(info.get(key))
        if date:
            meta[name] = date
    if meta.get("modified") or meta.get("created"):
        meta["date"] = meta.get("modified") or meta["created"]  # the document date of date filters
    return meta
