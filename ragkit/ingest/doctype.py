"""doc_type per document: front matter, then the --doc-type flag, then keywords."""

from __future__ import annotations

import re
from typing import Any

# checked in order; the first rule whose keywords appear in path or title wins
RULES: list[tuple[str, tuple[str, ...]]] = [
    ("law", ("gesetz", "verordnung", "statute", "laws", "law", "legal", "act", "bgb", "sfs", "paragraf", "regulation")),
    ("contract", ("contract", "vertrag", "agreement", "vereinbarung", "nda", "terms")),
    ("policy", ("policy", "policies", "richtlinie", "guideline", "code-of-conduct", "compliance")),
    ("paper", ("paper", "papers", "arxiv", "abstract", "journal", "proceedings", "study", "thesis")),
    ("notes", ("notes", "note", "journal", "diary", "meeting", "minutes", "notiz", "protokoll", "todo")),
    (
        "technical",
        (
            "api",
            "spec",
            "specification",
            "manual",
            "docs",
            "doc",
            "guide",
            "reference",
            "architecture",
            "readme",
            "howto",
            "tutorial",
            "book",
            "src",
            "install",
            "config",
            "adr",
        ),
    ),
]


def infer_doc_type(metadata: dict[str, Any], flag: str | None, path: str, title: str) -> str:
    for key in ("doc_type", "type"):
        val = metadata.get(key)
        if isinstance(val, str) and val.strip():
            return val.strip().lower()
    if flag:
        return flag
    words = set(re.split(r"[^a-zäöüß0-9]+", f"{path} {title}".lower()))
    for doc_type, keys in RULES:
        if any(k in words for k in keys):
            return doc_type
    return "unknown"
