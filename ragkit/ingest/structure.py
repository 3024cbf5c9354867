"""Legal structure read from the text itself, for documents whose format does not carry it (a PDF without a
usable outline, a DOCX or HTML file with the structure only in its wording, plain text).

Swedish regulations and laws: "N kap." chapters, "N §" / "5 a §" paragraphs, "Allmänna råd" inside their
paragraph, "Bilaga N" and "Övergångsbestämmelser"; German laws: "Teil", "Kapitel", "Abschnitt" (also "Erster
Abschnitt"), "§ N", "Art. N", "Anlage". They become headings of the same section tree Markdown laws get, so a
breadcrumb reads "AFS 2023:2 > 2 kap. Organisatorisk och social arbetsmiljö > 6 §" and "6 § i 2 kap." resolves
to its section. The document's other headings (from its outline or its font sizes) stay, as topics between
the chapters and their paragraphs.

An appendix or the transitional provisions named in running text before the body's first chapter or paragraph
is an entry of its table of contents (a scan's, whose dot leaders OCR dropped), not the end of the body.

A paragraph starts only where a paragraph can start (at a block's first line, or after a line that ends a
sentence), and only with numbering that does not run backwards (within its chapter, at most ``MAX_GAP`` ahead),
so that a reference wrapped to the start of a line ("6 § e), ska betala …") is not one. A document whose
headings already name its paragraphs (the Markdown laws) is left as it is.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

from ragkit.ingest.raw import RawDoc, RawHeading
from ragkit.records import Block

# heading levels, outermost first; gaps are harmless (sections nest by comparing levels)
TITLE, PART, CHAPTER, DIVISION, TOPIC, PARAGRAPH, ADVICE = 1, 2, 3, 4, 6, 8, 9
MAX_GAP = 5  # a paragraph number may skip this many (repealed paragraphs), no more
MIN_PARAGRAPHS = 2  # fewer found: the text has no legal structure of its own
PAGE_SECTION = re.compile(r"Page \d+")  # what ragkit/ingest/pdf.py names a page's section when it finds no heading

_SE_PARA = re.compile(r"^(\d{1,3})(?:\s?([a-z]))?\s?§(?!§)(?:\s+(.*))?$")  # "5 §", "5 a § Arbetsgivaren ska …"
_DE_PARA = re.compile(r"^§\s?(\d{1,4})(?:\s?([a-z]))?(?![\d.,§])(?:\s+(.*))?$")  # "§ 5", "§ 5a Ruhezeit"
_ART = re.compile(r"^(?:Art\.?|Artikel)\s?(\d{1,3})(?:\s?([a-z]))?(?![\d.,])(?:\s+(.*))?$")
_KAP = re.compile(r"^(\d{1,2})(?:\s?([a-z]))?\s?kap\.(?:\s+(.*))?$")  # "2 kap. Organisatorisk …"
_ORDINAL = "erster|zweiter|dritter|vierter|fünfter|sechster|siebter|achter|neunter|zehnter|elfter|zwölfter"
_DE_DIVISION = re.compile(
    rf"^(?:(Buch|Teil|Kapitel|Abschnitt|Unterabschnitt|Titel)\s+(\d{{1,3}}[a-z]?|[IVXL]+)\.?|((?:{_ORDINAL})(?:s|r)?)\s+"
    r"(Buch|Teil|Kapitel|Abschnitt|Unterabschnitt|Titel))(?:\s+(.*))?$",
    re.I,
)
_DE_RANK = {"buch": PART, "teil": PART, "kapitel": CHAPTER, "titel": CHAPTER, "abschnitt": DIVISION}
_ADVICE = re.compile(r"^Allmänna råd\s*[:.]?$")
_APPENDIX = re.compile(r"^(?:Bilaga|Anlage|Anhang)(?:\s+(?:\d{1,3}[a-z]?|[A-Z]|[IVX]+)\b)?(?:\s+.*)?$")
_TRANSITION = re.compile(r"^(?:Övergångsbestämmelser|Ikraftträdande- och övergångsbestämmelser|Übergangsvorschriften)$")
_TOC = re.compile(r"\.{4,}|…{2,}|(?:\s\.){3,}")  # a table-of-contents line ("2 kap. Tillämpning ...... 5")
_SENTENCE_END = re.compile(r"[.:;!?]\s*$")
_CONTINUES = re.compile(r"\b(?:och|eller|samt|av|för|i|om|med|till|på|vid|und|oder|sowie|der|des|für|von|zur|zum)$")
MAX_HEADING_WORDS = 14


@dataclass
class _State:
    chapter: int = 0
    paragraph: tuple[int, str] = (0, "")
    paragraphs: int = 0
    closed: bool = False  # in an appendix or the transitional provisions: no more paragraphs of the body
    headings: int = 0  # topic headings seen


def legal_structure(raw: RawDoc) -> RawDoc:
    """``raw`` with the headings its legal structure gives (unchanged when it has none, or has them already)."""
    if not any("§" in i.text or "Art" in i.text for i in raw.items):
        return raw  # no paragraph sign, no article: nothing to read (most documents that are not law)
    headings = [i for i in raw.items if isinstance(i, RawHeading)]
    if sum(bool(_para_kind(h.text)) for h in headings) >= 2:
        _labels_in_text(raw)
        headings = [i for i in raw.items if isinstance(i, RawHeading)]
        _siblings(headings)
        _divisions(headings)
        return raw  # the format already names the paragraphs
    state, items = _State(), []
    topic_levels = sorted({h.level for h in headings})
    for item in raw.items:
        if isinstance(item, RawHeading):
            items.extend(_heading(item, state, topic_levels))
        else:
            items.extend(_block(item, state))
    if state.paragraphs < MIN_PARAGRAPHS:
        return raw
    raw.items = _tidy(items)
    return raw


def _para_kind(text: str) -> str:
    """Which kind of paragraph heading ``text`` is ("se" "5 §", "de" "§ 5", "art" "Art. 5"), "" for none."""
    return "se" if _SE_PARA.match(text) else "de" if _DE_PARA.match(text) else "art" if _ART.match(text) else ""


def _number(text: str) -> tuple[int, str]:
    m = _DE_PARA.match(text) or _ART.match(text)
    return (int(m.group(1)), m.group(2) or "") if m else (0, "")


def _labels_in_text(raw: RawDoc) -> None:
    """A German paragraph's or article's heading read at the body's size ("Art 1", "Art 17a" on the Grundgesetz's
    scan: OCR's size estimates) opens a block of text instead. A block's first line that is such a label alone
    (with a short title, no sentence) and numbered between the headings of its kind around it becomes a heading
    at their level."""
    after: list[RawHeading | None] = []  # for each item, the next German paragraph or article heading
    following = None
    for item in reversed(raw.items):
        after.append(following)
        if isinstance(item, RawHeading) and _para_kind(item.text) in ("de", "art"):
            following = item
    after.reverse()
    out: list[RawHeading | Block] = []
    last: RawHeading | None = None
    for item, nxt in zip(raw.items, after):
        if isinstance(item, RawHeading):
            last = item if _para_kind(item.text) in ("de", "art") else last
        elif nxt is not None:
            first, _, rest = item.text.partition("\n")
            kind = _para_kind(first.strip())
            if (
                kind == _para_kind(nxt.text)
                and (last is None or _para_kind(last.text) == kind)
                and _heading_like(first)
                and len(first.split()) <= MAX_HEADING_WORDS
                and (_number(last.text) if last else (0, "")) < _number(first) < _number(nxt.text)
            ):
                last = RawHeading(nxt.level, first.strip(), item.line_start)
                out.append(last)
                if rest:
                    out.append(Block(rest, item.line_start + 1, item.line_end))
                continue
        out.append(item)
    raw.items = out


def _siblings(headings: list[RawHeading]) -> None:
    """A paragraph heading set larger than the next one of its kind ("§ 21a Übergangsmandat *)" over "§ 22",
    a scan's font sizes as OCR estimates them) takes that one's level: paragraphs are siblings, and the
    paragraphs after it would otherwise nest under it. From the last heading back, so that a run of them set
    larger all follow the next one set right."""
    for h, nxt in reversed(list(zip(headings, headings[1:]))):
        kind = _para_kind(h.text)
        if kind and _para_kind(nxt.text) == kind and nxt.level > h.level:
            h.level = nxt.level


_ROMAN = re.compile(r"^[IVX]{1,5}\.\s+\S")  # "I. - Die Grundrechte", "IXa. Gemeinschaftsaufgaben" aside


def division_rank(text: str) -> int | None:
    """The rank of a division heading ("Teil 1 - …", "Zweiter Abschnitt", "Kapitel 7", "3 kap. …", "II. - Der
    Bund und die Länder"): ``PART``, ``CHAPTER`` or ``DIVISION``; None for any other heading."""
    m = _DE_DIVISION.match(text)
    if m:
        return _DE_RANK.get((m.group(1) or m.group(4)).lower(), DIVISION + 1)
    return CHAPTER if _KAP.match(text) else DIVISION if _ROMAN.match(text) else None


def opens_unit(text: str) -> bool:
    """``text`` begins a legal unit of its own (a paragraph, an article, a chapter or a division): never the
    second line of a heading that wraps."""
    return bool(_para_kind(text.strip()) or division_rank(text.strip()))


def _divisions(headings: list[RawHeading]) -> None:
    """A division heading set no larger than the first paragraph or lower division after it (a scan's font
    sizes as OCR estimates them jitter by a point; a typesetter may set "Kapitel 7" as "§ 83") is over them all
    the same. Where one is, sizes do not tell the levels: the divisions take the levels above the paragraphs'
    by their rank (Teil over Kapitel over Abschnitt over Unterabschnitt), every paragraph heading the usual
    one, and the rest under them move down where the title leaves no room."""
    ranks = [division_rank(h.text) for h in headings]
    kinds = [_para_kind(h.text) for h in headings]
    if not any(_held_level(headings, ranks, kinds, i) is not None for i in range(len(headings))):
        return
    usual = Counter(h.level for h, kind in zip(headings, kinds) if kind).most_common(1)[0][0]
    order = sorted({r for r in ranks if r is not None})
    top = min(h.level for h in headings)
    shift = max(0, top + len(order) + 1 - usual)  # room for the title, the divisions, then the paragraphs
    for h, rank, kind in zip(headings, ranks, kinds):
        if rank is not None:
            h.level = usual + shift - len(order) + order.index(rank)
        elif kind:
            h.level = usual + shift
        elif h.level >= usual:
            h.level += shift


def _held_level(headings: list[RawHeading], ranks: list[int | None], kinds: list[str], i: int) -> int | None:
    """The level of the first paragraph or lower division after division ``i`` when ``i`` is not above it."""
    if ranks[i] is None:
        return None
    for h, rank, kind in zip(headings[i + 1 :], ranks[i + 1 :], kinds[i + 1 :]):
        if kind or (rank is not None and rank > ranks[i]):
            return h.level if h.level <= headings[i].level else None
        if rank is not None:  # a division of its rank or above: nothing held
            return None
    return None


def _tidy(items: list[RawHeading | Block]) -> list[RawHeading | Block]:
    """A heading that wraps onto the next line ("2 kap. Märkning av … och" / "förvaring av …") gets its end
    back; a short line of its own just before a paragraph is the topic heading over it."""
    out: list[RawHeading | Block] = []
    for item in items:
        prev = out[-1] if out else None
        if isinstance(item, Block) and isinstance(prev, RawHeading) and prev.level < TOPIC:
            first, _, rest = item.text.partition("\n")
            if _CONTINUES.search(prev.text) and _heading_like(first) and first[:1].islower():
                prev.text = f"{prev.text} {first.strip()}"
                if not rest:
                    continue
                item = Block(rest, item.line_start + 1, item.line_end)
        if (
            isinstance(item, RawHeading)
            and item.level == PARAGRAPH
            and isinstance(prev, Block)
            and "\n" not in prev.text
            and _heading_like(prev.text)
            and prev.text[:1].isupper()
        ):
            out[-1] = RawHeading(TOPIC, prev.text.strip(), prev.line_start)
        out.append(item)
    return out


def _heading_like(line: str) -> bool:
    return 0 < len(line.split()) <= 10 and not _SENTENCE_END.search(line) and not _SE_PARA.match(line.strip())


def _heading(h: RawHeading, state: _State, topic_levels: list[int]) -> list[RawHeading | Block]:
    if PAGE_SECTION.fullmatch(h.text):
        return []  # a PDF without headings got a section per page; its paragraphs are the sections now
    unit = _unit(h.text, state, at_start=True, heading=True)
    if unit is not None:
        level, text, _own = unit
        return [RawHeading(level, text, h.line)]
    if state.paragraphs == 0 and state.chapter == 0 and (h.level == 1 or not state.headings):
        state.headings += 1
        return [RawHeading(TITLE, h.text, h.line)]  # the document's own title, before the structure starts
    state.headings += 1
    rank = topic_levels.index(h.level) if h.level in topic_levels else 0
    return [RawHeading(TOPIC + min(rank, 1), h.text, h.line)]


def _block(block: Block, state: _State) -> list[RawHeading | Block]:
    lines = block.text.split("\n")
    if len(lines) != block.line_end - block.line_start + 1:  # lines not one to one: the block as one unit
        lines = [block.text]
    out: list[RawHeading | Block] = []
    start = i = 0  # the first line not yet emitted; the line read
    while i < len(lines):
        line = lines[i].strip()
        can_start = i == 0 or bool(_SENTENCE_END.search(lines[i - 1])) or _topic_before(lines, i)
        unit = _unit(line, state, at_start=can_start, following=lines[i + 1].strip() if i + 1 < len(lines) else "")
        if unit is None:
            i += 1
            continue
        level, text, own = unit
        if start < i:
            out.append(_part(lines, start, i, block.line_start))
        out.append(RawHeading(level, text, block.line_start + i))
        if own:  # the heading's lines leave the text (a chapter's title may be the next line)
            i += 1 if text == line else 2
            start = i
        else:
            start, i = i, i + 1
    if start < len(lines):
        out.append(_part(lines, start, len(lines), block.line_start))
    return out


def _topic_before(lines: list[str], i: int) -> bool:
    """The line before line ``i`` is a heading of its own (short, capitalised, no sentence), itself at a place
    where a paragraph can start: "Odontologisk röntgendiagnostik" over "2 § Anmälan …"."""
    prev = lines[i - 1].strip()
    return _heading_like(prev) and prev[:1].isupper() and (i == 1 or bool(_SENTENCE_END.search(lines[i - 2])))


def _part(lines: list[str], a: int, b: int, first: int) -> Block:
    return Block("\n".join(lines[a:b]), first + a, first + b - 1)


def _unit(
    line: str, state: _State, at_start: bool, following: str = "", heading: bool = False
) -> tuple[int, str, bool] | None:
    """(level, heading, whether the line is the heading's own text) when ``line`` opens a legal unit;
    ``heading``: the line is a heading already (its outline or font says so), whatever its length."""
    if not at_start or not line or _TOC.search(line) and not _SE_PARA.match(line):
        return None
    short = heading or len(line.split()) <= MAX_HEADING_WORDS and not _SENTENCE_END.search(line)
    if _TRANSITION.match(line) or _APPENDIX.match(line) and short:
        if not (state.paragraphs or state.chapter or heading):
            return None  # before the body's first chapter or paragraph: a table of contents' entry
        state.closed = True
        return PART, line, True
    if _ADVICE.match(line):
        return (ADVICE, "Allmänna råd", True) if state.paragraphs and not state.closed else None
    m = _KAP.match(line)
    if m and not _SE_PARA.match(m.group(3) or ""):
        return _chapter(int(m.group(1)), line, following, state)
    m = _DE_DIVISION.match(line)
    if m and short:
        kind = (m.group(1) or m.group(4)).lower()
        return _DE_RANK.get(kind, DIVISION + 1), line, True
    m = _SE_PARA.match(line) or _DE_PARA.match(line) or _ART.match(line)
    if m is None or state.closed:
        return None
    number = (int(m.group(1)), m.group(2) or "")
    last = state.paragraph
    if not (last < number and number[0] <= last[0] + MAX_GAP) or last == (0, "") and number[0] > 2:
        return None  # numbering runs on from 1 within a chapter: this is a reference or a list, not a paragraph
    state.paragraph, state.paragraphs = number, state.paragraphs + 1
    label = line.split("§")[0].strip() + " §" if "§" in line and not line.startswith("§") else None
    rest = (m.group(3) or "").strip()
    if label is None:  # German: "§ 5 Ruhezeit" is a heading of its own, "§ 5 (1) Die …" starts the text
        head = line[: m.start(3)].strip() if m.group(3) else line
        if rest and len(rest.split()) <= MAX_HEADING_WORDS and not _SENTENCE_END.search(rest) and rest[0] != "(":
            return PARAGRAPH, line, True
        return PARAGRAPH, head, not rest
    return PARAGRAPH, " ".join(label.split()), False


def _chapter(number: int, line: str, following: str, state: _State) -> tuple[int, str, bool] | None:
    if number not in (state.chapter + 1, 1) or len(line.split()) > MAX_HEADING_WORDS:
        return None
    state.chapter, state.paragraph, state.closed = number, (0, ""), False
    title = line
    if line.endswith("kap.") and following and len(following.split()) <= 10 and not _SENTENCE_END.search(following):
        title = f"{line} {following}"  # "2 kap." over its title on the next line
    return CHAPTER, title, True
