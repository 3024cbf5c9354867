"""PNG, JPEG and TIFF files given to ``ragkit index``: a scan as a picture, each frame a page read by OCR
(ragkit/ingest/ocr.py) and then cut into lines, headings and paragraphs as a scanned PDF page is
(``ragkit.ingest.pdf.assemble``). Pictures are read when given directly or by ``--include``, not from a
folder by default (a folder's logos and figures are no documents)."""

from __future__ import annotations

import hashlib
import io

from ragkit.ingest import ocr as ocr_engine
from ragkit.ingest.ocr import OcrSettings, OcrUnavailable, PageJob
from ragkit.ingest.pdf import assemble
from ragkit.ingest.raw import ParseError, RawDoc

DEFAULT_DPI = 300  # a picture that does not say its resolution


def parse_image(data: bytes, ocr: OcrSettings | None = None) -> RawDoc:
    """The picture's frames as pages; without OCR (``ocr`` None or no engine) every page is unread."""
    from PIL import Image, UnidentifiedImageError

    try:
        image = Image.open(io.BytesIO(data))
        count = getattr(image, "n_frames", 1)
    except (UnidentifiedImageError, OSError, ValueError) as exc:
        raise ParseError(f"not a readable picture ({exc})") from exc
    dpi = image.info.get("dpi", (DEFAULT_DPI, DEFAULT_DPI))[0] or DEFAULT_DPI
    pages = list(range(1, count + 1))
    meta: dict = {"pages": count}
    read = {}
    if ocr is not None:
        try:
            ocr_engine.engine()
        except OcrUnavailable:
            pass
        else:
            try:
                read = dict(zip(pages, ocr_engine.read_pages(_jobs(image, round(float(dpi))), ocr)))
            except (OSError, ValueError) as exc:  # a frame that does not decode
                raise ParseError(f"not a readable picture ({exc})") from exc
    return assemble([], count, meta, [], pages, [], read)


def _jobs(image, dpi: int):
    """A job per frame, each decoded only when the reading gets to it (a 500-page TIFF is never whole in
    memory); a frame below ``ocr.MIN_DPI`` drawn larger."""
    from PIL import Image, ImageSequence

    for frame in ImageSequence.Iterator(image):
        grey = frame.convert("L")
        if dpi < ocr_engine.MIN_DPI:
            scale = ocr_engine.MIN_DPI / max(dpi, 1)
            grey = grey.resize((round(grey.width * scale), round(grey.height * scale)), Image.BICUBIC)
        at = max(dpi, ocr_engine.MIN_DPI)
        key = ocr_engine.page_key(hashlib.sha256(grey.tobytes()).digest(), at)
        yield PageJob(key, lambda grey=grey: grey, at)
