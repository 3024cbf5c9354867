"""Word (DOCX) → the format-independent ``RawDoc`` (python-docx).

The body is read in order, paragraphs and tables alike. Paragraph styles "Heading 1" … "Heading 9" (and
"Title") become the section tree; list paragraphs are kept as "- item" lines; a table becomes one block, a
line per row with its cells joined by " | ". A DOCX file has no lines, so "lines" are its non-empty
paragraphs and table rows, numbered from 1. The core properties (title, author, subject, keywords, created,
modified) become document metadata: ``--filter author=…`` matches them, and the modified (else created)
date is the document date of date filters.
"""

from __future__ import annotations

import io
import re
import zipfile

from ragkit.ingest.raw import ParseError, RawDoc, RawHeading
from ragkit.records import Block

_HEADING = re.compile(r"(?:heading|überschrift|rubrik)\s*(\d)", re.IGNORECASE)  # English, German, Swedish Word


def parse_docx(data: bytes) -> RawDoc:
    import docx
    from docx.opc.exceptions import PackageNotFoundError
    from docx.table import Table

    try:
        document = docx.Document(io.BytesIO(data))
    except (PackageNotFoundError, zipfile.BadZipFile, KeyError, ValueError) as exc:
        raise ParseError(f"not a readable DOCX file ({exc})") from exc
    meta = _metadata(document.core_properties)
    raw = RawDoc(title=meta.get("title"), metadata=meta)
    line = 0
    for part in document.iter_inner_content():
        if isinstance(part, Table):
            rows = [" | ".join(_cells(row)) for row in part.rows]
            rows = [r for r in rows if r.strip(" |")]
            if rows:
                raw.items.append(Block("\n".join(rows), line + 1, line + len(rows)))
                line += len(rows)
            continue
        text = " ".join(part.text.split())
        if not text:
            continue
        line += 1
        style = part.style.name if part.style is not None else ""
        level = _level(style)
        if level:
            raw.items.append(RawHeading(level, text, line))
            if level == 1 and not raw.title and style.lower() == "title":
                raw.title = text
        elif style.lower().startswith("list") or part._p.pPr is not None and part._p.pPr.numPr is not None:
            raw.items.append(Block(f"- {text}", line, line))
        else:
            raw.items.append(Block(text, line, line))
    raw.line_count = line
    return raw


def _level(style: str) -> int:
    if style.lower() == "title":
        return 1
    m = _HEADING.match(style)
    return int(m.group(1)) if m else 0


def _cells(row) -> list[str]:
    """A row's cell texts, a merged cell once."""
    out, seen = [], set()
    for cell in row.cells:
        if id(cell._tc) in seen:
            continue
        seen.add(id(cell._tc))
        out.append(" ".join(cell.text.split()))
    return out


def _metadata(props) -> dict:
    meta: dict = {}
    for name in ("title", "author", "subject", "keywords", "category"):
        value = " ".join((getattr(props, name, None) or "").split())
        if value:
            meta[name] = value
    for name in ("created", "modified"):
        value = getattr(props, name, None)
        if value is not None:
            meta[name] = value.date().isoformat()
    if meta.get("modified") or meta.get("created"):
        meta["date"] = meta.get("modified") or meta["created"]  # the document date of date filters
    return meta
