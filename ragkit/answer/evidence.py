"""What an answer can be checked against: the sentences of a result's passages with their places, and the
words that matter in a question or a claim (English, German, Swedish).

- ``Evidence.of(result)`` splits the top passages into sentences, each with its passage rank, its chunk's line
  span (refined to the sentence's own lines when the source file is at hand) and pages, and its chunk's vector;
- ``Terms`` are a text's content words, weighted by how rare they are in the index (IDF over chunks), with
  German and Swedish compounds also as their parts, matched by prefix so that inflections meet
  ("Arbeitszeit" / "Arbeitszeiten", "undersöka" / "undersökning");
- ``needs`` are what a claim must find in its source word for word: numbers and dates, names, and negations;
- ``question_type`` says what kind of answer a question wants (a quantity, a time, a person or place, yes/no).
"""

from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from ragkit.records import Hit, Passage, QueryResult
from ragkit.text import STOPWORDS, compound_parts, split_sentences

# function words of the three languages, and question words, beside ragkit.text.STOPWORDS
EXTRA_STOP = frozenset(
    """och att det som en ett är på för med av till den inte om har de eller ska får enligt skall vid samt under
dessa sig han hon vad hur när vem vilka vilken vilket varför kan måste jag min mitt mina mig mitt sin sina sitt
också efter innan utan över alla inom blir bli vara varit hade
mein meine mir mich ich du sie er es wir ihr man muss darf kann soll wird werden wurde sein haben hat hatte wenn
dass weil aber noch schon nur sehr mehr viel viele welche welcher welches welchem warum wieso weshalb einem
einen eines also bis dann doch gibt geht etwa gegen ohne sowie soweit dieser diese dieses jeder jede jedes alle
gar dazu davon darauf dafür damit daran darüber hierzu überhaupt einfach eigentlich trotzdem erst mal jetzt immer
your you yes have has had any all some many much more most such other also only very just being into onto
according laut
""".split()
)
STOP = STOPWORDS | EXTRA_STOP
NEGATIONS = frozenset(
    "not no never none nothing nicht kein keine keinen keiner keinem nie niemals inte ej aldrig ingen inget inga".split()
)
_VALUES = {  # spelled-out numbers of the three languages: a claim must find them as words or as digits
    **dict.fromkeys(("one", "eins"), 1),
    **dict.fromkeys(("two", "zwei", "två"), 2),
    **dict.fromkeys(("three", "drei", "tre"), 3),
    **dict.fromkeys(("four", "vier", "fyra"), 4),
    **dict.fromkeys(("five", "fünf", "fem"), 5),
    **dict.fromkeys(("six", "sechs"), 6),
    **dict.fromkeys(("seven", "sieben", "sju"), 7),
    **dict.fromkeys(("eight", "acht", "åtta"), 8),
    **dict.fromkeys(("nine", "neun", "nio"), 9),
    **dict.fromkeys(("ten", "zehn", "tio"), 10),
    **dict.fromkeys(("eleven", "elf", "elva"), 11),
    **dict.fromkeys(("twelve", "zwölf", "tolv"), 12),
    **dict.fromkeys(("twenty", "zwanzig", "tjugo"), 20),
    **dict.fromkeys(("thirty", "dreißig", "trettio"), 30),
    **dict.fromkeys(("hundred", "hundert", "hundra"), 100),
    **dict.fromkeys(("thousand", "tausend", "tusen"), 1000),
}
NUMBER_WORDS = frozenset(_VALUES)  # "five days" is not "three days"
_WORDS = re.compile(r"[^\W_]+(?:[-'’][^\W_]+)*")
_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
_NAME = re.compile(r"(?<![.!?]\s)(?<=\s)[A-ZÄÖÜÅ][\wäöüßåé'’.-]*(?:\s+(?:[A-ZÄÖÜÅ][\wäöüßåé'’.-]*|of|de|van|von))*")
PREFIX = 5  # words match when they share their first PREFIX letters (and one holds the other's stem)
QUOTE_PASSAGES = 5  # passages whose sentences an extractive answer chooses from


def words(text: str) -> list[str]:
    return [w.lower() for w in _WORDS.findall(text)]


def stem_match(a: str, b: str) -> bool:
    """Two lower-case words meet: equal, or both at least PREFIX letters long with the shorter a prefix of the
    longer (inflection and compounding), or sharing their first PREFIX+1 letters."""
    if a == b:
        return True
    if len(a) < PREFIX or len(b) < PREFIX:
        return False
    short, long_ = (a, b) if len(a) <= len(b) else (b, a)
    return long_.startswith(short) or a[: PREFIX + 1] == b[: PREFIX + 1]


@dataclass
class Terms:
    """A text's content words with their weights (IDF), compound parts added for German and Swedish."""

    weights: dict[str, float]

    @classmethod
    def of(cls, text: str, idf, language: str = "en") -> Terms:
        found = [w for w in words(text) if w not in STOP and (len(w) >= 3 or w.isdigit())]
        if language == "de":
            found = [_PARTICIPLE.sub(r"\1\2", w) if w in _lowercase(text) else w for w in found]
        if language in ("de", "sv"):
            found += [p for p in compound_parts(text, language, query=True) if p not in STOP]
        return cls({w: idf(w) for w in dict.fromkeys(found)})

    @property
    def total(self) -> float:
        return sum(self.weights.values())

    def coverage(self, other: set[str]) -> float:
        """The weighted share of these terms that ``other`` (a sentence's words) holds."""
        if not self.weights:
            return 0.0
        got = sum(w for t, w in self.weights.items() if t in other or any(stem_match(t, o) for o in other))
        return got / self.total


# a German past participle ("angehört", "gekündigt", "abgelehnt") as its verb meets the noun ("Anhörung",
# "Kündigung", "Ablehnung") by prefix
_PARTICIPLE = re.compile(r"^(an|auf|aus|ab|bei|ein|mit|nach|vor|zu|zurück|weg|fest|frei|um|dar|)ge(\w{3,}(?:t|en))$")


def _lowercase(text: str) -> set[str]:
    return {w for w in _WORDS.findall(text) if w[:1].islower()}


def idf_of(vocabulary: dict[str, int] | None, chunks: int):
    """IDF over the index's chunks; a word the index lacks weighs as much as the rarest. Numbers are not in
    the vocabulary (it holds words): they weigh as a word found in one chunk of fifty."""
    vocabulary = vocabulary or {}
    top = math.log((chunks + 1) / 1) + 1
    number = math.log((chunks + 1) / (chunks / 50 + 1)) + 1

    def idf(word: str) -> float:
        df = vocabulary.get(word)
        if df is None:
            return number if word[:1].isdigit() else top
        return math.log((chunks + 1) / (df + 1)) + 1

    return idf


def needs(text: str, language: str = "en") -> list[str]:
    """What a claim must find in its source word for word: numbers and years, names (capitalised words not
    opening the sentence; not in German, where every noun is capitalised), negations."""
    out = [m.group(0) for m in _NUMBER.finditer(text)] + [w for w in words(text) if w in NUMBER_WORDS]
    if language != "de":
        for m in _NAME.finditer(text):
            name = m.group(0).strip(" .")
            if len(name) > 1 and name.lower() not in STOP:
                out.append(name)
    out += [w for w in words(text) if w in NEGATIONS]
    return list(dict.fromkeys(out))


def lacks(needed: list[str], source: str) -> list[str]:
    """The items of ``needed`` that ``source`` does not hold (numbers by digits, names by their words,
    negations as words)."""
    low, source_words = source.lower(), set(words(source))
    digits = {re.sub(r"[.,]", "", n) for n in _NUMBER.findall(source)}
    missing = []
    for item in needed:
        if _NUMBER.fullmatch(item):
            ok = re.sub(r"[.,]", "", item) in digits
        elif item.lower() in NUMBER_WORDS:
            ok = item.lower() in source_words or str(_VALUES[item.lower()]) in digits
        elif item.lower() in NEGATIONS:
            ok = item.lower() in source_words
        else:
            parts = [w for w in words(item) if w not in STOP]
            ok = (
                all(p in source_words or any(stem_match(p, s) for s in source_words) for p in parts)
                or item.lower() in low
            )
        if not ok:
            missing.append(item)
    return missing


_TYPES = [  # (kind, patterns over the lower-cased question): what the answer must hold
    (
        "quantity",
        r"\b(how (many|much|long|often|old|far|high|large|big)|what (percentage|share|amount|number)|wie (viele?|lange|oft|alt|hoch|weit)|wieviele?|in welcher höhe|hur (många|mycket|länge|ofta|gammal|lång|stor|hög)|vilken (procent|andel))\b",
    ),
    (
        "time",
        r"\b(when|(what|which) (year|date|decade|century|month|day)|wann|bis wann|ab wann|seit wann|(welche[mnrs]?|an welchem) (jahr|datum|tag|zeitpunkt)|när|(vilket|vilken) (år|datum|dag|tidpunkt)|senast när)\b",
    ),
    ("person", r"\b(who|whom|whose|wer|wem|wen|wessen|vem|vems)\b"),
    (
        "place",
        r"\b(where|(what|which) (city|town|village|state|country|county|region|province|island)|wo|wohin|woher|(welche[mnrs]?) (stadt|ort|land|gemeinde)|var|vart|varifrån|(vilken|vilket) (stad|ort|land|kommun|län))\b",
    ),
    (
        "yesno",
        r"^(is|are|was|were|do|does|did|can|could|has|have|will|should|ist|sind|darf|dürfen|muss|müssen|kann|können|hat|haben|gilt|är|får|måste|kan|har|ska|gäller)\b",
    ),
]
_OPEN = r"\b(what|which|welche[rsmn]?|vad|vilken|vilket|vilka)\b"  # asks for a thing (unless typed above)
_HAS = {
    "quantity": re.compile(
        r"\d|\b(one|two|three|four|five|six|seven|eight|nine|ten|twelve|hundred|thousand|eins|zwei|drei|vier|fünf|sechs|sieben|acht|neun|zehn|zwölf|hundert|tausend|halbe?|en|ett|två|tre|fyra|fem|sex|sju|åtta|nio|tio|tolv|hundra|tusen)\b",
        re.I,
    ),
    "time": re.compile(
        r"\d|\b(january|february|march|april|may|june|july|august|september|october|november|december|januar|februar|märz|mai|juni|juli|oktober|dezember|januari|februari|mars|maj|augusti|oktober|before|after|within|vor|nach|innerhalb|binnen|före|efter|inom|senast)\b",
        re.I,
    ),
    "person": re.compile(r"\b[A-ZÄÖÜÅ][a-zäöüßå]+(?:\s+[A-ZÄÖÜÅ][a-zäöüßå]+)+"),
    "place": re.compile(r"\b[A-ZÄÖÜÅ][a-zäöüßå]+"),
}


def question_type(question: str, language: str = "en") -> str | None:
    """The kind of answer the question's first question phrase asks for ("how many" → quantity, "when" →
    time, "who" → person, "where" → place, a leading verb → yes/no); None for "what"/"which" and others."""
    low = question.strip().lower()
    if language == "de" and low.startswith("was "):
        return None  # "Was kostet …": what, not was
    found = []
    for order, (kind, pattern) in enumerate(_TYPES):
        m = re.search(pattern, low)
        if m:
            found.append((m.start(), order, kind))
    m = re.search(_OPEN, low)
    if m:
        found.append((m.start(), len(_TYPES), None))
    return min(found)[2] if found else None


def fits(kind: str | None, sentence: str) -> bool:
    """Does ``sentence`` hold what a question of ``kind`` asks for?"""
    return kind is None or kind == "yesno" or bool(_HAS[kind].search(sentence))


@dataclass
class Sentence:
    text: str
    passage: Passage
    start: int  # offsets in the passage's text
    end: int
    lines: tuple[int, int]
    pages: list[int] | None
    vector: object = None  # its chunk's vector
    words: set[str] = field(default_factory=set)
    kind: str = "sentence"  # sentence | pair (two in a row) | paragraph ("(2) …" / "3 § …" whole) | item ("1. …")
    position: int = 0  # its order among the passage's units of its kind (0: the first)
    ranks: dict[str, int] = field(default_factory=dict)  # its chunk's rank by each retriever (dense, lexical)


@dataclass
class Evidence:
    """The sentences of a result's top passages, in rank and reading order."""

    sentences: list[Sentence]
    passages: list[Passage]
    retrieval: list[dict[str, float]] = field(default_factory=list)  # the result's hits' scores per retriever

    @classmethod
    def of(cls, result: QueryResult, sources: dict[str, str] | None = None, top: int = QUOTE_PASSAGES) -> Evidence:
        """``sources``: document id → the source file's path, to refine a quote's lines to its own."""
        hits = {h.chunk_id: h for h in result.hits}
        out = []
        passages = sorted(result.passages, key=lambda p: p.rank)[:top]
        for p in passages:
            spans = _chunk_spans(p, hits)  # (start, end, hit) of each chunk in the passage's text
            seen: dict[str, int] = {}
            for a, b, kind in units(p.text):
                sentence = " ".join(p.text[a:b].split())
                if len(words(sentence)) < 3:
                    continue
                position = seen[kind] = seen.get(kind, -1) + 1
                inside = [h for start, end, h in spans if start < b and end > a] or [spans[0][2]]
                first, last = inside[0], inside[-1]
                out.append(
                    Sentence(
                        sentence,
                        p,
                        a,
                        b,
                        _lines(first, last, p, sentence, sources),
                        _pages(first, last, p),
                        first.vector if first is not None else None,
                        set(words(sentence)),
                        kind,
                        position,
                        dict(first.ranks) if first is not None else {},
                    )
                )
        return cls(out, passages, [dict(h.scores) for h in result.hits])


def _chunk_spans(p: Passage, hits: dict[str, Hit]) -> list[tuple[int, int, Hit | None]]:
    """Where each of a passage's chunks sits in its text (a chunk the result does not hold spans it all)."""
    spans, offset = [], 0
    for cid in p.chunk_ids:
        hit = hits.get(cid)
        if hit is None:
            return [(0, len(p.text), None)]
        start = p.text.find(hit.text, offset)
        if start < 0:  # overlapping chunks: the passage holds this one's tail only
            start = offset
        spans.append((start, start + len(hit.text), hit))
        offset = start + len(hit.text)
    return spans or [(0, len(p.text), None)]


_PARAGRAPH = re.compile(r"^[ \t]*(?:\(\d+[a-z]?\)|\d+[a-z]? ?§|§ ?\d+[a-z]?)\s", re.M)  # "(2) …", "3 § …", "§ 3 …"
_ITEM = re.compile(r"^[ \t]*(?:\d{1,2}[a-z]?\.|[a-z]\)|[-•–])[ \t]+(?=\S)", re.M)  # "1. …", "a) …", "- …"
_BREAK = re.compile(r"(?<=[.!?:;])[ \t]*\n[ \t]*\n")  # a blank line after a finished sentence
_BLANK = re.compile(r"\n[ \t]*\n")
MAX_UNIT = 900  # characters: a numbered paragraph this short is also a unit of its own
MAX_PAIR = 400  # characters: two sentences in a row this short are also a unit (one quote, read together)


def units(text: str) -> list[tuple[int, int, str]]:
    """Spans of what quotes are made of, with their kind: every sentence ("sentence"), never across a blank
    line after a finished sentence; a numbered paragraph of a law or regulation ("(2) …", "3 § …") of more
    than one sentence also whole ("paragraph", when at most ``MAX_UNIT`` characters: its sentences refer to
    each other, "Der Anspruch nach Satz 1 …"); two sentences in a row of at most ``MAX_PAIR`` characters
    ("pair": the second often says what the first introduced); and each item of a list ("1. …", "a) …",
    "- …") up to the next item or blank line ("item": legal answers live in them, and a sentence of a list runs
    over all of them). The answer scorer chooses among them."""
    cuts = {0, *(m.start() for m in _PARAGRAPH.finditer(text)), *(m.end() for m in _BREAK.finditer(text))}
    bounds = sorted(cuts) + [len(text)]
    out: list[tuple[int, int, str]] = []
    for a, b in zip(bounds, bounds[1:]):
        block = text[a:b]
        spans = [(a + x, a + y) for x, y in split_sentences(block)]
        out.extend((x, y, "sentence") for x, y in spans)
        if len(spans) > 1 and _PARAGRAPH.match(block) and spans[-1][1] - spans[0][0] <= MAX_UNIT:
            out.append((spans[0][0], spans[-1][1], "paragraph"))
        if len(spans) > 2 or (len(spans) == 2 and not _PARAGRAPH.match(block)):
            out.extend((x, b2, "pair") for (x, _), (_, b2) in zip(spans, spans[1:]) if b2 - x <= MAX_PAIR)
    items = list(_ITEM.finditer(text))
    have = {(x, y) for x, y, _ in out}
    for m, after in zip(items, [*(n.start() for n in items[1:]), len(text)]):
        blank = _BLANK.search(text, m.end(), after)
        stop = len(text[: blank.start() if blank else after].rstrip())
        start = m.start() + len(m.group(0)) - len(m.group(0).lstrip())
        if stop > m.end() and (start, stop) not in have:
            out.append((start, stop, "item"))
    return sorted(out)


def _pages(first: Hit | None, last: Hit | None, p: Passage) -> list[int] | None:
    if first is not None and last is not None and first.page_start is not None:
        return [first.page_start, last.page_end if last.page_end is not None else first.page_start]
    return p.pages


FILE_LINES = 64  # source files whose lines are kept at once (the last asked for)


def file_lines(path: str) -> list[str]:
    """The lines of the source file at ``path`` as it is now: read again when its size, modification time, inode
    or change time changed (a watched or re-indexed folder under ``ragkit serve``; the change time also catches
    a file copied over it with its old modification time kept, ``cp -p``, ``rsync -a``), at most ``FILE_LINES``
    files kept."""
    try:
        st = os.stat(path)
    except OSError:
        return []
    return _read_lines(path, (st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_size))


@lru_cache(maxsize=FILE_LINES)
def _read_lines(path: str, stamp: tuple[int, int, int, int]) -> list[str]:
    try:
        return Path(path).read_text(errors="replace").split("\n")
    except OSError:
        return []


def _lines(
    first: Hit | None, last: Hit | None, p: Passage, sentence: str, sources: dict[str, str] | None
) -> tuple[int, int]:
    """The sentence's own lines in its source file when it can be read there (text formats), else its chunks'."""
    if first is None or last is None:
        begin, end = p.line_start, p.line_end
    else:
        begin, end = first.line_start, max(last.line_end, first.line_end)
    path = (sources or {}).get(p.document_id)
    if not path or p.pages:
        return begin, end
    lines = file_lines(path)[begin - 1 : end]
    ws = words(sentence)
    if not lines or not ws:
        return begin, end
    head, tail = ws[:3], ws[-3:]
    start = next((begin + i for i, line in enumerate(lines) if _holds(line, head)), begin)
    stop = next((begin + i for i in range(len(lines) - 1, -1, -1) if _holds(lines[i], tail)), end)
    return (start, max(start, stop))


def _holds(line: str, some: list[str]) -> bool:
    have = set(words(line))
    return sum(w in have for w in some) >= max(1, len(some) - 1)
