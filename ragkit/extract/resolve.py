"""Resolve references and versions across the whole index.

Runs inside the indexing transaction over every document, section and
reference the index holds, so a reference written before its target was
indexed resolves as soon as the target arrives (and unresolves when it goes).
"""

from __future__ import annotations

import posixpath
import re
from collections import defaultdict
from typing import Any

from ragkit.extract.refs import slug
from ragkit.legal import LawTarget, heading_key, law_key, law_keys, loose_law_keys
from ragkit.records import Ref, RefRow

_ARTICLES = {"des", "der", "dem", "den", "die", "das", "eines", "einer", "dieses", "dieser"}
_INFLECTED = ("ens", "es", "en", "er", "em", "s", "n", "e")


def _stem(word: str) -> str:
    """A word lower-cased, "ß" as "ss", without its last ending of ``_INFLECTED`` (leaving three letters or
    more; no "s" cut after an "s"): the same for the name a law is cited by and its title ("Bürgerlichen
    Gesetzbuchs" and "Bürgerliches Gesetzbuch", "Abkommens" and "Abkommen", "arbetsmiljölagen" and
    "Arbetsmiljölag"), and for any other word alike ("Kreditwesen": "kreditwes")."""
    word = word.lower().replace("ß", "ss")
    for tail in _INFLECTED:
        if word.endswith(tail) and len(word) - len(tail) >= 3 and not (tail == "s" and word.endswith("ss")):
            return word[: -len(tail)]
    return word


# a name made only of these names no one law ("§ 1 der Verordnung", "des Gesetzbuchs")
_GENERIC = {
    _stem(w)
    for w in "Gesetz Verordnung Ordnung Gesetzbuch Buch Vertrag Abkommen Übereinkommen Satzung lag förordning".split()
}
# a title going on with these after a one-word name is a narrower thing ("Vergabeverordnung für die Bereiche
# Verteidigung und Sicherheit" is not "die Vergabeverordnung")
_NARROWER = {"für", "nach", "zu", "zum", "zur", "über", "in", "im", "bei", "von", "vom", "auf", "des", "der", "dem"}


def _stems(text: str) -> tuple[str, ...]:
    return tuple(_stem(w) for w in re.findall(r"\w+", text))


_ORDINALS = ("erst", "zweit", "dritt", "viert", "fünft", "sechst", "siebt", "acht", "neunt", "zehnt", "elft", "zwölft")
_ORDINALS += ("dreizehnt", "vierzehnt")
_TAILS = ("gesetzbuch", "verordnung", "ordnung", "gesetz", "buch")  # what a law name's last letter stands for
_YEAR = r"(?:1[89]|20)\d\d"  # "AEG 1994", "SGB 9 2018"


def _tail(name: str) -> str:
    """The last part of a law's name ("gesetz" of "kreditwesengesetz"), "" where it ends in none of ``_TAILS``."""
    return next((t for t in _TAILS if name.endswith(t) and len(name) > len(t)), "")


def _spelled(abbr: str, name: str) -> bool:
    """The abbreviation spells the name: two capital-led parts or more, letters only, the name ending in one of
    ``_TAILS``; the abbreviation's letters in order in the name, its first part at the name's start, its last at
    the name's last part, a middle part's first letter anywhere before that (``KredWG``, ``EnWG``, ``ZPO``,
    ``HGB``; not ``StGB`` for "Soldatengesetz"). Loose: the long title decides among those that spell it."""
    parts = [p.lower() for p in re.findall(r"[A-ZÄÖÜ][a-zäöü]*", abbr)]
    tail = _tail(name)
    if "".join(parts) != abbr.lower() or not tail or len(parts) < 2:
        return False
    last = len(name) - len(tail) + (6 if tail == "gesetzbuch" and parts[-1] == "b" else 0)  # HGB: "buch"
    at = 0
    for k, part in enumerate(parts):
        start = 0 if k == 0 else (last if k == len(parts) - 1 else name.find(part[0], at))
        if start < 0 or start >= len(name) or name[start] != part[0] or (k < len(parts) - 1 and start >= last):
            return False
        at = start + 1
        for letter in part[1:]:
            at = name.find(letter, at) + 1
            if at == 0:
                return False
    return True


_COMMON = {"gesetz", "verordnung", "ordnung", "deutschland", "änderung", "durchführung", "regelung", "bundesrepublik"}


def _covered(title: str, name: str) -> tuple[int, float]:
    """(letters, share): how many letters of the name before its last part ("gesetz") the long title's words
    say, each word (stemmed, five letters or more, not ``_COMMON``, not beginning "gesetz" or "bundes") by its
    longest beginning of five letters or more that stands in the name, and those letters over all the counted
    words' letters: "Gesetz über die Versorgung der Beamten und Richter des Bundes" says "versorgung" and "beamt"
    of "beamtenversorgungsgesetz" (15 letters), "Gesetz über die Versorgung der Opfer des Krieges" "versorgung"
    (10). (0, 0) where that is under half the name, or for a one-word title ending in one of ``_TAILS``
    ("Energiesteuergesetz": a law's own name, said only by an exact match)."""
    words = {w for w in _stems(title) if len(w) >= 5 and w not in _COMMON and not w.startswith(("gesetz", "bundes"))}
    tail = _tail(name)
    if len(_stems(title)) == 1 and title.lower().endswith(_TAILS) or not words:
        return 0, 0.0
    said = set()
    for w in words:
        k = next((k for k in range(len(w), 4, -1) if w[:k] in name), 0)
        if k:
            at = name.index(w[:k])
            said.update(range(at, at + k))
    covered = len(said - set(range(len(name) - len(tail), len(name))))
    if 2 * covered < len(name) - len(tail):
        return 0, 0.0
    return covered, covered / sum(map(len, words))


def _bracketed(title: str) -> list[str]:
    """What the title says in brackets of its own, not in brackets within brackets: "(Jugendarbeitsschutzgesetz
    - JArbSchG)", never "(Anlage C zu dem Gesetz zur Ordnung des Handwerks (Handwerksordnung))", which names the
    law the document belongs to."""
    out, depth, start = [], 0, 0
    for i, ch in enumerate(title):
        if ch == "(":
            depth += 1
            start = i + 1 if depth == 1 else -1  # -1: a bracket within, the outer one is not a name
        elif ch == ")" and depth:
            depth -= 1
            if depth == 0 and start > 0:
                out.append(title[start:i])
    return out


def _titled(about: list[str], title: str) -> bool:
    """The title names the subject: its words in a row, or one word ("maskin" of "maskinföreskrifterna") that a
    title word starts with."""
    words = re.findall(r"\w+", title.lower())
    if len(about) == 1:
        return any(w.startswith(about[0]) for w in words)
    return " ".join(about) in " ".join(words)


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

    FORMAT = 3  # 3: saved as plain data (``state``), not pickled

    def __init__(self, documents: list[dict[str, Any]], sections: list[dict[str, Any]]):
        self.docs = {d["id"]: d for d in documents}
        self.by_source = {d["source_path"]: d["id"] for d in documents}
        self.by_law: dict[str, str] = {}
        loose: dict[str, set[str]] = defaultdict(set)
        ordered = sorted(documents, key=lambda d: d["path"] or "")
        dated: dict[str, set[str]] = defaultdict(set)
        for d in ordered:  # a key two laws share: the first by path, a law's own abbreviation before a title's
            for key in law_keys("", d["metadata"] or {}):  # "(SGB IX)" in the title of a law amending it
                self.by_law.setdefault(key, d["id"])
                dated[re.sub(f" {_YEAR}$", "", key)].add(d["id"])
        for key, ids in dated.items():  # "SGB 9" for "SGB 9 2018", unless another law answers to it too
            if len(ids) == 1:
                self.by_law.setdefault(key, next(iter(ids)))
        for d in ordered:
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
        self._titles: dict[str, list[tuple[tuple[str, ...], str]]] | None = None  # first word → (title stems, id)
        self._abbreviations: dict[str, list[tuple[str, str]]] = {}  # first letter → (abbreviation, id)
        self._old: set[str] | None = None  # documents another supersedes (``_current``)
        self._keyed: dict[str, dict[tuple, list[dict[str, Any]]]] = {}  # per document: heading key → its sections

    def state(self) -> dict[str, Any]:
        """What the resolver holds once built, as plain data (saved with each run as msgpack: no pickle)."""
        return {
            "format": self.FORMAT,
            "documents": list(self.docs.values()),
            "sections": list(self.section_by_id.values()),
            "by_law": self.by_law,
        }

    @classmethod
    def from_state(cls, state: dict[str, Any]) -> Resolver | None:
        """The resolver ``state()`` saved, without building it again (None: another format's)."""
        if state.get("format") != cls.FORMAT:
            return None
        resolver = cls.__new__(cls)
        documents, sections = state["documents"], state["sections"]
        resolver.docs = {d["id"]: d for d in documents}
        resolver.by_source = {d["source_path"]: d["id"] for d in documents}
        resolver.by_law = dict(state["by_law"])
        resolver.sections_of = defaultdict(list)
        for s in sorted(sections, key=lambda s: s["ord"]):
            resolver.sections_of[s["document_id"]].append(s)
        resolver.section_by_id = {s["id"]: s for s in sections}
        resolver._named, resolver._titles, resolver._abbreviations = {}, None, {}
        resolver._old, resolver._keyed = None, {}
        return resolver

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

    def _titled_by(self, name: str) -> str | None:
        """The document a law's name in the text means, case endings aside:
        - the one with that title or with the name in its title's own brackets;
        - else the one title beginning with it (a one-word name: not going on with "für", "über", … — a
          narrower law); a name cut at a line break ("des Lebensmittel-") only so, its title going on with ","
          or "und", and so a coordinated name no title holds whole ("Lebensmittel- und Futtermittelgesetzbuch");
        - "des N-ten Buches Sozialgesetzbuch": that book ("SGB N");
        - else, for a one-word name or a coordinated one taken as one word, the law whose abbreviation spells it
          (``_spelled``) and whose long title says at least half of it; of those saying most of it (within two
          letters) the one saying least else ("KredWG", "Gesetz über das Kreditwesen": "Kreditwesengesetz", which
          no title says; "SAG", "Gesetz zur Sanierung und Abwicklung von Instituten": "Sanierungs- und
          Abwicklungsgesetz").
        Where one title stands for several documents, the current one (``_current``). None where several laws
        answer (federal law has 40 titles beginning "Verordnung über das Berufsbild"), the name says no more than
        "der Verordnung", or is one word of under six letters."""
        raw = re.findall(r"\w+", name)
        while raw and raw[0].lower() in _ARTICLES:
            raw.pop(0)
        words = [_stem(w) for w in raw]
        if not words or set(words) <= _GENERIC or (len(words) == 1 and len(words[0]) < 6):
            return None
        if len(words) == 3 and words[1:] == ["buch", "sozialgesetzbuch"] and words[0] in _ORDINALS:
            return self.by_law.get(f"sgb {_ORDINALS.index(words[0]) + 1}")  # "des Fünften Buches Sozialgesetzbuch"
        if self._titles is None:
            self._index_titles()
        n, first = len(words), tuple(words)
        cut = name.rstrip().endswith("-")
        held = [(t, i) for t, i in self._titles.get(words[0], []) if t[:n] == first]
        exact = [i for t, i in held if t == first]
        if exact and not cut:
            return self._current(exact)
        if cut:
            begun = re.compile(re.escape(name.strip()) + r"(?:,|\s+(?:und|oder|sowie)\b)", re.IGNORECASE)
            held = [(t, i) for t, i in held if begun.match(self.docs[i]["title"] or "")]
        elif n == 1:
            held = [(t, i) for t, i in held if len(t) > 1 and t[1] not in _NARROWER]
        if held:
            return self._current([i for _, i in held]) if len({t for t, _ in held}) == 1 else None
        coordinated = re.match(r"\s*(\w+-)(?:,|\s+(?:und|oder|sowie)\b)", name)  # "Lebensmittel- und Futter…"
        if coordinated:  # cited short: the title going on from its first word as the name does
            found = self._titled_by(coordinated.group(1))
            if found:
                return found
        if (n > 1 and not coordinated) or cut:
            return None
        # one word, or a coordinated name as one ("Sanierungs- und Abwicklungsgesetz": "sanierungsabwicklungsgesetz")
        name = _stem("".join(w for w in raw if w.lower() not in ("und", "oder", "sowie")))
        scored = {}  # of the laws it might mean: those whose title says most of the name (two letters either
        for a, i in self._abbreviations.get(name[0], []):  # way), of them the one whose title says least else
            covered = _covered(self.docs[i]["title"] or "", name) if _spelled(a, name) else (0, 0.0)
            if covered[0]:
                scored[i] = covered
        best = max((c for c, _ in scored.values()), default=0)
        most = sorted(((share, i) for i, (c, share) in scored.items() if c >= best - 2), reverse=True)[:2]
        return most[0][1] if most and (len(most) == 1 or most[0][0] > most[1][0]) else None

    def _current(self, ids: list[str]) -> str:
        """Of documents with one title, the current law: none superseding it, the latest year in its abbreviation
        ("AEG 1994" before "AEG"), the most sections; then the first by path."""
        if self._old is None:
            self._old = set(self.superseded())

        def rank(i: str) -> tuple[bool, int, int]:
            years = re.findall(rf"\b{_YEAR}\b", str((self.docs[i]["metadata"] or {}).get("jurabk") or ""))
            return i not in self._old, int(years[-1]) if years else 0, len(self.sections_of.get(i, ()))

        return max(dict.fromkeys(ids), key=rank)

    def _index_titles(self) -> None:
        """Each document's title and the names in its title's own brackets ("(Jugendarbeitsschutzgesetz -
        JArbSchG)") as stems, by their first word, and the first word of its abbreviations ("EnWG" of "EnWG 2005")
        by their first letter; documents in path order."""
        self._titles = defaultdict(list)
        self._abbreviations = defaultdict(list)
        for d in sorted(self.docs.values(), key=lambda d: d["path"] or ""):
            title = d["title"] or ""
            names = [title] + [b.split(" - ")[0] for b in _bracketed(title)]
            for stems in dict.fromkeys(_stems(t) for t in names):
                if stems:
                    self._titles[stems[0]].append((stems, d["id"]))
            meta = d["metadata"] or {}
            for abbr in sorted({str(meta.get(k) or "").split(" ")[0] for k in ("jurabk", "amtabk", "abbreviation")}):
                if abbr:
                    self._abbreviations[abbr[0].lower()].append((abbr, d["id"]))

    def _law_document(self, target: str) -> str | None:
        law = LawTarget.parse(target)
        if law.kind == "about":  # "i föreskrifterna om radon på arbetsplatser": the one titled so
            about = re.findall(r"\w+", law.text.lower())
            found = [d["id"] for d in self.docs.values() if _titled(about, d["title"] or "")]
            return found[0] if len(found) == 1 else None
        if law.kind == "name":  # "§ 5 des Arbeitszeitgesetzes", "3 kap. 2 § arbetsmiljölagen"
            return self._titled_by(law.text)
        return self.by_law.get(law_key(law.text)) if not law.text[0].isdigit() else self.by_law.get(law.text)

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
