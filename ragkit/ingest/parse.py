"""The file formats ragkit reads (``PARSERS``, by suffix) and the parsers of the text formats.

Each parser turns a file into a ``RawDoc`` (ragkit/ingest/raw.py): headings and body blocks in file order
with 1-based line numbers of the original file. Text formats: Markdown (ATX/setext headings, YAML front
matter, fenced code kept whole), reStructuredText (underlined/overlined titles), HTML (h1–h6 and block text,
no markup), plain text, and BEIR ``corpus.jsonl`` (one document a line); PDF (ragkit/ingest/pdf.py) and DOCX
(ragkit/ingest/word.py) from their bytes, pictures (ragkit/ingest/image.py) by OCR. The section tree is built from a RawDoc by ragkit/ingest/sections.py.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import PurePosixPath
from typing import Any

from ragkit.ingest.formats import FORMATS, FileFormat
from ragkit.ingest.image import parse_image
from ragkit.ingest.pdf import parse_pdf
from ragkit.ingest.raw import ParseError, RawDoc, RawHeading, paragraphs
from ragkit.ingest.word import parse_docx
from ragkit.records import Block

_FRONT = re.compile(r"\A---[ \t]*\n(.*?\n)?(?:---|\.\.\.)[ \t]*\n", re.S)
# front matter after a stray first line (20 of bundestag/gesetze's 6,636 laws: the law's name, then "---"): only
# "key: value" lines (and their indented continuations) between the markers, so a setext heading is not one
_LATE_FRONT = re.compile(
    r"\A(?P<lead>(?:[^\n]+\n){1,3})---[ \t]*\n(?P<body>(?:[\w-]+:.*\n(?:[ \t]+\S.*\n)*)+)\s*---[ \t]*\n"
)
_ATX = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.+?)[ \t]*#*[ \t]*$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_SETEXT = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")


def _front_matter(text: str) -> tuple[dict[str, Any], int, str | None]:
    """The front matter's metadata, the lines it takes, and why it was not read (invalid YAML, not a mapping):
    the body is indexed either way, without the front matter's lines. Front matter after a stray first line is
    read too; those lines begin the document's title."""
    m = _FRONT.match(text)
    late = None if m else _LATE_FRONT.match(text)
    if not m and not late:
        return {}, 0, None
    lines = (m or late).group(0).count("\n")
    import yaml  # (17 ms to import; only front matter needs it)

    try:
        meta = yaml.safe_load((m.group(1) if m else late.group("body")) or "") or {}
    except yaml.YAMLError as exc:
        where = getattr(exc, "problem_mark", None)
        return (
            {},
            lines,
            f"invalid YAML front matter{f' (line {where.line + 2})' if where else ''}: "
            f"{getattr(exc, 'problem', None) or exc}; metadata ignored",
        )
    if not isinstance(meta, dict):
        return {}, lines, "front matter is not a mapping of keys to values; metadata ignored"
    meta = {str(k): v for k, v in meta.items()}
    if late:  # the stray lines begin the title ("Gesetz / über den Aufenthalt, …" + "und die Integration …")
        key = next((k for k in ("title", "Title") if k in meta), "title")
        meta[key] = " ".join([*late.group("lead").split(), *str(meta.get(key) or "").split()])
    return meta, lines, None


def _clean_inline(text: str) -> str:
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", text)  # links and images → their text
    text = re.sub(r"[*_`]+", "", text)
    return text.strip()


def parse_markdown(text: str) -> RawDoc:
    meta, skip, problem = _front_matter(text)
    lines = text.split("\n")
    doc = RawDoc(title=_meta_title(meta), metadata=meta, line_count=len(lines), warnings=[problem] if problem else [])
    body: list[str] = []
    body_start = skip + 1
    fence: str | None = None

    def flush(upto: int) -> None:
        nonlocal body, body_start
        doc.items.extend(_md_blocks(body, body_start))
        body = []
        body_start = upto + 1

    i = skip
    while i < len(lines):
        line = lines[i]
        lineno = i + 1
        if fence:
            body.append(line)
            if line.strip().startswith(fence):
                fence = None
            i += 1
            continue
        fm = _FENCE.match(line)
        if fm:
            fence = fm.group(1)[0] * 3
            body.append(line)
            i += 1
            continue
        m = _ATX.match(line)
        if m:
            flush(lineno - 1)
            doc.items.append(RawHeading(len(m.group(1)), _clean_inline(m.group(2)), lineno))
            body_start = lineno + 1
            i += 1
            continue
        nxt = lines[i + 1] if i + 1 < len(lines) else ""
        sm = _SETEXT.match(nxt)
        if (
            line.strip()
            and sm
            and (not body or not body[-1].strip())
            and not line.lstrip().startswith(("-", "*", ">", "|"))
        ):
            flush(lineno - 1)
            doc.items.append(RawHeading(1 if sm.group(1)[0] == "=" else 2, _clean_inline(line), lineno))
            body_start = lineno + 2
            i += 2
            continue
        body.append(line)
        i += 1
    flush(len(lines))
    return doc


def _md_blocks(lines: list[str], first_line: int) -> Iterator[Block]:
    """Paragraphs, but a fenced code block stays one block even with blank lines."""
    out: list[str] = []
    start = first_line
    i = 0
    while i < len(lines):
        fm = _FENCE.match(lines[i])
        if fm:
            yield from paragraphs(out, start)
            marker = fm.group(1)[0] * 3
            j = i + 1
            while j < len(lines) and not lines[j].strip().startswith(marker):
                j += 1
            j = min(j, len(lines) - 1)
            code = "\n".join(lines[i : j + 1]).rstrip()
            yield Block(code, first_line + i, first_line + j)
            out, start = [], first_line + j + 1
            i = j + 1
            continue
        out.append(lines[i])
        i += 1
    yield from paragraphs(out, start)


def _meta_title(meta: dict[str, Any]) -> str | None:
    for key in ("title", "Title", "name"):
        val = meta.get(key)
        if isinstance(val, str) and val.strip():
            return val.strip()
    return None


# ---------------------------------------------------------------- reStructuredText

_RST_ADORN = re.compile(r"^([=\-~^\"'`#*+:.!$%&,/;<>?@_|])\1{2,}\s*$")


def parse_rst(text: str) -> RawDoc:
    lines = text.split("\n")
    doc = RawDoc(title=None, metadata={}, line_count=len(lines))
    styles: list[tuple[str, bool]] = []
    body: list[str] = []
    body_start = 1
    i = 0
    while i < len(lines):
        line = lines[i]
        over = _RST_ADORN.match(line)
        # overlined title: adornment, text, adornment
        if (
            over
            and i + 2 < len(lines)
            and lines[i + 1].strip()
            and _RST_ADORN.match(lines[i + 2])
            and lines[i + 2].strip()[0] == line.strip()[0]
        ):
            style, title, lineno, step = (line.strip()[0], True), lines[i + 1].strip(), i + 2, 3
        elif line.strip() and not over and i + 1 < len(lines):
            under = _RST_ADORN.match(lines[i + 1])
            if under and len(lines[i + 1].rstrip()) >= len(line.rstrip()) and not line.startswith(" "):
                style, title, lineno, step = (lines[i + 1].strip()[0], False), line.strip(), i + 1, 2
            else:
                body.append(line)
                i += 1
                continue
        else:
            body.append(line)
            i += 1
            continue
        doc.items.extend(paragraphs(body, body_start))
        if style not in styles:
            styles.append(style)
        doc.items.append(RawHeading(min(styles.index(style) + 1, 6), title, lineno))
        i += step
        body, body_start = [], i + 1
    doc.items.extend(paragraphs(body, body_start))
    return doc


# ---------------------------------------------------------------- HTML

_BLOCK_TAGS = {
    "p",
    "div",
    "li",
    "ul",
    "ol",
    "table",
    "tr",
    "pre",
    "blockquote",
    "section",
    "article",
    "header",
    "footer",
    "br",
    "dd",
    "dt",
    "dl",
    "figcaption",
    "main",
    "nav",
}
_SKIP_TAGS = {"script", "style", "noscript", "template", "svg", "head"}


class _HTMLCollector(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.items: list[RawHeading | Block] = []
        self.title: str | None = None
        self._buf: list[str] = []
        self._start = 1
        self._heading: int | None = None
        self._skip = 0
        self._in_title = False
        self._title_buf: list[str] = []
        self._href: str | None = None

    def _flush(self) -> None:
        text = re.sub(r"[ \t]+", " ", "".join(self._buf))
        text = "\n".join(ln.strip() for ln in text.split("\n") if ln.strip())
        line = self.getpos()[0]
        if text:
            if self._heading:
                self.items.append(RawHeading(self._heading, " ".join(text.split()), self._start))
            else:
                self.items.append(Block(text, self._start, max(self._start, line)))
        self._buf = []

    def handle_starttag(self, tag, attrs):
        if tag in _SKIP_TAGS:
            self._skip += 1
            if tag == "head":
                self._skip -= 1  # keep <title> inside <head>
                return
        if tag == "title":
            self._in_title = True
        elif tag == "a" and not self._heading and not self._skip:
            href = dict(attrs).get("href") or ""
            # links to other files become Markdown links in the text, so references see them
            self._href = href if href and not re.match(r"^[a-z][a-z0-9+.-]*:", href, re.I) else None
            if self._href:
                self._buf.append("[")
        elif re.fullmatch(r"h[1-6]", tag):
            self._flush()
            self._heading = int(tag[1])
            self._start = self.getpos()[0]
        elif tag in _BLOCK_TAGS:
            self._flush()
            self._heading = None  # a block inside an unclosed heading ends it (<h1>Title<p>text…)
            self._start = self.getpos()[0]

    def handle_endtag(self, tag):
        if tag in _SKIP_TAGS and tag != "head":
            self._skip = max(0, self._skip - 1)
        if tag == "a" and self._href:
            self._buf.append(f"]({self._href})")
            self._href = None
        if tag == "title":
            self._in_title = False
            self.title = " ".join("".join(self._title_buf).split()) or None
        elif re.fullmatch(r"h[1-6]", tag):
            self._flush()
            self._heading = None
            self._start = self.getpos()[0]
        elif tag in _BLOCK_TAGS:
            self._flush()
            self._start = self.getpos()[0]

    def handle_data(self, data):
        if self._in_title:
            self._title_buf.append(data)
        elif not self._skip:
            if not self._buf:
                self._start = self.getpos()[0]
            self._buf.append(data)


def parse_html(text: str) -> RawDoc:
    p = _HTMLCollector()
    p.feed(text)
    p.close()
    p._flush()
    return RawDoc(title=p.title, metadata={}, items=p.items, line_count=text.count("\n") + 1)


# ---------------------------------------------------------------- plain text


def parse_text(text: str) -> RawDoc:
    lines = text.split("\n")
    return RawDoc(title=None, metadata={}, items=list(paragraphs(lines, 1)), line_count=len(lines))


# ---------------------------------------------------------------- BEIR jsonl


@dataclass
class JsonlRecord:
    external_id: str
    title: str
    doc: RawDoc
    line: int
    metadata: dict[str, Any]


def parse_beir_jsonl(text: str, first_line: int = 1) -> Iterator[JsonlRecord]:
    """Each line ``{"_id", "title", "text"}``; raises ParseError on anything else. ``first_line``: the number
    of the text's first line in its file (a part of a corpus)."""
    for n, line in enumerate(text.split("\n"), start=first_line):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ParseError(f"line {n}: not JSON ({exc.msg})") from exc
        if not isinstance(obj, dict) or "_id" not in obj or "text" not in obj:
            raise ParseError(f"line {n}: a BEIR corpus line needs _id and text")
        body = str(obj.get("text") or "")
        paras = [p.strip() for p in re.split(r"\n\s*\n", body) if p.strip()] or [body.strip()]
        title = str(obj.get("title") or "").strip()
        meta = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
        doc = RawDoc(title=title or None, metadata=meta, items=[Block(p, n, n) for p in paras if p], line_count=1)
        yield JsonlRecord(str(obj["_id"]), title, doc, n, meta)


@dataclass(frozen=True)
class Parser:
    """How the files of one suffix become documents: a ``FileFormat`` (ragkit/ingest/formats.py: its name, whether
    it is read as bytes, a corpus of one document per line, or pages that may be scans) and its parser."""

    format: FileFormat
    parse: Callable[..., Any]  # the file's text (or bytes) → a RawDoc, or JsonlRecords for a corpus

    @property
    def name(self) -> str:
        return self.format.name

    @property
    def binary(self) -> bool:
        return self.format.binary

    @property
    def corpus(self) -> bool:
        return self.format.corpus

    @property
    def scans(self) -> bool:  # parse(data, ocr): pages without text read by OCR (PDF, images)
        return self.format.scans


_PARSE = {  # each format's parser, by its name in FORMATS
    "Markdown": parse_markdown,
    "HTML": parse_html,
    "plain text": parse_text,
    "reStructuredText": parse_rst,
    "BEIR jsonl": parse_beir_jsonl,
    "PDF": parse_pdf,
    "DOCX": parse_docx,
    "image": parse_image,
}
PARSERS: dict[str, Parser] = {suffix: Parser(f, _PARSE[f.name]) for suffix, f in FORMATS.items()}
TEXT = PARSERS[".txt"]


def format_for(path: str) -> Parser:
    """The format of a file by its suffix (an unknown suffix reads as plain text)."""
    return PARSERS.get(PurePosixPath(path).suffix.lower(), TEXT)
