"""Entity spans in German text, where a capital letter marks every noun and so says nothing about names.

What does mark a name in German (laws and policies above all):

- legal citations (``§ 5 Abs. 2 ArbZG``, ``Art. 12 GG``, ``§ 3`` of the document's own law): keyed
  ``"§ 5 arbzg"``, so a citation and the cited section's heading (``§ 5 Ruhezeit`` in the ArbZG) meet;
- law abbreviations and acronyms (``BetrVG``, ``BGBl``, ``EU``: two capitals or more) and law names
  (``Kündigungsschutzgesetz``, ``Bürgerliches Gesetzbuch``);
- institutions (``Bundestag``, ``Bundesagentur für Arbeit``, ``Bundesbeauftragte für den Datenschutz``);
- multi-word names with a capitalised adjective inside a sentence (``Europäische Union``, ``Deutsche
  Demokratische Republik``), which plain German writes in lower case;
- defined terms: ``(im Folgenden „…“)``, quoted terms (``„Verarbeitung“``), and ``X im Sinne dieses
  Gesetzes``.

Everything else capitalised (``Arbeitnehmer``, ``Urlaub``, ``Betriebsrat``) is an ordinary noun.
"""

from __future__ import annotations

import re

from ragkit.legal import LawTarget, find_legal_refs, heading_key

_ARTICLE = {"der", "die", "das", "den", "dem", "des", "ein", "eine", "einer", "eines", "einem", "einen"}
_ROMAN = re.compile(r"[IVXLC]+a?")
_ACRONYM = re.compile(r"\b[A-ZÄÖÜ][A-Za-zÄÖÜäöü]{1,9}\b")
_LAW_NAME = re.compile(r"\b[A-ZÄÖÜ][a-zäöüß]{2,}(?:gesetz|gesetzbuch|verordnung|ordnung)(?:es|s)?\b")
_CIVIL_CODE = re.compile(r"\b(?:Bürgerliche[ns]?|Sozial|Handels|Straf)\s+Gesetzbuch(?:es|s)?\b")
_INSTITUTION = re.compile(
    r"\b(?:Bundes|Landes)(?P<base>tag|rat|regierung|präsident(?:in)?|kanzler(?:in)?|minister(?:ium|in)?|amt|agentur"
    r"|anstalt|beauftragte|verfassungsgericht|arbeitsgericht|sozialgericht|verwaltungsgericht|gerichtshof|finanzhof"
    r"|gericht|bank|wehr|versammlung|datenschutzbeauftragte)(?:es|s|n|r)?"
    r"(?:\s+für\s+(?:den\s+|die\s+|das\s+)?[A-ZÄÖÜ][\wäöüß-]+(?:\s+und\s+(?:den\s+|die\s+|das\s+)?[A-ZÄÖÜ][\wäöüß-]+)?)?"
)
_ADJ_NAME = re.compile(r"\b(?:[A-ZÄÖÜ][a-zäöü]+(?:isch|lich|sch)(?:e|en|er|es|em)\s+){1,2}[A-ZÄÖÜ][\wäöüß-]+")
_NATIONAL = re.compile(
    r"\b(?:Deutsche[nrs]?|Vereinte[nrs]?)\s+(?:[A-ZÄÖÜ][a-zäöü]+(?:e|en|er|es)\s+)?[A-ZÄÖÜ][\wäöüß-]+"
)
_QUOTED = re.compile(r"[„\"“]([^„“”\"\n]{2,80})[“”\"]")
_DEFINED = re.compile(
    r"\b((?:[a-zäöü]+(?:e|en|er|es)\s+)?(?:[A-ZÄÖÜ][\wäöüß-]+\s+){0,2}[A-ZÄÖÜ][\wäöüß-]+)"
    r"\s+im\s+Sinne\s+(?:dieses|dieser)\b"
)


# law words that name no particular law ("durch Bundesgesetz", "eine Rechtsverordnung")
_GENERIC_LAWS = {
    "verordnung",
    "rechtsverordnung",
    "bundesgesetz",
    "landesgesetz",
    "geschäftsordnung",
    "rechtsordnung",
    "verfassungsordnung",
    "grundordnung",
    "bundesrecht",
    "änderungsgesetz",
    "einführungsgesetz",
}


def _genitive_free(word: str) -> str:
    """``Kündigungsschutzgesetzes`` → ``Kündigungsschutzgesetz`` (law names and institutions only)."""
    for tail in ("es", "s"):
        if word.endswith(tail) and re.search(
            r"(gesetz|gesetzbuch|verordnung|ordnung|tag|rat|amt)$", word[: -len(tail)]
        ):
            return word[: -len(tail)]
    return word


def law_name(text: str) -> str | None:
    """The first law name in ``text`` (``Grundgesetz`` in "Grundgesetz für die Bundesrepublik Deutschland")."""
    m = _LAW_NAME.search(text)
    return _genitive_free(m.group(0)) if m else None


def law_key(unit: str, number: str, law: str | None) -> str:
    """The entity key of a cited or headed section: ``("§", "5", "ArbZG")`` → ``"§ 5 arbzg"``."""
    head = "§" if unit == "§" else "art"
    return f"{head} {number} {law}".lower().strip() if law else f"{head} {number}"


def citation_spans(text: str, own_law: str | None) -> list[tuple[int, int, str, str]]:
    """(start, end, surface, key) of the legal citations in ``text``; a citation without a law is the
    document's own (``own_law``); at most five numbers of a range."""
    out = []
    for ref in find_legal_refs(text):
        if not ref.unit or not ref.numbers:
            continue
        law = LawTarget.parse(ref.target) if ref.target else None
        target = _genitive_free(law.text.split()[-1]) if law and law.kind == "name" else ref.target
        for n in ref.numbers[:5]:
            out.append((ref.start, ref.end, ref.raw, law_key(ref.unit, n, target or own_law)))
    return out


def name_spans(text: str, sentence_starts: set[int]) -> list[tuple[int, int, str, str, str]]:
    """(start, end, surface, key surface, type) of German names other than citations."""
    spans: list[tuple[int, int, str, str, str]] = []

    def add(a: int, b: int, kind: str, key_surface: str | None = None) -> None:
        surface = text[a:b].strip()
        if len(surface) > 1 and not any(x <= a < y or a <= x < b for x, y, *_ in spans):
            spans.append((a, a + len(surface), surface, key_surface or surface, kind))

    for m in re.finditer(r"\((?:im\s+[Ff]olgenden|nachfolgend)\s*(?:als\s+)?[„\"“]([^„“”\"\n]{2,80})[“”\"]", text):
        add(m.start(1), m.end(1), "term")
    for m in _QUOTED.finditer(text):
        inner = m.group(1).strip()
        if len(inner.split()) <= 6 and not inner.endswith((".", ",", ":")):
            add(m.start(1), m.end(1), "term")
    for m in _DEFINED.finditer(text):
        words = m.group(1).split()
        while words and words[0].lower() in _ARTICLE:
            words = words[1:]
        if words:
            a = m.start(1) + m.group(1).index(words[0])
            add(a, a + len(" ".join(words)), "term")
    for m in _CIVIL_CODE.finditer(text):
        add(m.start(), m.end(), "law", _genitive_free(m.group(0)))
    for m in _INSTITUTION.finditer(text):
        head = m.group(0).split()[0]
        base = head[: m.start("base") - m.start() + len(m.group("base"))]
        add(m.start(), m.end(), "organisation", base + m.group(0)[len(head) :])
    for rx in (_NATIONAL, _ADJ_NAME):
        for m in rx.finditer(text):
            if m.start() not in sentence_starts:  # an adjective may open a sentence in capitals
                add(m.start(), m.end(), "name")
    for m in _LAW_NAME.finditer(text):
        name = _genitive_free(m.group(0))
        if name.lower() not in _GENERIC_LAWS:
            add(m.start(), m.end(), "law", name)
    for m in _ACRONYM.finditer(text):
        w = m.group(0)
        if sum(ch.isupper() for ch in w) >= 2 and not _ROMAN.fullmatch(w) and not (w.isupper() and len(w) > 6):
            add(m.start(), m.end(), "acronym")
    return spans


def context_entities(context: list[str], own_law: str | None) -> list[tuple[str, str, str]]:
    """(surface, key surface, type) for a chunk's breadcrumb: the law (its abbreviation) and a § / Art.
    heading's key; other headings (``Erster Abschnitt``) name no entity."""
    out = []
    for n, part in enumerate(context):
        if n == 0:
            out.append((own_law or part, own_law or part, "law" if own_law else "title"))
            continue
        key = heading_key(part)
        if key and key[0] in ("§", "art"):
            out.append((part, law_key(key[0], key[1], own_law), "law"))
    return out


def document_law(title: str, metadata: dict) -> str | None:
    """The abbreviation a law document goes by (front matter ``jurabk``, or ``(ArbZG)`` in its title)."""
    for k in ("jurabk", "amtabk", "abbreviation", "abbr"):
        v = metadata.get(k)
        if isinstance(v, str) and v.strip():
            return v.split()[0].strip()
    m = re.search(r"\(([A-ZÄÖÜ][A-Za-zäöü]*[A-Z][A-Za-z]*)\)", title)
    return m.group(1) if m else None
