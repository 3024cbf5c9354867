"""The file formats ragkit reads, by suffix: their names and how their files are read. Data only: the parsers
are in ragkit/ingest/parse.py (``PARSERS`` pairs each format here with its parser by name), so that the
configuration and the CLI's help know the formats without importing the PDF and Word libraries."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class FileFormat:
    name: str
    binary: bool = False  # read as bytes (PDF, DOCX), not decoded text
    corpus: bool = False  # one document per line (BEIR corpus.jsonl)
    scans: bool = False  # its pages may be pictures of text, read by OCR (PDF, images)
    default: bool = True  # among the default include globs (pictures only when given or included)


MARKDOWN, HTML, TEXT = FileFormat("Markdown"), FileFormat("HTML"), FileFormat("plain text")
# every format ragkit reads, by file suffix: a new format is a line here and its parser in parse.py (the default
# include globs are these suffixes)
FORMATS: dict[str, FileFormat] = {
    ".md": MARKDOWN,
    ".markdown": MARKDOWN,
    ".txt": TEXT,
    ".text": TEXT,
    ".rst": FileFormat("reStructuredText"),
    ".html": HTML,
    ".htm": HTML,
    ".jsonl": FileFormat("BEIR jsonl", corpus=True),
    ".pdf": FileFormat("PDF", binary=True, scans=True),
    ".docx": FileFormat("DOCX", binary=True),
    **dict.fromkeys((".png", ".jpg", ".jpeg", ".tif", ".tiff"), FileFormat("image", True, scans=True, default=False)),
}
DEFAULT_INCLUDE = [f"*{suffix}" for suffix, f in FORMATS.items() if f.default]
