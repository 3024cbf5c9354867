"""The format-independent shape every parser returns (``RawDoc``: headings and blocks in file order, with
their line numbers), and the error a parser raises for a file that is not what its format promises."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from ragkit.records import Block


@dataclass
class RawHeading:
    level: int
    text: str
    line: int


@dataclass
class RawDoc:
    """Format-independent result: headings and blocks in file order."""

    title: str | None
    metadata: dict[str, Any]
    items: list[RawHeading | Block] = field(default_factory=list)
    line_count: int = 0
    page_starts: list[int] | None = None  # paged formats (PDF): the first line of each page
    warnings: list[str] = field(default_factory=list)  # what could not be read (the rest is indexed)


class ParseError(Exception):
    """The file's content is not what its format promises; it is skipped."""


def paragraphs(lines: list[str], first_line: int) -> Iterator[Block]:
    """Blank-line separated paragraphs; ``first_line`` is the number of lines[0]."""
    buf: list[str] = []
    start = 0
    for i, line in enumerate(lines):
        if line.strip():
            if not buf:
                start = first_line + i
            buf.append(line.rstrip())
        elif buf:
            yield Block("\n".join(buf), start, start + len(buf) - 1)
            buf = []
    if buf:
        yield Block("\n".join(buf), start, start + len(buf) - 1)


# ---------------------------------------------------------------- markdown
