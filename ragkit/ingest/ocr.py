"""OCR: the text of a page that has none (a scan, a fax, a photographed letter), with the place of every word.

Tesseract reads the page (through ``tesserocr``, which keeps one engine per thread loaded in this process: 7× the
speed of calling the ``tesseract`` program per page, ``scripts/bench_ocr.py engines``), with the German, Swedish
and English data Debian ships (``tesseract-ocr-deu``, ``-swe``, ``-eng``; found under ``TESSDATA_PREFIX`` or
Debian's folders). A page is rendered at ``DPI`` in grey; Tesseract's own layout analysis straightens a slightly
skewed page, and a page on its side or upside down (read with little confidence) is turned by its orientation
(Tesseract's ``osd`` data) and read again. The language of a page is ``OcrSettings.lang`` ("deu", "swe+eng", …)
or, by default, found: the first page read with all three, each later one in the language found so far, read
again when its own text turns out another.

What a page gives is kept by the page's content hash in ``$RAGKIT_CACHE/ocr/`` (JSON): a re-index reads no page
twice, a changed file's unchanged pages included, and the page view finds a quote's words on the scanned image
by their boxes (ragkit/pages.py). Pages are read on every core (``read_pages``) with at most two pages per
thread rendered ahead, so memory stays bounded however long the scan.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import threading
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from ragkit.cache import cache_root
from ragkit.extras import install_line
from ragkit.text import detect_language

DPI = 300  # render scale of a page without a picture's own resolution (a vector drawing of text)
MIN_DPI, MAX_DPI = 200, 400  # a scan is read at its own resolution within these (a fax's 100 dpi drawn at 200)
FORMAT = 2  # of a cached page: a change here or in the engine reads pages again
LANGUAGES = {"de": "deu", "sv": "swe", "en": "eng"}  # ragkit's language → Tesseract's data
ALL = "deu+swe+eng"
LOW_CONFIDENCE = 60.0  # a page read with less (0–100) may lie on its side: its orientation is checked
MIN_WORDS = 30  # a page's text tells its language from this many words on
FIX = (
    f"{install_line('ocr')} and the Debian packages tesseract-ocr-deu tesseract-ocr-swe tesseract-ocr-eng "
    "(apt-get install …)"
)
TESSDATA_DIRS = (
    "/usr/share/tesseract-ocr/5/tessdata",
    "/usr/share/tesseract-ocr/4.00/tessdata",
    "/usr/share/tessdata",
    "/usr/local/share/tessdata",
)


@dataclass
class Word:
    text: str
    box: tuple[float, float, float, float]  # left, bottom, right, top in PDF points (y upwards, as PDFium's)
    confidence: float  # 0–100


@dataclass
class OcrLine:
    text: str
    box: tuple[float, float, float, float]  # as Word.box
    paragraph: bool  # Tesseract starts a paragraph (or a block) here
    words: list[Word] = field(default_factory=list)
    size: float = 0.0  # the font's size in points, as Tesseract estimates it (the median of its words')


@dataclass
class OcrPage:
    lines: list[OcrLine]
    confidence: float  # the mean of its words', 0–100 (0: no words)
    language: str  # Tesseract's data it was read with ("deu")
    width: float  # the page in PDF points
    height: float
    rotated: int = 0  # degrees the page was turned (counter-clockwise) before reading (0, 90, 180, 270)

    def to_json(self) -> dict[str, Any]:
        return {"format": FORMAT, **asdict(self)}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> OcrPage:
        lines = [
            OcrLine(
                str(ln["text"]),
                tuple(float(x) for x in ln["box"]),
                bool(ln["paragraph"]),
                [Word(str(w["text"]), tuple(float(x) for x in w["box"]), float(w["confidence"])) for w in ln["words"]],
                float(ln.get("size", 0.0)),
            )
            for ln in data["lines"]
        ]
        return cls(lines, float(data["confidence"]), str(data["language"]), float(data["width"]),
                   float(data["height"]), int(data.get("rotated", 0)))  # fmt: skip


@dataclass(frozen=True)
class OcrSettings:
    """How pages without text are read: ``lang`` "auto" (found per page) or Tesseract's names ("deu",
    "swe+eng"); ``workers`` threads (0: every core)."""

    lang: str = "auto"
    workers: int = 0
    progress: Callable[[bool], None] | None = field(default=None, compare=False)  # after each page (cached?)


class OcrUnavailable(Exception):
    """No OCR engine here (``tesserocr`` or the language data missing): pages without text are not read."""


@lru_cache(maxsize=1)
def tessdata() -> Path | None:
    """The folder with Tesseract's language data: ``TESSDATA_PREFIX``, else Debian's."""
    env = os.environ.get("TESSDATA_PREFIX")
    for folder in ([env, str(Path(env) / "tessdata")] if env else []) + list(TESSDATA_DIRS):
        if folder and (Path(folder) / "eng.traineddata").is_file():
            return Path(folder)
    return None


@lru_cache(maxsize=1)
def engine() -> str:
    """The engine's name and version ("tesseract 5.5.4"), or ``OcrUnavailable`` saying what is missing and the
    command that fixes it."""
    try:
        import tesserocr
    except ImportError as exc:
        raise OcrUnavailable(f"tesserocr is not installed: {FIX}") from exc
    folder = tessdata()
    if folder is None:
        raise OcrUnavailable(f"no Tesseract language data (eng.traineddata) in {', '.join(TESSDATA_DIRS)}: {FIX}")
    missing = [name for name in LANGUAGES.values() if not (folder / f"{name}.traineddata").is_file()]
    if missing:
        raise OcrUnavailable(f"no Tesseract data for {', '.join(missing)} in {folder}: {FIX}")
    return "tesseract " + tesserocr.tesseract_version().split()[1]


def available() -> str | None:
    """None where OCR works here, else why not (with the fix)."""
    try:
        engine()
    except OcrUnavailable as exc:
        return str(exc)
    return None


def page_key(content: bytes, dpi: int = DPI) -> str:
    """The cache key of a page: its content (the page's images and their placement), the engine and the scale
    (the language it was read in is kept with it: ``read_pages`` reads a page again for another)."""
    head = f"{FORMAT}:{engine()}:{dpi}:".encode()
    return hashlib.sha256(head + content).hexdigest()[:32]


def _cache_file(key: str) -> Path:
    return cache_root() / "ocr" / key[:2] / f"{key}.json"


def cached(key: str) -> OcrPage | None:
    try:
        data = json.loads(_cache_file(key).read_text(encoding="utf-8"))
        return OcrPage.from_json(data) if data.get("format") == FORMAT else None
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _keep(key: str, page: OcrPage) -> None:
    path = _cache_file(key)
    path.parent.mkdir(parents=True, exist_ok=True)
    part = path.with_suffix(f".{os.getpid()}.{threading.get_ident()}.part")
    part.write_text(json.dumps(page.to_json(), ensure_ascii=False), encoding="utf-8")
    part.replace(path)


_LOCAL = threading.local()


def _api(lang: str):
    """This thread's engine for ``lang`` (loading one takes ~0.2 s: each thread keeps one per language)."""
    import tesserocr

    apis = getattr(_LOCAL, "apis", None)
    if apis is None:
        apis = _LOCAL.apis = {}
    if lang not in apis:
        apis[lang] = tesserocr.PyTessBaseAPI(path=str(tessdata()) + "/", lang=lang, psm=tesserocr.PSM.AUTO)
    return apis[lang]


def recognise(image, lang: str, points_per_pixel: float) -> OcrPage:
    """One page image (PIL, grey) read in ``lang``; boxes turned into PDF points (``points_per_pixel``)."""
    from tesserocr import RIL, iterate_level

    height, width = image.height * points_per_pixel, image.width * points_per_pixel
    api = _api(lang)
    api.SetImage(image)
    api.SetSourceResolution(round(72.0 / points_per_pixel))
    api.Recognize()
    lines: list[OcrLine] = []
    sizes: list[list[float]] = []
    confidences: list[float] = []
    iterator = api.GetIterator()
    if iterator is not None:
        for r in iterate_level(iterator, RIL.WORD):
            try:
                text = (r.GetUTF8Text(RIL.WORD) or "").strip()
            except RuntimeError:  # (an empty word: "No text returned")
                continue
            box = r.BoundingBox(RIL.WORD)
            if not text or box is None:
                continue
            left, top, right, bottom = (v * points_per_pixel for v in box)
            word = Word(text, (left, height - bottom, right, height - top), float(r.Confidence(RIL.WORD)))
            confidences.append(word.confidence)
            if r.IsAtBeginningOf(RIL.TEXTLINE) or not lines:
                para = r.IsAtBeginningOf(RIL.PARA) or r.IsAtBeginningOf(RIL.BLOCK)
                lines.append(OcrLine("", word.box, bool(para)))
                sizes.append([])
            line = lines[-1]
            line.words.append(word)
            sizes[-1].append(float((r.WordFontAttributes() or {}).get("pointsize") or 0.0))
            line.box = (min(line.box[0], word.box[0]), min(line.box[1], word.box[1]),
                        max(line.box[2], word.box[2]), max(line.box[3], word.box[3]))  # fmt: skip
    for line, found in zip(lines, sizes):
        line.size = sorted(found)[len(found) // 2] if found else 0.0
        if lang != "eng":
            _paragraph_signs(line.words)
        line.text = " ".join(w.text for w in line.words)
    mean = sum(confidences) / len(confidences) if confidences else 0.0
    return OcrPage(lines, round(mean, 1), lang, width, height)


_NUMBER = re.compile(r"^\(?\d{1,4}\s?[a-z]?[,.]?$|^\d{1,4}\s?[a-z]?\s?[-–—]\s?\d{1,4}\s?[a-z]?$")  # "3", "5 a", "6–15"
_SIGN = {"$": "§", "8": "§", "S": "§", "&": "§", "$$": "§§", "8S": "§§", "S8": "§§", "88": "§§", "SS": "§§", "$S": "§§",
         "S$": "§§", "8$": "§§", "$8": "§§"}  # fmt: skip
_GLUED = re.compile(r"^(\d{1,4}\s?[a-z]?)\$$")  # "1$": "1 §"


_CITED = re.compile(r"^(Abs|Satz|Nr|S|Buchst|Halbsatz|st|stycket|punkt|kap)\b\.?", re.I)  # "§ 4 Abs. 2"


def _next(words: list[Word], n: int, ahead: int) -> str:
    return words[n + ahead].text if n + ahead < len(words) else ""


def _paragraph_signs(words: list[Word]) -> None:
    """Tesseract's German and Swedish models have no "§" (Debian's data): they read it "$", "8" or "S" ("3 8",
    "6-15 8S", "4-6 $$", "1$"). In law text a "§" follows a number ("3 §", "6–15 §§") or stands before one
    ("§ 3", "§§ 3 bis 5"): those readings are turned back into "§" (``scripts/bench_ocr.py`` counts them)."""
    for n, w in enumerate(words):
        before = words[n - 1].text if n else ""
        after = words[n + 1].text if n + 1 < len(words) else ""
        if w.text.startswith("$") and w.text.rstrip(".,;:") in _SIGN:
            w.text = _SIGN[w.text.rstrip(".,;:")] + w.text[len(w.text.rstrip(".,;:")) :]
        elif _SIGN.get(w.text.rstrip(".,;:")) and (
            _NUMBER.match(before)
            or (_NUMBER.match(after) and (n == 0 or w.text == "&" or _CITED.match(_next(words, n, 2))))
        ):
            core = w.text.rstrip(".,;:")
            w.text = _SIGN[core] + w.text[len(core) :]
        else:
            m = _GLUED.match(w.text)
            if m:
                w.text = f"{m.group(1)} §"


def _orientation(image) -> int:
    """Degrees to turn ``image`` counter-clockwise so that its text stands upright (Tesseract's ``osd``), 0 if
    unsure."""
    import tesserocr

    if not (tessdata() / "osd.traineddata").is_file():
        return 0
    with tesserocr.PyTessBaseAPI(path=str(tessdata()) + "/", lang="osd", psm=tesserocr.PSM.OSD_ONLY) as api:
        api.SetImage(image)
        found = api.DetectOrientationScript()
    if not found or found.get("orient_conf", 0.0) < 2.0:
        return 0
    return int(found.get("orient_deg", 0)) % 360


def read_image(image, settings: OcrSettings, lang: str, points_per_pixel: float) -> OcrPage:
    """Read one page image: in ``lang``; turned upright first when read with little confidence; read again in
    its own language (``settings.lang`` "auto") when its text says another clearly (``MIN_WORDS`` at least)."""
    page = recognise(image, lang, points_per_pixel)
    turn = _orientation(image) if page.confidence < LOW_CONFIDENCE else 0
    if turn:
        upright = image.rotate(turn, expand=True)  # (PIL turns counter-clockwise, as OSD's angle means)
        again = recognise(upright, lang, points_per_pixel)
        if again.confidence > page.confidence:
            page, image, again.rotated = again, upright, turn
    text = " ".join(ln.text for ln in page.lines)
    if settings.lang == "auto" and len(text.split()) >= MIN_WORDS:
        own = LANGUAGES[detect_language(text)]
        if own != lang:
            again = recognise(image, own, points_per_pixel)
            if again.confidence >= page.confidence - 1.0:
                again.rotated, page = page.rotated, again
    return page


@dataclass
class PageJob:
    """One page to read: its cache ``key`` and how to draw it (``render()`` → a PIL image in grey at ``dpi``;
    not called when the cache has the page)."""

    key: str
    render: Callable[[], Any]
    dpi: int = DPI  # the scale ``render`` draws at (a picture's own)


def read_pages(
    jobs: Iterable[PageJob],
    settings: OcrSettings,
    hint: str | None = None,
    progress: Callable[[bool], None] | None = None,
) -> Iterator[OcrPage]:
    """Read ``jobs`` in order on ``settings.workers`` threads. Each page is drawn here (PDFium is not
    thread-safe), at most two per thread ahead of the reading, and read on a thread unless the cache has it.
    ``hint``: the document's language as far as known (its pages with text); else the first page is read in
    all three and the language found on one page is the next ones' first guess. ``progress(cached)`` (else
    the settings') after each page."""
    progress = progress or settings.progress
    workers = settings.workers or os.cpu_count() or 1
    guess = {"lang": settings.lang if settings.lang != "auto" else LANGUAGES.get(hint or "", ALL)}

    def one(key: str, image, dpi: int) -> OcrPage:
        try:
            page = read_image(image, settings, guess["lang"], 72.0 / dpi)
        except RuntimeError:  # the engine failed on this page: it stays unread (counted), the file goes on
            return OcrPage([], 0.0, guess["lang"], image.width * 72.0 / dpi, image.height * 72.0 / dpi)
        if settings.lang == "auto":
            guess["lang"] = page.language
        _keep(key, page)
        return page

    with ThreadPoolExecutor(workers, thread_name_prefix="ocr") as pool:
        pending: list[tuple[Future | OcrPage, bool]] = []

        def first() -> OcrPage:
            got, hit = pending.pop(0)
            page = got.result() if isinstance(got, Future) else got
            if progress:
                progress(hit)
            return page

        for job in jobs:
            hit = cached(job.key)
            if hit is not None and settings.lang not in ("auto", hit.language):
                hit = None  # read in another language than asked now
            pending.append(
                (hit, True) if hit is not None else (pool.submit(one, job.key, job.render(), job.dpi), False)
            )
            while len(pending) > 2 * workers:
                yield first()
        while pending:
            yield first()


def find_words(page: OcrPage, mark: str, run: int = 5) -> list[tuple[float, float, float, float]]:
    """The boxes (PDF points) of the words of ``page`` where runs of ``run`` words of ``mark`` stand (a quote
    marked on the scanned image as on a text layer); none on a page that was turned to be read."""
    if page.rotated:
        return []
    words = [w for ln in page.lines for w in ln.words]
    plain = [_plain(w.text) for w in words]
    asked = [_plain(t) for t in mark.split()]
    asked = [t for t in asked if t]
    boxes: list[tuple[float, float, float, float]] = []
    for start in range(0, max(len(asked) - run, 0) + 1, run):
        want = asked[start : start + run]
        if sum(map(len, want)) < 4:
            continue
        for i in range(len(plain) - len(want) + 1):
            if plain[i : i + len(want)] == want:
                boxes += [words[j].box for j in range(i, i + len(want))]
                break
    return boxes


def _plain(text: str) -> str:
    return "".join(ch for ch in text.lower() if ch.isalnum() or ch == "§")
