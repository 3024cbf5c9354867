"""Reference detection in chunks: links between files and legal citations (ragkit/legal.py).

Detectors return ``Ref`` records with character offsets; resolution to documents and sections happens in
ragkit/extract/resolve.py once all documents of the index are known.
"""

from __future__ import annotations

import re

from ragkit.legal import find_legal_refs
from ragkit.records import Ref

# ---------------------------------------------------------------- links

_MD_LINK = re.compile(r"(?<!!)\[([^\]\n]+)\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
_HTML_LINK = re.compile(r"""<a\s[^>]*?href\s*=\s*["']([^"']+)["']""", re.I)


def find_links(text: str) -> list[Ref]:
    refs = []
    for m in _MD_LINK.finditer(text):
        refs.append(Ref("link", m.group(0), m.start(), m.end(), target=m.group(2)))
    for m in _HTML_LINK.finditer(text):
        refs.append(Ref("link", m.group(0), m.start(), m.end(), target=m.group(1)))
    return [r for r in refs if not re.match(r"^[a-z][a-z0-9+.-]*:", r.target or "", re.I)]  # no http:, mailto:


def find_refs(text: str) -> list[Ref]:
    return find_links(text) + find_legal_refs(text)


def slug(heading: str) -> str:
    """GitHub-style anchor of a heading."""
    s = heading.strip().lower()
    s = re.sub(r"[^\w\- ]", "", s)
    return s.replace(" ", "-")
