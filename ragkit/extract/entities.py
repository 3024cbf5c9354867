"""Rule-based entity and relation extraction (no LLM).

Entities per chunk: the document title and section headings the chunk sits
under, and in the text, by language: for English (and Swedish, which also
capitalises only names) capitalised (multi-)word names ("Scott Derrickson",
"Haymo of Faversham"), acronyms ("WHO"), years and legal citations; for German,
where every noun is capitalised, what marks a name there (citations, law
abbreviations and names, institutions, defined terms: ragkit/extract/german.py).
Names are normalised (case, punctuation, possessives) into keys; an acronym
written right after its long form ("World Health Organization (WHO)") becomes
an alias of it. Relations are pairs of entities close together in one
sentence (weight 1 / (1 + token distance / 10), at least ``PAIR_FLOOR``, each
mention with its nearest few), described by that sentence.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ragkit.extract import german
from ragkit.records import EntityRows
from ragkit.text import entity_key as normalize
from ragkit.text import split_sentences

_CONNECT = {"of", "de", "da", "del", "von", "van", "der", "den", "la", "le", "du", "&", "the", "bin", "al"}
_STOP = set(
    """A An The This That These Those It Its In On At By For From With As If When While After Before
During Since Until Although Though But And Or Nor So Yet Then There Here He She They We You I His Her Their
Our Your My Who What Which Where Why How Is Are Was Were Be Been Do Does Did Has Have Had Not No Yes Also
One Two Three First Second Third Some Many Most Other Such Each Every Both All Any Der Die Das Ein Eine Und
Oder Mit Von Zu Im Auf Für Bei Nach Nicht Auch Als Wenn Dies Diese Dieser Es Sie Er Wir Ihr However Although
Between Within Without Under Over About Against Into Through Unlike Like Among Despite Including Later Then Now
Today Yesterday Meanwhile Finally Afterwards Subsequently Initially Currently Recently Eventually Instead Thus
Therefore Hence Still Often Sometimes Only Even Just Much More Several Few Another Whose Whom Upon Following
According Although Because Unless Whether Once Per Via Both Either Neither""".split()
)
_ORG = re.compile(
    r"\b(Inc|Ltd|LLC|GmbH|AG|Corporation|Company|Co|University|College|Institute|Organization|"
    r"Organisation|Association|Society|Group|Agency|Ministry|Department|Council|Bank|Records|Studios?|"
    r"Party|Club|Foundation|Team|FC|Airlines?|Labs?|Laboratories|Systems|Technologies)\b"
)
_PLACE = re.compile(r"\b(City|County|River|Mountains?|Island|Lake|Province|State|Kingdom|Republic|Street|Park)\b")
_MONTHS = "January|February|March|April|May|June|July|August|September|October|November|December"
_DATE = re.compile(rf"\b(?:(?:\d{{1,2}}\s)?(?:{_MONTHS})(?:\s\d{{1,2}},?)?\s)?(?:1[5-9]\d\d|20\d\d)\b")
_LAW = re.compile(r"§+\s*\d+[a-z]?(?:\s+[A-ZÄÖÜ][A-Za-zäöü]*[A-Z][A-Za-z]*)?|\bArt\.?\s*\d+[a-z]?\s+[A-Z]{2,}\b")
_TOKEN = re.compile(r"[A-Za-zÀ-ÖØ-öø-ÿ0-9][\w'’.-]*|&")


@dataclass
class Mention:
    key: str
    surface: str
    type: str
    start: int  # character offset in the chunk text (-1 for title/heading context)
    sentence: int


@dataclass
class ChunkEntities:
    mentions: list[Mention] = field(default_factory=list)
    aliases: dict[str, str] = field(default_factory=dict)  # alias key → canonical key
    relations: list[tuple[str, str, float, int]] = field(default_factory=list)  # a, b, weight, sentence
    sentences: list[tuple[int, int]] = field(default_factory=list)  # character spans of the chunk's sentences


def _type_of(surface: str) -> str:
    if _DATE.fullmatch(surface):
        return "date"
    if surface.startswith("§") or surface.startswith("Art"):
        return "law" if _LAW.fullmatch(surface) else "term"
    if _ORG.search(surface):
        return "organisation"
    if _PLACE.search(surface):
        return "place"
    if re.fullmatch(r"[A-Z][A-Z0-9&]{1,7}s?", surface):
        return "acronym"
    words = surface.split()
    if 2 <= len(words) <= 3 and all(w[0].isupper() for w in words):
        return "person"  # a guess: two or three capitalised words and nothing that marks a thing
    return "name"


def _name_spans(text: str) -> list[tuple[int, int, str]]:
    """Capitalised word runs (connectors allowed inside), stripped of leading stopwords."""
    spans = []
    toks = list(_TOKEN.finditer(text))
    i = 0
    while i < len(toks):
        t = toks[i].group(0)
        if (
            not t[0].isupper()
            or t.rstrip(".") in _STOP
            and (i + 1 >= len(toks) or not toks[i + 1].group(0)[0].isupper())
        ):
            i += 1
            continue
        first = i
        j = i
        while j + 1 < len(toks):
            cur, nxt = toks[j].group(0), toks[j + 1].group(0)
            if cur.endswith(".") and len(cur.rstrip(".")) > 2:
                break  # a sentence ends here ("Tim Brown. The …"); initials like "J." go on
            gap = text[toks[j].end() : toks[j + 1].start()]
            if gap.strip() not in ("", "-") or "\n" in gap:
                break
            if nxt[0].isupper() or (
                nxt.lower() in _CONNECT
                and j + 2 < len(toks)
                and toks[j + 2].group(0)[0].isupper()
                and text[toks[j + 1].end() : toks[j + 2].start()].strip() == ""
            ):
                j += 1
            else:
                break
        while i <= j and toks[i].group(0).rstrip(".") in _STOP:
            i += 1
        while j >= i and toks[j].group(0).lower() in _CONNECT:
            j -= 1
        if i <= j:
            a, b = toks[i].start(), toks[j].end()
            surface = re.sub(r"['’]s$", "", text[a:b].rstrip(".,;:'’"))
            if len(surface) > 1 and not surface.isdigit():
                spans.append((a, a + len(surface), surface))
        i = max(first + 1, j + 1)  # always move on ("Van" alone is stripped to nothing)
    return spans


PAIR_FLOOR = 0.3  # a pair further apart than ~23 tokens in its sentence is not a relation
PAIRS_PER_MENTION = 4  # a mention relates to its nearest few, not to every name of a long sentence


def _english_mentions(text: str, sentences, sentence_of, out: ChunkEntities) -> None:
    seen_spans: list[tuple[int, int]] = []
    for m in _LAW.finditer(text):
        out.mentions.append(Mention(normalize(m.group(0)), m.group(0), "law", m.start(), sentence_of(m.start())))
        seen_spans.append((m.start(), m.end()))
    for m in _DATE.finditer(text):
        if any(a <= m.start() < b for a, b in seen_spans):
            continue
        out.mentions.append(Mention(normalize(m.group(0)), m.group(0), "date", m.start(), sentence_of(m.start())))
        seen_spans.append((m.start(), m.end()))
    for a, b, surface in _name_spans(text):
        if any(x <= a < y for x, y in seen_spans):
            continue
        words = surface.split()
        if len(words) == 1 and not re.fullmatch(r"[A-Z][A-Z0-9&]{1,7}s?", surface):
            # a lone capitalised word at a sentence start is usually just a sentence start
            if any(a == s for s, _ in sentences) and surface in _STOP:
                continue
        key = normalize(surface)
        if not key or len(key) < 2:
            continue
        out.mentions.append(Mention(key, surface, _type_of(surface), a, sentence_of(a)))
        # "Long Form (LF)": the acronym is an alias of the long form
        tail = re.match(r"\s*\(([A-Z][A-Za-z0-9&]{1,9})\)", text[b:])
        if tail and len(words) >= 2:
            initials = "".join(w[0] for w in words if w.lower() not in _CONNECT).upper()
            if initials == tail.group(1).upper().rstrip("S") or tail.group(1).isupper():
                out.aliases[normalize(tail.group(1))] = key


def _german_mentions(text: str, sentences, sentence_of, out: ChunkEntities, own_law: str | None) -> None:
    taken: list[tuple[int, int]] = []
    for a, b, surface, key in german.citation_spans(text, own_law):
        out.mentions.append(Mention(normalize(key), surface, "law", a, sentence_of(a)))
        taken.append((a, b))
    for a, _b, surface, key_surface, kind in german.name_spans(text, {s for s, _ in sentences}):
        if not any(x <= a < y for x, y in taken):
            out.mentions.append(Mention(normalize(key_surface), surface, kind, a, sentence_of(a)))


def _context_mentions(context: list[str], language: str, own_law: str | None, out: ChunkEntities) -> None:
    """Title and headings the chunk sits under: mentions without a sentence (they link the chunk to the
    entity in the graph, and relate to nothing: a heading paired with every name below it is noise)."""
    if language == "de":
        for surface, key_surface, kind in german.context_entities(context, own_law):
            out.mentions.append(Mention(normalize(key_surface), surface, kind, -1, -1))
        if own_law and context:  # "Arbeitszeitgesetz (ArbZG)", "Grundgesetz für die …": the long forms
            long_form = re.sub(r"\([^)]*\)", "", context[0])
            for name in {normalize(long_form), normalize(german.law_name(long_form) or "")} - {"", normalize(own_law)}:
                out.aliases[name] = normalize(own_law)
        return
    for name in context:
        if name:
            kind = _type_of(name)  # a title or heading is rarely a person, whatever its capitals say
            out.mentions.append(Mention(normalize(name), name, "title" if kind in ("person", "name") else kind, -1, -1))


def extract(
    text: str, context: list[str] | None = None, language: str = "en", own_law: str | None = None
) -> ChunkEntities:
    """Entities and relations of one chunk; ``context`` = title and headings it sits under; ``language``
    chooses the name rules ("de": ragkit/extract/german.py; others: capitalised names); ``own_law`` is the
    abbreviation of the law the text belongs to (citations without a law cite it)."""
    out = ChunkEntities()
    sentences = split_sentences(text) or [(0, len(text))]
    out.sentences = sentences

    def sentence_of(pos: int) -> int:
        for n, (_a, b) in enumerate(sentences):
            if pos < b + 1:
                return n
        return len(sentences) - 1

    if language == "de":
        _german_mentions(text, sentences, sentence_of, out, own_law)
    else:
        _english_mentions(text, sentences, sentence_of, out)
    _context_mentions([c for c in context or [] if c], language, own_law, out)
    for m in out.mentions:  # canonical keys
        m.key = out.aliases.get(m.key, m.key)
    out.relations = _sentence_pairs(text, out.mentions)
    return out


def _sentence_pairs(text: str, mentions: list[Mention]) -> list[tuple[str, str, float, int]]:
    """(a, b, weight, sentence) for entities close together in one sentence: weight 1 / (1 + token distance
    / 10), at least ``PAIR_FLOOR``, each mention paired with its ``PAIRS_PER_MENTION`` nearest."""
    by_sentence: dict[int, list[Mention]] = {}
    for m in mentions:
        if m.sentence >= 0:
            by_sentence.setdefault(m.sentence, []).append(m)
    pairs: dict[tuple[str, str], tuple[float, int]] = {}
    for n, ms in by_sentence.items():
        ms.sort(key=lambda m: m.start)
        for i, x in enumerate(ms):
            near = []
            for y in ms[:i] + ms[i + 1 :]:
                if x.key != y.key:
                    dist = len(text[min(x.start, y.start) : max(x.start, y.start)].split())
                    near.append((1.0 / (1.0 + dist / 10), y.key))
            for w, other in sorted(near, reverse=True)[:PAIRS_PER_MENTION]:
                if w < PAIR_FLOOR:
                    break
                a, b = sorted((x.key, other))
                if w > pairs.get((a, b), (0.0, -1))[0]:
                    pairs[(a, b)] = (w, n)
    return [(a, b, w, n) for (a, b), (w, n) in pairs.items()]


def query_entities(query: str) -> list[tuple[str, str]]:
    """(key, surface) candidates in a query: names, acronyms, dates, legal citations keyed as the German rules
    key them (``§ 5 Abs. 2 ArbZG`` → ``§ 5 arbzg``), and every 1–4-gram key."""
    keys = {}
    for _, _, surface, key in german.citation_spans(query, None):
        keys.setdefault(normalize(key), surface)
    for m in extract(query).mentions:
        keys.setdefault(m.key, m.surface)
    words = normalize(query).split()
    for n in range(1, 5):
        for i in range(len(words) - n + 1):
            gram = " ".join(words[i : i + n])
            if n > 1 or len(gram) >= 4:
                keys.setdefault(gram, gram)
    return list(keys.items())


def entity_rows(chunks, document_id: str, language: str = "en", own_law: str | None = None) -> EntityRows:
    """Mention, co-occurrence and alias rows of one document's chunks (context: its breadcrumb parts).

    A mention, and a co-occurring pair, keeps the character span of its sentence (descriptions are read
    from those sentences of the chunk text when they are shown); ``raw`` is the key as extracted,
    ``entity`` the canonical key (the store re-maps it when another document declares an alias).
    """
    mentions, cooccur, aliases = [], [], {}
    for c in chunks:
        found = extract(c.text, c.header.split(" > ") if c.header else [], language, own_law)
        seen = set()
        for m in found.mentions:
            if (m.key, m.start) in seen:
                continue
            seen.add((m.key, m.start))
            a, b = found.sentences[m.sentence] if m.sentence >= 0 else (None, None)
            mentions.append(
                {
                    "chunk_id": c.id,
                    "document_id": document_id,
                    "entity": m.key,
                    "raw": m.key,
                    "surface": m.surface,
                    "type": m.type,
                    "sent_start": a,
                    "sent_end": b,
                }
            )
        for a, b, w, n in found.relations:
            start, end = found.sentences[n]
            cooccur.append(
                {
                    "chunk_id": c.id,
                    "document_id": document_id,
                    "a": a,
                    "b": b,
                    "weight": w,
                    "sent_start": start,
                    "sent_end": min(end, start + 300),
                }
            )
        for alias, key in found.aliases.items():
            aliases[alias] = key
    return EntityRows(
        mentions, cooccur, [{"document_id": document_id, "alias": a, "entity": k} for a, k in aliases.items()]
    )
