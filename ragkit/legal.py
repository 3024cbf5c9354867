"""Legal references (German § / Art., Swedish SFS / kap. / §) and the keys of legal section headings.

Used wherever law text or a question about it is read: chunk references at index time (ragkit/ingest), German
citation entities (ragkit/extract/german.py), a query's references and the router (ragkit/retrieve).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ragkit.records import Ref


@dataclass(frozen=True)
class LawTarget:
    """The law a citation names: by its code ("ArbZG", "SGB IX", "AFS 2023:2", an SFS number "1977:1160"), by its
    name in the text ("Arbeitszeitgesetzes" of "§ 5 des Arbeitszeitgesetzes", "arbetsmiljölagen"), or a
    regulation by its subject ("radon på arbetsplatser" of "i föreskrifterna om radon på arbetsplatser").
    A reference keeps it as a string (``Ref.target``, the index's ``refs.target`` column): the code as it is,
    the others with their kind in front (``str``); ``parse`` reads it back. Nothing else reads the prefix."""

    kind: str  # "code" | "name" | "about"
    text: str

    KINDS = ("name", "about")  # the kinds written with a prefix

    def __str__(self) -> str:
        return self.text if self.kind == "code" else f"{self.kind}:{self.text}"

    @classmethod
    def parse(cls, target: str) -> LawTarget:
        kind, sep, text = target.partition(":")
        return cls(kind, text) if sep and kind in cls.KINDS else cls("code", target)


# ---------------------------------------------------------------- German law

_NUM = r"\d+[a-z]?\b"
# law abbreviations: BGB, GG, ArbZG, BetrVG, KSchG, SGB IX, … (two capitals at least)
_ABBR = r"(?P<law>(?:[A-ZÄÖÜ][a-zäöüß]*){1,4}[A-Z][A-Za-zäöü]*(?:\s(?:[IVX]{1,4})\b)?)"
# a word of a law's name, with the words it is coordinated with after a hyphen: "Mess- und Eichgesetzes",
# "Lebensmittel-, Bedarfsgegenstände- und Futtermittelgesetzbuches" (also across a line break)
_NAME_WORD = r"[A-ZÄÖÜ][\w-]+(?:(?<=-)(?:,\s+[A-ZÄÖÜ][\w-]*-)*\s+(?:und|oder|sowie)\s+[A-ZÄÖÜ][\w-]+)?"
_DE_PARA = re.compile(
    r"(?P<sign>§§?)\s*(?P<first>" + _NUM + r")"
    r"(?P<more>(?:\s*(?:,|bis|und|-|–)\s*" + _NUM + r")*)"
    r"(?:\s+(?:Abs\.|Absatz)\s*(?P<abs>\d+))?"
    r"(?:\s+(?:S\.|Satz)\s*\d+)?(?:\s+(?:Nr\.|Nummer)\s*\d+)?"
    r"(?:\s+" + _ABBR + r"|\s+(?:des|der)\s+(?P<name>" + _NAME_WORD + r"(?:\s" + _NAME_WORD + r"){0,3}))?"
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

# a statute ("SFS 1977:1160", "(1977:1160)") or an agency regulation ("AFS 2023:2", "SSMFS 2008:51")
_SFS = re.compile(r"\b(?:(?P<prefix>[A-ZÅÄÖ]{1,8}FS)\s*)?(?P<sfs>(?:1[89]|20)\d\d:\d{1,4})\b")
_SE_PARA = re.compile(
    r"(?:\b(?P<kap>\d+\s?[a-z]?)\s*kap\.\s*)?\b(?P<num>\d+\s?[a-z]?)\s*§(?!§)"
    r"(?:\s+i\s+(?P<kap_after>\d+\s?[a-z]?)\s*kap\.)?"  # "6 § i 2 kap."
)
_SE_COLON = re.compile(  # "AFS 2023:2 2:6": the regulation, then chapter:paragraph
    r"\b(?P<prefix>[A-ZÅÄÖ]{1,8}FS)\s*(?P<sfs>(?:1[89]|20)\d\d:\d{1,4})\s+(?P<kap>\d{1,2}):(?P<num>\d{1,3}(?:\s?[a-z]\b)?)"
)
_SE_LAW_NAME = re.compile(  # "3 kap. 2 § arbetsmiljölagen", "… § i miljöbalken"
    r"^\s*(?:i\s+)?(?P<name>[a-zåäö]{4,}(?:lagen|balken|förordningen|lag|balk))\b"
)
_SE_SHORT_NAME = re.compile(r"^\s*i\s+(?P<about>[a-zåäö]{4,}?)(?:föreskrifterna|föreskrifter|reglerna)\b")  # maskin…
_SE_ABOUT = re.compile(  # "14 § i föreskrifterna om radon på arbetsplatser": the regulation named by its subject
    r"^\s*(?:i\s+)?(?:[A-ZÅÄÖ]\w+s\s+)?(?:föreskrifterna|föreskrifter|förordningen|lagen|allmänna råd)"
    r"\s+(?:\([^)]*\)\s+)?om\s+(?P<about>[^.,;:()§?]{3,80}?)"
    r"(?=\s*[.,;:()?]|\s+(?:och|samt|ska|som|gäller|får|kräver|säger)\b|\s*$)"
)


def _statute(m: re.Match) -> str:
    """A regulation as "AFS 2023:2", a statute (SFS) by its number alone."""
    prefix = m.group("prefix")
    return f"{prefix} {m.group('sfs')}" if prefix and prefix != "SFS" else m.group("sfs")


def _se_target(text: str, m: re.Match) -> str | None:
    """What a Swedish "N §" cites: the regulation or statute right after or right before it, a law named by
    its name after it ("arbetsmiljölagen"), or a regulation named by its subject ("i föreskrifterna om …")."""
    after = text[m.end() : m.end() + 160]
    found = _SFS.search(after)
    if found and found.start() < 60 and "§" not in after[: found.start()]:
        return _statute(found)
    before = list(_SFS.finditer(text[max(0, m.start() - 24) : m.start()]))
    if before and not text[max(0, m.start() - 24) : m.start()][before[-1].end() :].strip():
        return _statute(before[-1])
    named = _SE_LAW_NAME.match(after)
    if named:
        return str(LawTarget("name", named.group("name")))
    about = _SE_ABOUT.match(after) or _SE_SHORT_NAME.match(after)
    return str(LawTarget("about", about.group("about").strip())) if about else None


def _n(number: str) -> str:
    return number.replace(" ", "")


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
        return str(LawTarget("name", m.group("name"))) if _named(m) else None
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
    for m in _SE_COLON.finditer(text):
        number, chapter = _n(m.group("num")), m.group("kap")
        refs.append(Ref("law", m.group(0), m.start(), m.end(), _statute(m), "§", [number], chapter=chapter))
        taken.append((m.start(), m.end()))
    for m in _SE_PARA.finditer(text):
        if any(a <= m.start() < b for a, b in taken):
            continue
        chapter = m.group("kap") or m.group("kap_after")
        refs.append(
            Ref(
                "law",
                m.group(0).strip(),
                m.start(),
                m.end(),
                target=_se_target(text, m),
                unit="§",
                numbers=[_n(m.group("num"))],
                chapter=_n(chapter) if chapter else None,
            )
        )
        taken.append((m.start(), m.end()))
    cited = [(r.start - 24, r.end + 80) for r in refs if r.unit == "§" and r.target and ":" in r.target]
    for m in _SFS.finditer(text):
        if any(a <= m.start() < b for a, b in taken + cited):
            continue
        if m.group("prefix") or re.search(r"\(\s*$", text[max(0, m.start() - 2) : m.start()]):
            refs.append(Ref("law", m.group(0), m.start(), m.end(), target=_statute(m)))
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


_ROMAN = {"I": 1, "V": 5, "X": 10, "L": 50}


def law_key(name: str) -> str:
    """A law's name as it is looked up: lower case, single spaces, a trailing roman numeral as a number
    ("SGB V" and "SGB 5" are one book)."""
    words = name.split()
    if len(words) > 1 and re.fullmatch(r"[IVXL]{1,5}", words[-1]):
        values = [_ROMAN[c] for c in words[-1]]
        words[-1] = str(sum(-v if i + 1 < len(values) and v < values[i + 1] else v for i, v in enumerate(values)))
    return " ".join(words).lower()


def law_keys(title: str, metadata: dict) -> set[str]:
    """Names a law document answers to: front-matter abbreviation/SFS, "(ArbZG)" in its title, a regulation's
    number ("AFS 2023:2")."""
    keys = set()
    for k in ("jurabk", "abbreviation", "abbr", "short_title", "sfs", "amtabk"):
        v = metadata.get(k)
        if isinstance(v, str) and v.strip():
            keys.add(law_key(v))
    for m in re.finditer(r"\(([A-ZÄÖÜ][A-Za-zäöü]*[A-Z][A-Za-z]*(?: [IVX\d]+)?)\)", title):
        keys.add(law_key(m.group(1)))
    for m in re.finditer(r"\b((?:1[89]|20)\d\d:\d{1,4})\b", title):
        keys.add(m.group(1))
    for text in (str(metadata.get("designation") or ""), title):  # "AFS 2023:2" (not "AFS" alone: a collection)
        for m in _SFS.finditer(text):
            keys.add(_statute(m).lower())
    return keys


def loose_law_keys(keys: set[str]) -> set[str]:
    """The first word of a key with a year or edition after it ("BDSG 2018" also answers to "BDSG"), used only
    where one document answers to it."""
    return {k.split()[0] for k in keys if " " in k and not k[0].isdigit()} - keys
