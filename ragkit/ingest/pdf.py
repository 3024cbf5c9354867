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

The text is made to read as a reader sees it:
- running headers and footers are removed: lines at a page's top or bottom edge (``EDGE_LINES`` of its
  outermost lines, within ``MARGIN`` of the page's height) whose shape, digits aside, recurs on at least
  max(3, a quarter of the) pages, and lone page numbers ("12", "Sida 3 av 9"); the same shapes are removed in a
  page's top quarter (a title page's masthead repeating the header). The designation they carry ("AFS
  2023:4") is kept as metadata (``designation``) and leads the title when the PDF's own title lacks it;
- line-end hyphens (PDFium marks them) are joined, "verk-/samheten" → "verksamheten", but a hyphen after a
  capital or a digit ("CE-märkning") or after "icke" stays, and one before a conjunction ("hälso- och") keeps
  its space;
- pages with neither text nor an image are blank (``blank_pages``: the empty backs of title pages); pages
  with an image and no text are scans, read by OCR (ragkit/ingest/ocr.py: their lines' size and place from the
  words' boxes, ``ocr_pages``: page → the engine's confidence) or, without an engine or with ``--no-ocr``, not
  read (``pages_without_text``: reported and counted). Encrypted and broken files raise ``ParseError`` (skipped
  and counted).
"""

from __future__ import annotations

import bisect
import ctypes
import datetime as dt
import math
import re
import statistics
from collections import Counter
from dataclasses import dataclass

from ragkit.ingest import ocr as ocr_engine
from ragkit.ingest.ocr import OcrPage, OcrSettings
from ragkit.ingest.ocr_finish import finish as finish_ocr
from ragkit.ingest.raw import ParseError, RawDoc, RawHeading
from ragkit.ingest.scans import read_scans
from ragkit.ingest.structure import opens_unit
from ragkit.records import Block

HEADING_RATIO = 1.15  # a line at least this much larger than the body size is a heading
HEADING_MAX_CHARS = 150
MAX_LEVELS = 3  # heading sizes beyond the third largest count as the third level
BOLD_SHARE = 0.2  # bold lines at the body size are headings only where at most this share of the body is bold
BOLD_MAX_CHARS = 80
PARAGRAPH_PITCH = 1.25  # a line this much further below the last than the page's usual pitch starts a paragraph
CONTINUED = (0, "", True)  # a heading's second line: no heading of its own, not body text
_CONTROL = dict.fromkeys(map(ord, "\x00"), None)
MARGIN = 0.25  # a running header or footer sits within this share of the page's height from its edge …
EDGE_LINES = 3  # … among its outermost lines
MIN_RUNNING, MAX_RUNNING = 2, 5  # and recurs on at least a quarter of the pages, at least 2, at most 5 needed
_HYPHEN = re.compile(r"(\w*)[\x02\ufffe\u00ad][ \t]*(?:\r?\n)?[ \t]*(\w*)")  # PDFium's line-end hyphen marker
_CONJUNCTIONS = frozenset("och eller samt resp respektive till und oder bzw sowie and or".split())
_PAGE_NUMBER = re.compile(r"^(?:(?:sida|seite|page|s\.)\s*)?\d{1,4}(?:\s*(?:\(|av|von|of|/)\s*\d{1,4}\)?)?$", re.I)
MASTHEAD = re.compile(r"(?:författningssamling|Gesetzblatt|Amtsblatt)$", re.I)  # a gazette's name: no heading
OCR_BODY = 0.12  # an OCR'd line whose size is this close to the usual one (a share of it) is body text
_BROKEN = re.compile(r"(\w*[^\W\d_])-$")  # a word broken at the line's end
DESIGNATION = re.compile(r"\b([A-ZÅÄÖ]{1,8}FS|SFS)\s*(\d{4}:\d{1,4})\b")  # "AFS 2023:4", "SSMFS 2008:1"


@dataclass
class Line:
    page: int  # 1-based
    text: str
    size: float  # font size of its first character
    bottom: float  # of its first character's box (PDF units, upwards)
    paragraph: bool = True  # starts a paragraph (the page's first line does)
    height: float = 0.0  # of its page
    bold: bool = False

    @property
    def shape(self) -> str:
        """The line with its digits as "#": a running header's shape recurs from page to page."""
        return re.sub(r"\d+", "#", " ".join(self.text.lower().split()))


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
            found = _page_lines(page, number, pdfium_c)
            if not found:
                (scans if _has_image(page, pdfium_c) else blank).append(number)
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
    headings = _outline_headings(outline, lines, page_starts) if outline else _font_headings(lines)
    if designation:
        meta["designation"] = designation
        top = min((h[0] for h in headings.values() if h[0]), default=None)  # the title: the first top heading
        first = min((n for n, h in headings.items() if h[0] == top), default=None) if top else None
        if first is not None and designation not in headings[first][1]:  # the breadcrumbs start "AFS 2023:2 …"
            headings[first] = (top, f"{designation} {headings[first][1]}", headings[first][2])
        if designation not in (meta.get("title") or "") or meta["title"].strip() == designation:
            # a title that only spells the designation otherwise ("SRVFS-2004-7", a file's name) says no more
            own = meta.get("title") if _squeeze(meta.get("title", "")) != _squeeze(designation) else None
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


def ocr_lines(read: dict[int, OcrPage]) -> list[Line]:
    """The lines OCR read, as the text layer's: each line's size the engine's estimate of its font's (sizes
    within ``OCR_BODY`` of the usual one read as it: estimates jitter from line to line), its place its box's
    bottom; a word broken at a line's end ("verk-" / "samheten") joined as PDFium joins it."""
    sizes = sorted(ln.size for page in read.values() for ln in page.lines)
    usual = sizes[len(sizes) // 2] if sizes else 0.0
    out: list[Line] = []
    for number, page in sorted(read.items()):
        found: list[Line] = []
        for ln in page.lines:
            size = usual if abs(ln.size - usual) <= OCR_BODY * usual else ln.size
            found.append(Line(number, ln.text, round(size, 1), ln.box[1], height=page.height))
        _join_broken_words(found)
        _mark_paragraphs(found)
        out.extend(ln for ln in found if ln.text)
    return out


def _join_broken_words(lines: list[Line]) -> None:
    for ln, nxt in zip(lines, lines[1:]):
        m = _BROKEN.search(ln.text)
        if not m or not nxt.text[:1].islower():
            continue
        head, _, rest = nxt.text.partition(" ")
        joined = _dehyphenate(f"{m.group(1)}\x02{head}")
        ln.text, nxt.text = ln.text[: m.start()] + joined, rest


def _mark_paragraphs(out: list[Line]) -> None:
    """A line starts a paragraph where it sits further below the last than the page's usual pitch, above the
    last (a new column) or at a new size."""
    pitches = [a.bottom - b.bottom for a, b in zip(out, out[1:])]
    usual = statistics.median([x for x in pitches if x > 0] or [0.0])
    for ln, pitch, prev in zip(out[1:], pitches, out):
        ln.paragraph = pitch > PARAGRAPH_PITCH * usual or pitch <= 0 or ln.size != prev.size


def _has_image(page, pdfium_c) -> bool:
    return any(True for _ in page.get_objects(filter=[pdfium_c.FPDF_PAGEOBJ_IMAGE], max_depth=2))


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
    body = _body_size(lines)
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


def _body_size(lines: list[Line]) -> float:
    """The font size most characters have."""
    weight = Counter()
    for ln in lines:
        weight[ln.size] += len(ln.text)
    return weight.most_common(1)[0][0] if weight else 0.0


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


def _dehyphenate(text: str) -> str:
    """PDFium's line-end hyphen marker: the word joined, or a real hyphen kept (below)."""

    def join(m: re.Match) -> str:
        before, after = m.group(1), m.group(2)
        if after.lower() in _CONJUNCTIONS:
            return f"{before}- {after}"  # "hälso- och sjukvård"
        if before[-1:].isupper() or before[-1:].isdigit() or before.lower() == "icke" or after[:1].isdigit():
            return f"{before}-{after}"  # "CE-märkning", "2-etylhexyl", "icke-joniserande"
        return before + after

    return _HYPHEN.sub(join, text)


def _font(textpage, index: int, pdfium_c) -> tuple[float, bool]:
    """The drawn size of a character (its font size scaled by its text matrix: a PDF may set every font at
    size 1 and scale it) and whether it is bold."""
    matrix = pdfium_c.FS_MATRIX()
    scale = 1.0
    if pdfium_c.FPDFText_GetMatrix(textpage, index, matrix):
        scale = math.sqrt(abs(matrix.a * matrix.d - matrix.b * matrix.c)) or 1.0
    size = round(pdfium_c.FPDFText_GetFontSize(textpage, index) * scale, 1)
    name = ctypes.create_string_buffer(128)
    pdfium_c.FPDFText_GetFontInfo(textpage, index, name, 128, None)
    bold = pdfium_c.FPDFText_GetFontWeight(textpage, index) >= 600 or b"bold" in name.value.lower()
    return size, bold


def _page_lines(page, number: int, pdfium_c) -> list[Line]:
    textpage = page.get_textpage()
    try:
        text = textpage.get_text_range()
        height = page.get_height()
        out = []
        for m in re.finditer(r"[^\r\n]+", text):
            line = _dehyphenate(m.group()).translate(_CONTROL).strip()
            if not line:
                continue
            first = m.start() + len(m.group()) - len(m.group().lstrip())
            bottom = textpage.get_charbox(first, loose=True)[1]  # the font's descent below the baseline
            size, bold = _font(textpage, first, pdfium_c)
            out.append(Line(number, line, size, bottom, height=height, bold=bold))
    finally:
        textpage.close()
    _mark_paragraphs(out)
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


def _squeeze(text: str) -> str:
    """Letters and digits only, lower case: a bookmark's title meets its printed line even where one of them
    lost a space ("omanmälningspliktiga") or a hyphen."""
    return "".join(re.findall(r"[^\W_]+", text.lower()))


def _outline_headings(outline, lines: list[Line], page_starts: list[int]) -> dict[int, tuple[int, str, bool]]:
    """line number → (level, title, whether the line is the heading's own text). A bookmark becomes a heading
    at the line of its page that prints its title (over several lines when it wraps; the printed words win),
    else at the top of its page. A gazette's name ("… författningssamling", a wrapper around the chapters) is
    no heading."""
    out: dict[int, tuple[int, str, bool]] = {}
    for level, title, page in outline:
        if MASTHEAD.search(title):
            continue
        first = page_starts[page - 1]
        last = page_starts[page] if page < len(page_starts) else len(lines) + 1
        key = _squeeze(title)
        at = next((n for n in range(first, last) if n not in out and key and _meets(key, lines[n - 1].text)), None)
        if at is None:  # the title is not on the page as text: the section starts at the top
            if first < last:
                out.setdefault(first, (level, title, False))
            continue
        text, covered, n = lines[at - 1].text, _squeeze(lines[at - 1].text), at
        while len(covered) < len(key) and n < last - 1 and key.startswith(covered + _squeeze(lines[n].text)):
            n += 1  # the title wraps onto the next line
            text, covered = f"{text} {lines[n - 1].text}", covered + _squeeze(lines[n - 1].text)
            out[n] = CONTINUED
        own = len(covered) <= len(key) + 3  # else the line goes on with body text ("6 § Arbetsgivaren ska …")
        out[at] = (level, text if own and covered == key else title, own)
    return out


def _meets(key: str, text: str) -> bool:
    line = _squeeze(text)
    return bool(line) and (line.startswith(key) or (len(line) >= 8 and key.startswith(line)))


def _font_headings(lines: list[Line]) -> dict[int, tuple[int, str, bool]]:
    """Headings by their look: lines set larger than the body text (one level per size, largest first), and
    short bold lines at the body size below them (when bold is rare in the body)."""
    if not lines:
        return {}
    body = _body_size(lines)
    at_body = [ln for ln in lines if ln.size == body]
    bold_headings = sum(len(ln.text) for ln in at_body if ln.bold) <= BOLD_SHARE * sum(len(ln.text) for ln in at_body)
    big = [i for i, ln in enumerate(lines) if _looks_like_heading(ln, body, bold_headings)]
    sizes = sorted({lines[i].size for i in big}, reverse=True)
    level = {s: min(rank + 1, MAX_LEVELS) for rank, s in enumerate(sizes)}
    out: dict[int, tuple[int, str, bool]] = {}
    start = last = None  # the heading being read (its line number) and its last line (index)
    for i in big:
        ln = lines[i]
        if (
            start is not None
            and i == last + 1
            and lines[last].size == ln.size
            and lines[last].page == ln.page
            and not opens_unit(ln.text)  # ("Kapitel 7 - Haftung und Sanktionen" / "§ 83 Schadensersatz": two)
        ):
            lvl, text, _ = out[start]  # a heading wrapped over several lines
            out[start] = (lvl, f"{text} {ln.text}", True)
            out[i + 1] = CONTINUED
        else:
            start = i + 1
            out[start] = (level[ln.size], ln.text, True)
        last = i
    for n in [n for n, (lvl, text, _) in out.items() if lvl and MASTHEAD.search(text)]:
        del out[n]  # a gazette's name ("Statens räddningsverks / författningssamling"), wrapped or not
        while n + 1 in out and out[n + 1] == CONTINUED:
            n += 1
            del out[n]
    return out


def _looks_like_heading(ln: Line, body: float, bold_headings: bool) -> bool:
    if len(ln.text) > HEADING_MAX_CHARS or not re.search(r"[^\W\d_]", ln.text):
        return False
    if ln.size >= body * HEADING_RATIO:
        return True
    return (  # a bold line of its own at the body size: short, no sentence, not a numbered paragraph ("3 §")
        bold_headings
        and ln.bold
        and ln.size >= body
        and ln.paragraph
        and len(ln.text) <= BOLD_MAX_CHARS
        and ln.text[:1].isupper()
        and not re.search(r"[.,;:]$|^\d+\s?[a-z]?\s?§", ln.text)
    )


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
