"""Resolve references and versions across the whole index.

Runs inside the indexing transaction over every document, section and
reference the index holds, so a reference written before its target was
indexed resolves as soon as the target arrives (and unresolves when it goes).
"""

from __future__ import annotations

import posixpath
import re
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from ragkit.extract.refs import slug
from ragkit.legal import heading_key, law_key, law_keys, loose_law_keys
from ragkit.records import Ref

_SWEDISH_LAW = re.compile(r"(lag|balk|förordning)(?:en)?$")  # "arbetsmiljölagen" is "Arbetsmiljölag (1977:1160)"


def _titled(about: list[str], title: str) -> bool:
    """The title names the subject: its words in a row, or one word ("maskin" of "maskinföreskrifterna") that a
    title word starts with."""
    words = re.findall(r"\w+", title.lower())
    if len(about) == 1:
        return any(w.startswith(about[0]) for w in words)
    return " ".join(about) in " ".join(words)


@dataclass
class RefRow:
    id: str
    chunk_id: str
    document_id: str
    kind: str
    raw: str
    target: str | None
    unit: str | None
    numbers: list[str]
    chapter: str | None
    subsection: str | None
    resolved_document_id: str | None = None
    resolved_section_id: str | None = None


def ref_rows(chunk_id: str, document_id: str, refs: list[Ref], id_fn) -> list[RefRow]:
    return [
        RefRow(
            id_fn(chunk_id, str(i), r.raw),
            chunk_id,
            document_id,
            r.kind,
            r.raw,
            r.target,
            r.unit,
            list(r.numbers),
            r.chapter,
            r.subsection,
        )
        for i, r in enumerate(refs)
    ]


class Resolver:
    """Lookup tables over documents and sections (saved with each run: a change to what they hold changes
    ``FORMAT``, so that a reader builds them anew rather than read an older run's)."""

    FORMAT = 1

    def __init__(self, documents: list[dict[str, Any]], sections: list[dict[str, Any]]):
        self.docs = {d["id"]: d for d in documents}
        self.by_source = {d["source_path"]: d["id"] for d in documents}
        self.by_law: dict[str, str] = {}
        loose: dict[str, set[str]] = defaultdict(set)
        for d in sorted(documents, key=lambda d: d["path"] or ""):  # a key two laws share: the first by path
            keys = law_keys(d["title"] or "", d["metadata"] or {})
            for key in keys:
                self.by_law.setdefault(key, d["id"])
            for key in loose_law_keys(keys):
                loose[key].add(d["id"])
        for key, ids in loose.items():  # "BDSG" for "BDSG 2018", unless another law answers to it too
            if len(ids) == 1 and key not in self.by_law:
                self.by_law[key] = next(iter(ids))
        self.sections_of: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for s in sorted(sections, key=lambda s: s["ord"]):
            self.sections_of[s["document_id"]].append(s)
        self.section_by_id = {s["id"]: s for s in sections}
        # the root section's heading often names the law too: "Arbeitszeitgesetz (ArbZG)"
        for doc_id, secs in self.sections_of.items():
            for key in law_keys(secs[0]["heading"] or "", {}):
                self.by_law.setdefault(key, doc_id)
        self._named: dict[str, str | None] = {}  # law_document's answers: laws cite the same few names again and again
        self._stems: dict[str, str] | None = None  # a title word's prefixes (6 letters and more) → its first document
        self._keyed: dict[str, dict[tuple, list[dict[str, Any]]]] = {}  # per document: heading key → its sections

    def _section_with_key(self, doc_id: str, unit: str, number: str, chapter: str | None) -> str | None:
        if doc_id not in self._keyed:  # each document's headings read once (a law cites itself hundreds of times)
            keyed: dict[tuple, list[dict[str, Any]]] = defaultdict(list)
            for s in self.sections_of.get(doc_id, []):
                keyed[heading_key(s["heading"] or "")].append(s)
            self._keyed[doc_id] = keyed
        for s in self._keyed[doc_id].get((unit, number), []):
            if chapter is None or self._in_chapter(s, chapter):
                return s["id"]
        return None

    def _in_chapter(self, section: dict[str, Any], chapter: str) -> bool:
        parent = self.section_by_id.get(section["parent_id"])
        while parent is not None:
            if heading_key(parent["heading"] or "") == ("kap", chapter):
                return True
            parent = self.section_by_id.get(parent["parent_id"])
        return False

    def law_document(self, name: str | None) -> str | None:
        if not name:
            return None
        if name not in self._named:
            self._named[name] = self._law_document(name)
        return self._named[name]

    def _title_stem(self, stem: str) -> str | None:
        """The first document (in the order given) with a title word starting with ``stem``."""
        if self._stems is None:
            self._stems = {}
            for d in self.docs.values():
                for w in re.findall(r"\w+", (d["title"] or "").lower()):
                    for end in range(6, len(w) + 1):
                        self._stems.setdefault(w[:end], d["id"])
        return self._stems.get(stem)

    def _law_document(self, name: str) -> str | None:
        if name.startswith("about:"):  # "i föreskrifterna om radon på arbetsplatser": the one titled so
            about = re.findall(r"\w+", name[6:].lower())
            found = [d["id"] for d in self.docs.values() if _titled(about, d["title"] or "")]
            return found[0] if len(found) == 1 else None
        if name.startswith("name:"):  # "§ 5 des Arbeitszeitgesetzes": match a title by its stem
            word = name[5:].split()[-1].lower()
            stem = _SWEDISH_LAW.sub(r"\1", word) if _SWEDISH_LAW.search(word) else word[:8]  # arbetsmiljölag(en)
            return self._title_stem(stem) if len(stem) >= 6 else None
        return self.by_law.get(law_key(name)) if not name[0].isdigit() else self.by_law.get(name)

    def resolve(self, ref: RefRow) -> tuple[str | None, str | None]:
        """(document id, section id) the reference points at, or Nones."""
        src = self.docs.get(ref.document_id)
        if src is None:
            return None, None
        if ref.kind == "link":
            path, _, anchor = (ref.target or "").partition("#")
            if path:
                target = posixpath.normpath(posixpath.join(posixpath.dirname(src["source_path"]), path))
                doc_id = self.by_source.get(target)
            else:
                doc_id = ref.document_id  # "#anchor" within the same file
            if doc_id is None:
                return None, None
            if anchor:
                for s in self.sections_of.get(doc_id, []):
                    if slug(s["heading"] or "").strip("-") == anchor.lower().strip("-"):
                        return doc_id, s["id"]
            return doc_id, None
        doc_id = self.law_document(ref.target) if ref.target else ref.document_id
        if doc_id is None or not ref.unit or not ref.numbers:
            return doc_id, None
        return doc_id, self._section_with_key(doc_id, ref.unit, ref.numbers[0], ref.chapter)

    def superseded(self) -> dict[str, str]:
        """older document id → id of the document that supersedes it."""
        by_name: dict[str, str] = {}
        for d in self.docs.values():
            for name in (d["id"], d["path"], d["source_path"], d["external_id"]):
                if name:
                    by_name.setdefault(str(name), d["id"])
        out = {}
        for d in self.docs.values():
            target = d.get("supersedes")
            if not target:
                continue
            old = by_name.get(str(target))
            if old is None:  # a relative path, from the superseding file's folder
                old = self.by_source.get(
                    posixpath.normpath(posixpath.join(posixpath.dirname(d["source_path"]), str(target)))
                )
            if old and old != d["id"]:
                out[old] = d["id"]
        return out
