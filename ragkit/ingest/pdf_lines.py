"""A PDF page's lines as ragkit reads them (ragkit/ingest/pdf.py assembles the document from them): from PDFium's
text layer (``page_lines``: each line's drawn font size, whether it is bold, its place on the page) or from what
OCR read (``ocr_lines``); a paragraph starts where a line sits further below the last than the page's usual
pitch (``PARAGRAPH_PITCH``), at a new font size, and on each page. Line-end hyphens (PDFium marks them) are
joined, "verk-/samheten" → "verksamheten", but a hyphen after a capital or a digit ("CE-märkning") or after
"icke" stays, and one before a conjunction ("hälso- och") keeps its space (``dehyphenate``)."""

from __future__ import annotations

import ctypes
import math
import re
import statistics
from collections import Counter
from dataclasses import dataclass

from ragkit.ingest.ocr import OcrPage

PARAGRAPH_PITCH = 1.25  # a line this much further below the last than the page's usual pitch starts a paragraph
_CONTROL = dict.fromkeys(map(ord, "\x00"), None)
_HYPHEN = re.compile(r"(\w*)[\x02\ufffe\u00ad][ \t]*(?:\r?\n)?[ \t]*(\w*)")  # PDFium's line-end hyphen marker
_CONJUNCTIONS = frozenset("och eller samt resp respektive till und oder bzw sowie and or".split())
OCR_BODY = 0.12  # an OCR'd line whose size is this close to the usual one (a share of it) is body text
_BROKEN = re.compile(r"(\w*[^\W\d_])-$")  # a word broken at the line's end


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


def page_lines(page, number: int, pdfium_c) -> list[Line]:
    textpage = page.get_textpage()
    try:
        text = textpage.get_text_range()
        height = page.get_height()
        out = []
        for m in re.finditer(r"[^\r\n]+", text):
            line = dehyphenate(m.group()).translate(_CONTROL).strip()
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


def _mark_paragraphs(out: list[Line]) -> None:
    """A line starts a paragraph where it sits further below the last than the page's usual pitch, above the
    last (a new column) or at a new size."""
    pitches = [a.bottom - b.bottom for a, b in zip(out, out[1:])]
    usual = statistics.median([x for x in pitches if x > 0] or [0.0])
    for ln, pitch, prev in zip(out[1:], pitches, out):
        ln.paragraph = pitch > PARAGRAPH_PITCH * usual or pitch <= 0 or ln.size != prev.size


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
        joined = dehyphenate(f"{m.group(1)}\x02{head}")
        ln.text, nxt.text = ln.text[: m.start()] + joined, rest


def has_image(page, pdfium_c) -> bool:
    return any(True for _ in page.get_objects(filter=[pdfium_c.FPDF_PAGEOBJ_IMAGE], max_depth=2))


def dehyphenate(text: str) -> str:
    """PDFium's line-end hyphen marker: the word joined, or a real hyphen kept (below)."""

    def join(m: re.Match) -> str:
        before, after = m.group(1), m.group(2)
        if after.lower() in _CONJUNCTIONS:
            return f"{before}- {after}"  # "hälso- och sjukvård"
        if before[-1:].isupper() or before[-1:].isdigit() or before.lower() == "icke" or after[:1].isdigit():
            return f"{before}-{after}"  # "CE-märkning", "2-etylhexyl", "icke-joniserande"
        return before + after

    return _HYPHEN.sub(join, text)


def body_size(lines: list[Line]) -> float:
    """The font size most characters have."""
    weight = Counter()
    for ln in lines:
        weight[ln.size] += len(ln.text)
    return weight.most_common(1)[0][0] if weight else 0.0
