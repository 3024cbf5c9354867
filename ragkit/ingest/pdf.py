"""PDF → the format-independent ``RawDoc``, with the page of every line.

Text comes from PDFium's text layer (pypdfium2): on generated PDFs it gives the same words as pypdf at 4.5×
its speed, on real ones 12× (``scripts/bench_ingest.py pdf``). Lines are numbered through the document (1-based,
across pages); ``RawDoc.page_starts`` holds the first line of each page, so that every chunk and passage
knows its pages.

The section tree comes from the PDF's outline (bookmarks) when it has one: each bookmark is a heading on its
page, at the line that starts with its title (else at the top of the page). Without an outline, lines set
in a larger font than the body text (the size most characters have) are headings, one level per size. A
document with neither gets one section per page. A paragraph starts where a line sits further below the last
than the page's usual line pitch (``PARAGRAPH_PITCH``), at a new font size, and on each page.

Pages without a text layer (scans without OCR) are listed in the metadata (``pages_without_text``; the
pipeline reports and counts them); encrypted and broken files raise ``ParseError`` (skipped and counted).
"""

from __future__ import annotations

import bisect
import datetime as dt
import re
import statistics
from collections import Counter
from dataclasses import dataclass

from ragkit.ingest.raw import ParseError, RawDoc, RawHeading
from ragkit.records import Block

HEADING_RATIO = 1.15  # a line at least this much larger than the body size is a heading
HEADING_MAX_CHARS = 150
MAX_LEVELS = 3  # heading sizes beyond the third largest count as the third level
PARAGRAPH_PITCH = 1.25  # a line this much further below the last than the page's usual pitch starts a paragraph
CONTINUED = (0, "", True)  # a heading's second line: no heading of its own, not body text
_CONTROL = dict.fromkeys(map(ord, "\x02\ufffe\u00ad\x00"), None)  # soft hyphens and PDFium's markers


@dataclass
class Line:
    page: int  # 1-based
    text: str
    size: float  # font size of its first character
    bottom: float  # of its first character's box (PDF units, upwards)
    paragraph: bool = True  # starts a paragraph (the page's first line does)


def page_of(page_starts: list[int], line: int) -> int:
    """The 1-based page of a 1-based line (``page_starts``: the first line of each page)."""
    return max(1, bisect.bisect_right(page_starts, line))


def parse_pdf(data: bytes) -> RawDoc:
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
        page_starts: list[int] = []
        blank: list[int] = []
        for number, page in enumerate(pdf, start=1):
            page_starts.append(len(lines) + 1)
            found = _page_lines(page, number, pdfium_c)
            if not found:
                blank.append(number)
            lines.extend(found)
        outline = _outline(pdf)
        meta = _metadata(pdf.get_metadata_dict(), len(pdf))
    finally:
        pdf.close()
    if blank:
        meta["pages_without_text"] = blank
    raw = RawDoc(title=meta.get("title"), metadata=meta, line_count=len(lines), page_starts=page_starts)
    headings = _outline_headings(outline, lines, page_starts) if outline else _font_headings(lines)
    if not headings and len(page_starts) > 1:  # neither: a section per page
        headings = {
            page_starts[p - 1]: (1, f"Page {p}", False) for p in range(1, len(page_starts) + 1) if p not in blank
        }
    _fill(raw, lines, headings)
    return raw


def _page_lines(page, number: int, pdfium_c) -> list[Line]:
    textpage = page.get_textpage()
    try:
        text = textpage.get_text_range()
        out = []
        for m in re.finditer(r"[^\r\n]+", text):
            line = m.group().translate(_CONTROL).strip()
            if not line:
                continue
            first = m.start() + len(m.group()) - len(m.group().lstrip())
            size = pdfium_c.FPDFText_GetFontSize(textpage, first)
            bottom = textpage.get_charbox(first, loose=True)[1]  # the font's descent below the baseline
            out.append(Line(number, line, round(size, 1), bottom))
    finally:
        textpage.close()
    pitches = [a.bottom - b.bottom for a, b in zip(out, out[1:])]
    usual = statistics.median([x for x in pitches if x > 0] or [0.0])
    for ln, pitch, prev in zip(out[1:], pitches, out):  # a wider gap, a line above the last, a new size
        ln.paragraph = pitch > PARAGRAPH_PITCH * usual or pitch <= 0 or ln.size != prev.size
    return out


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


def _key(text: str) -> str:
    return " ".join(re.findall(r"\w+", text.lower()))


def _outline_headings(outline, lines: list[Line], page_starts: list[int]) -> dict[int, tuple[int, str, bool]]:
    """line number → (level, title, whether the line is the heading's own text)."""
    out: dict[int, tuple[int, str, bool]] = {}
    for level, title, page in outline:
        first = page_starts[page - 1]
        last = page_starts[page] if page < len(page_starts) else len(lines) + 1
        key = _key(title)
        at = next(
            (n for n in range(first, last) if n not in out and key and _key(lines[n - 1].text).startswith(key)), None
        )
        if at is not None:
            out[at] = (level, title, True)
        elif first < last:  # the title is not on the page as text: the section starts at the top
            out.setdefault(first, (level, title, False))
    return out


def _font_headings(lines: list[Line]) -> dict[int, tuple[int, str, bool]]:
    weight = Counter()
    for ln in lines:
        weight[ln.size] += len(ln.text)
    if not weight:
        return {}
    body = weight.most_common(1)[0][0]
    big = [
        i
        for i, ln in enumerate(lines)
        if ln.size >= body * HEADING_RATIO and len(ln.text) <= HEADING_MAX_CHARS and re.search(r"[^\W\d_]", ln.text)
    ]
    sizes = sorted({lines[i].size for i in big}, reverse=True)
    level = {s: min(rank + 1, MAX_LEVELS) for rank, s in enumerate(sizes)}
    out: dict[int, tuple[int, str, bool]] = {}
    start = last = None  # the heading being read (its line number) and its last line (index)
    for i in big:
        ln = lines[i]
        if start is not None and i == last + 1 and lines[last].size == ln.size and lines[last].page == ln.page:
            lvl, text, _ = out[start]  # a heading wrapped over several lines
            out[start] = (lvl, f"{text} {ln.text}", True)
            out[i + 1] = CONTINUED
        else:
            start = i + 1
            out[start] = (level[ln.size], ln.text, True)
        last = i
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
