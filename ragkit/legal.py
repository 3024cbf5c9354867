"""Legal references (German § / Art., Swedish SFS / kap. / §) and the keys of legal section headings.

Used wherever law text or a question about it is read: chunk references at index time (ragkit/ingest), German
citation entities (ragkit/extract/german.py), a query's references and the router (ragkit/retrieve).
"""

from __future__ import annotations

import re

from ragkit.records import Ref

# ---------------------------------------------------------------- German law

_NUM = r"\d+[a-z]?\b"
# law abbreviations: BGB, GG, ArbZG, BetrVG, KSchG, SGB IX, … (two capitals at least)
_ABBR = r"(?P<law>(?:[A-ZÄÖÜ][a-zäöüß]*){1,4}[A-Z][A-Za-zäöü]*(?:\s(?:[IVX]{1,4})\b)?)"
_DE_PARA = re.compile(
    r"(?P<sign>§§?)\s*(?P<first>" + _NUM + r")"
    r"(?P<more>(?:\s*(?:,|bis|und|-|–)\s*" + _NUM + r")*)"
    r"(?:\s+(?:Abs\.|Absatz)\s*(?P<abs>\d+))?"
    r"(?:\s+(?:S\.|Satz)\s*\d+)?(?:\s+(?:Nr\.|Nummer)\s*\d+)?"
    r"(?:\s+" + _ABBR + r"|\s+(?:des|der)\s+(?P<name>(?:[A-ZÄÖÜ][\w-]+)(?:\s[A-ZÄÖÜ][\w-]+){0,3}))?"
)
_DE_ART = re.compile(
    r"\b(?:Art\.|Artikel|Art)\s*(?P<first>" + _NUM + r")"
    r"(?P<more>(?:\s*(?:,|bis|und|-|–)\s*" + _NUM + r")*)"
    r"(?:\s+(?:Abs\.|Absatz)\s*(?P<abs>\d+))?"
    r"(?:\s+(?:S\.|Satz)\s*\d+)?"
    r"(?:\s+" + _ABBR + r")?"
)
_NOT_LAWS = {"Abs", "Satz", "Nr", "Art", "Artikel", "Absatz", "Nummer", "Buchstabe", "EG", "EU", "EWG"}

# ---------------------------------------------------------------- Swedish law

_SFS = re.compile(r"\b(?:SFS\s*)?(?P<sfs>(?:1[89]|20)\d\d:\d{1,4})\b")
_SE_PARA = re.compile(r"(?:\b(?P<kap>\d+\s?[a-z]?)\s*kap\.\s*)?\b(?P<num>\d+\s?[a-z]?)\s*§(?!§)")


def _numbers(first: str, more: str) -> list[str]:
    nums = [first.replace(" ", "")]
    if not more:
        return nums
    parts = re.findall(r"(,|bis|und|-|–)\s*(\d+\s?[a-z]?)", more)
    for sep, num in parts:
        num = num.replace(" ", "")
        if sep in ("bis", "-", "–") and nums[-1].isdigit() and num.isdigit() and 0 < int(num) - int(nums[-1]) <= 50:
            nums.extend(str(n) for n in range(int(nums[-1]) + 1, int(num) + 1))
        else:
            nums.append(num)
    return nums


_GENERIC = {
    "gesetzes",
    "vertrages",
    "vertrags",
    "abkommens",
    "absatzes",
    "satzes",
    "artikels",
    "paragraphen",
    "buches",
    "teils",
    "abschnitts",
    "kapitels",
}


def _named(m: re.Match) -> bool:
    name = m.groupdict().get("name")
    return bool(name) and name.split()[-1].lower() not in _GENERIC


def _law(m: re.Match) -> str | None:
    if m.groupdict().get("name"):
        return "name:" + m.group("name") if _named(m) else None
    law = m.group("law")
    if not law or law.split()[0] in _NOT_LAWS:
        return None
    return law


def find_legal_refs(text: str) -> list[Ref]:
    """German § / Art. references and Swedish SFS / kap. / § references."""
    refs: list[Ref] = []
    taken: list[tuple[int, int]] = []
    for m in _DE_PARA.finditer(text):
        if _named(m):
            end = m.end()
        elif m.group("name"):
            end = m.start("name") - 4  # drop " des"/" der" of a generic "des Gesetzes"
        else:
            end = m.end() if _law(m) else (m.start("law") if m.group("law") else m.end())
        refs.append(
            Ref(
                "law",
                text[m.start() : end].rstrip(),
                m.start(),
                end,
                target=_law(m),
                unit="§",
                numbers=_numbers(m.group("first"), m.group("more")),
                subsection=m.group("abs"),
            )
        )
        taken.append((m.start(), end))
    for m in _DE_ART.finditer(text):
        end = m.end() if _law(m) else (m.start("law") if m.group("law") else m.end())
        refs.append(
            Ref(
                "law",
                text[m.start() : end].rstrip(),
                m.start(),
                end,
                target=_law(m),
                unit="art",
                numbers=_numbers(m.group("first"), m.group("more")),
                subsection=m.group("abs"),
            )
        )
    for m in _SE_PARA.finditer(text):
        if any(a <= m.start() < b for a, b in taken):
            continue
        nxt = text[m.end() : m.end() + 80]
        sfs = _SFS.search(nxt)
        law = sfs.group("sfs") if sfs and sfs.start() < 60 else None
        refs.append(
            Ref(
                "law",
                m.group(0).strip(),
                m.start(),
                m.end(),
                target=law,
                unit="§",
                numbers=[m.group("num").replace(" ", "")],
                chapter=m.group("kap").replace(" ", "") if m.group("kap") else None,
            )
        )
    se_spans = [(r.start, r.end + 80) for r in refs if r.unit == "§" and r.target and ":" in r.target]
    for m in _SFS.finditer(text):
        if any(a <= m.start() < b for a, b in se_spans):
            continue
        if m.group(0).startswith("SFS") or re.search(r"\(\s*$", text[max(0, m.start() - 2) : m.start()]):
            refs.append(Ref("law", m.group(0), m.start(), m.end(), target=m.group("sfs")))
    refs.sort(key=lambda r: r.start)
    return refs


def has_legal_ref(text: str) -> bool:
    """Cheap pre-check before the full detectors (most queries name no reference)."""
    return "§" in text or bool(re.search(r"\bArt(?:\.|ikel)?\s*\d|\d{4}:\d", text))


# ---------------------------------------------------------------- keys for resolution

_HEAD_DE = re.compile(r"^\s*(?:(?P<para>§)\s*(?P<pn>\d+\s?[a-z]?)\b|(?:Art\.?|Artikel)\s*(?P<an>\d+\s?[a-z]?)\b)")
_HEAD_SE = re.compile(r"^\s*(?P<n>\d+\s?[a-z]?)\s*§")
_HEAD_KAP = re.compile(r"^\s*(?P<k>\d+\s?[a-z]?)\s*kap\.?", re.I)


def heading_key(heading: str) -> tuple[str, str] | None:
    """("§", "5") for "§ 5 Title" or "5 §"; ("art", "12") for "Art 12"; ("kap", "3") for "3 kap."."""
    m = _HEAD_DE.match(heading)
    if m:
        return ("§", m.group("pn").replace(" ", "")) if m.group("para") else ("art", m.group("an").replace(" ", ""))
    m = _HEAD_SE.match(heading)
    if m:
        return ("§", m.group("n").replace(" ", ""))
    m = _HEAD_KAP.match(heading)
    if m:
        return ("kap", m.group("k").replace(" ", ""))
    return None


def law_keys(title: str, metadata: dict) -> set[str]:
    """Names a law document answers to: front-matter abbreviation/SFS, "(ArbZG)" in its title."""
    keys = set()
    for k in ("jurabk", "abbreviation", "abbr", "short_title", "sfs", "amtabk"):
        v = metadata.get(k)
        if isinstance(v, str) and v.strip():
            keys.add(v.strip().lower())
            keys.add(v.split()[0].lower())  # "BDSG 2018" also answers to "BDSG"
    for m in re.finditer(r"\(([A-ZÄÖÜ][A-Za-zäöü]*[A-Z][A-Za-z]*)\)", title):
        keys.add(m.group(1).lower())
    for m in re.finditer(r"\b((?:1[89]|20)\d\d:\d{1,4})\b", title):
        keys.add(m.group(1))
    return keys
