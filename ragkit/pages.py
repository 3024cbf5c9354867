"""A PDF page as a picture, with the text an answer quotes marked on it: what the search page shows when a
passage of a PDF is opened (``GET /v1/documents/{path}/pages/{n}.png?mark=…``).

PDFium (pypdfium2) renders the page; the quoted text is found on the page's own text layer, a few words at a time
(a quote's line-end hyphens were joined and its spaces normalised, so the whole rarely matches the page's text as
it is), on a scanned page among the words OCR read there (their boxes, which ragkit/ingest/ocr.py keeps: the
caller's ``scanned``), and each place found is painted over in a translucent yellow. Pictures are kept in
``$RAGKIT_CACHE/pages/``, named by the file's content hash, the page, the scale and the marked text: a page is
rendered once however often it is opened. The folder is held under ``CACHE_BYTES`` (256 MB;
``RAGKIT_PAGE_CACHE_MB``), the least recently used pictures going first.
"""

from __future__ import annotations

import hashlib
import io
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ragkit.cache import cache_root
from ragkit.errors import BadQuery, UnknownId

Scanned = Callable[[Any, str, int], list[tuple[float, float, float, float]]]  # a scanned page's places of a mark
SCALE = 1.5  # 108 dpi: an A4 page 893 × 1263 pixels
WORDS = 5  # the quote is looked for in runs of this many words
MARK = (255, 210, 77, 110)  # RGBA over the page
CACHE_BYTES = int(os.environ.get("RAGKIT_PAGE_CACHE_MB", "256")) << 20  # the pictures kept, at most


def render_page(source: Path, content_hash: str, number: int, mark: str = "", scanned: Scanned | None = None) -> bytes:
    """Page ``number`` (1-based) of the PDF at ``source`` as PNG bytes, ``mark``'s text marked (on a page
    without a text layer by ``scanned(page, mark, WORDS)``: the boxes of the words OCR read there)."""
    digest = hashlib.sha1(f"{content_hash}:{number}:{SCALE}:{mark}".encode()).hexdigest()[:24]
    folder = cache_root() / "pages"
    cached = folder / f"{digest}.png"
    try:
        data = cached.read_bytes()
        os.utime(cached)  # (recently used: kept longest)
        return data
    except OSError:
        pass
    data = _render(source, number, mark, scanned)
    folder.mkdir(parents=True, exist_ok=True)
    part = cached.with_suffix(f".{os.getpid()}.part")
    part.write_bytes(data)
    part.replace(cached)
    prune(folder, CACHE_BYTES)
    return data


def prune(folder: Path, limit: int) -> None:
    """Keep the pictures in ``folder`` under ``limit`` bytes, the least recently used going first: a page marked
    with ever new text (any caller may ask for any mark) cannot fill the disk."""
    found = []
    for p in folder.glob("*.png"):
        try:
            st = p.stat()
        except OSError:
            continue
        found.append((st.st_mtime_ns, st.st_size, p))
    total = sum(size for _, size, _ in found)
    for _, size, p in sorted(found):
        if total <= limit:
            break
        p.unlink(missing_ok=True)
        total -= size


def _render(source: Path, number: int, mark: str, scanned: Scanned | None) -> bytes:
    import pypdfium2 as pdfium
    from PIL import Image, ImageDraw

    try:
        pdf = pdfium.PdfDocument(str(source))
    except (pdfium.PdfiumError, OSError) as exc:
        raise UnknownId(f"cannot open {source.name} as a PDF: {exc}") from exc
    try:
        if not 1 <= number <= len(pdf):
            raise BadQuery(f"{source.name} has pages 1–{len(pdf)}, not {number}")
        page = pdf[number - 1]
        image = page.render(scale=SCALE).to_pil().convert("RGBA")
        rects = _places(page, mark, scanned) if mark.strip() else []
        if rects:
            overlay = Image.new("RGBA", image.size, (0, 0, 0, 0))
            draw = ImageDraw.Draw(overlay)
            height = page.get_height()
            for left, bottom, right, top in rects:
                draw.rectangle(
                    [left * SCALE, (height - top) * SCALE, right * SCALE, (height - bottom) * SCALE], fill=MARK
                )
            image = Image.alpha_composite(image, overlay)
        out = io.BytesIO()
        image.convert("RGB").save(out, format="PNG", optimize=True)
        return out.getvalue()
    finally:
        pdf.close()


def _places(page, mark: str, scanned: Scanned | None) -> list[tuple[float, float, float, float]]:
    """The rectangles (PDF points) of the page's text where runs of ``WORDS`` words of ``mark`` stand; on a
    scanned page, of the words OCR read there (their boxes, from the OCR cache)."""
    words = re.findall(r"\S+", mark)
    textpage = page.get_textpage()
    rects: list[tuple[float, float, float, float]] = []
    if textpage.count_chars() == 0:
        textpage.close()
        return scanned(page, mark, WORDS) if scanned is not None else []
    try:
        for start in range(0, max(len(words) - WORDS, 0) + 1, WORDS):
            run = " ".join(words[start : start + WORDS])
            if len(run) < 4:
                continue
            searcher = textpage.search(run, match_case=False, match_whole_word=False)
            found = searcher.get_next()
            if found:
                index, count = found
                n = textpage.count_rects(index, count)
                rects += [textpage.get_rect(i) for i in range(n)]
            searcher.close()
    finally:
        textpage.close()
    return rects
