"""A PDF's scanned pages for OCR (ragkit/ingest/ocr.py): the resolution each is read at, what it shows (the OCR
cache's key), the jobs that draw and read them, and where a quote's words stand on one (the page view)."""

from __future__ import annotations

from ragkit.ingest import ocr as ocr_engine
from ragkit.ingest.ocr import OcrPage, OcrSettings, OcrUnavailable, PageJob
from ragkit.text import detect_language


def read_scans(pdf, scans: list[int], settings: OcrSettings, known: list[str], pdfium_c) -> dict[int, OcrPage]:
    """The scanned pages (``scans``, 1-based) read by OCR (``known``: lines of the document's text layer, which
    tell the language); none where no engine is here (the pages stay unread)."""
    try:
        ocr_engine.engine()
    except OcrUnavailable:
        return {}
    text = " ".join(known)
    hint = detect_language(text) if len(text.split()) >= ocr_engine.MIN_WORDS else None
    jobs = []
    for n in scans:
        page = pdf[n - 1]
        dpi = scan_dpi(page, pdfium_c)
        jobs.append(PageJob(ocr_engine.page_key(page_content(page, pdfium_c), dpi), _renderer(pdf, n, dpi), dpi))
    return dict(zip(scans, ocr_engine.read_pages(jobs, settings, hint)))


def _renderer(pdf, number: int, dpi: int):
    return lambda: pdf[number - 1].render(scale=dpi / 72, grayscale=True).to_pil()


def scan_dpi(page, pdfium_c) -> int:
    """The resolution a scanned page is read at: its picture's own (a scan drawn larger than it was taken
    reads worse: 1.5 % of characters wrong at a 200-dpi scan's own resolution, 12 % with noise once drawn at
    300, ``scripts/bench_ocr.py``), within ``ocr.MIN_DPI``..``ocr.MAX_DPI``; ``ocr.DPI`` without a picture."""
    import pypdfium2 as pdfium

    best = 0.0
    for obj in page.get_objects(filter=[pdfium_c.FPDF_PAGEOBJ_IMAGE], max_depth=2):
        if isinstance(obj, pdfium.PdfImage):
            left, bottom, right, top = obj.get_bounds()
            width = obj.get_px_size()[0]
            if right - left > 1:
                best = max(best, width / ((right - left) / 72.0))
    dpi = round(best) if best else ocr_engine.DPI
    return max(ocr_engine.MIN_DPI, min(ocr_engine.MAX_DPI, dpi))


def page_content(page, pdfium_c) -> bytes:
    """What a scanned page shows, as bytes: its size and each image's placement and encoded data (the OCR
    cache's key; the page view finds a page's words by it)."""
    import pypdfium2 as pdfium

    parts = [f"{page.get_width():.2f}x{page.get_height():.2f}".encode()]
    for obj in page.get_objects(filter=[pdfium_c.FPDF_PAGEOBJ_IMAGE], max_depth=2):
        if isinstance(obj, pdfium.PdfImage):
            m = obj.get_matrix()
            parts.append(f"{m.a:.3f},{m.b:.3f},{m.c:.3f},{m.d:.3f},{m.e:.2f},{m.f:.2f}".encode())
            parts.append(bytes(obj.get_data(decode_simple=False)))
    return b"\0".join(parts)


def scanned_places(page, mark: str, run: int) -> list[tuple[float, float, float, float]]:
    """Where runs of ``run`` words of ``mark`` stand on a scanned ``page`` (PDF points): among the words OCR read
    there, from the OCR cache (none where this machine has no engine or the page was never read)."""
    import pypdfium2.raw as pdfium_c

    if ocr_engine.available() is not None:
        return []
    read = ocr_engine.cached(ocr_engine.page_key(page_content(page, pdfium_c), scan_dpi(page, pdfium_c)))
    return ocr_engine.find_words(read, mark, run) if read is not None else []
