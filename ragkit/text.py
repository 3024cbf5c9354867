"""Word-level helpers shared by ranking, planning and indexing."""

from __future__ import annotations

import functools
import re
from pathlib import Path

STOPWORDS = frozenset(
    """the a an and or of to in on for with by is are was were be been how what which who whom whose
why when where does do did can could should would may might must shall will this that these those it its from
as at into than then there their about under over der die das und oder ein eine einer eines dem den des ist
sind wie was wer wann wo mit von zu im in auf für bei nach nicht auch als""".split()
)

# abbreviations whose dot ends no sentence
_ABBREV = {
    "e.g",
    "i.e",
    "etc",
    "vs",
    "cf",
    "fig",
    "figs",
    "al",
    "dr",
    "mr",
    "mrs",
    "ms",
    "prof",
    "no",
    "nr",
    "abs",
    "art",
    "bzw",
    "ca",
    "vgl",
    "z.b",
    "d.h",
    "u.a",
    "s",
    "st",
    "jr",
    "sr",
    "inc",
    "ltd",
    "co",
    "approx",
    "dept",
    "eq",
    "ref",
    "sec",
    "vol",
    "pp",
    "kap",
    "ziff",
    "lit",
    "ggf",
    "usw",
}
_ORDINAL = re.compile(r"\d{1,2}")  # "das 18. Lebensjahr", "1. Januar", "2. die Anzeige …": no sentence end
_SENT_END = re.compile(r"[.!?…][\"'”’)\]]*\s+(?=[\"'“‘(\[]?[A-ZÄÖÜÅ0-9§])")


def entity_key(name: str) -> str:
    """An entity's key: its name lower-cased, without possessive 's and punctuation (§ kept), spaces single
    (the extractor's keys, ragkit/extract/entities.py, and the store's look-ups by name)."""
    s = name.strip().lower().replace("’", "'")
    s = re.sub(r"'s\b", "", s)
    s = re.sub(r"[^\w§ ]+", " ", s)
    return " ".join(s.split())


def split_sentences(text: str) -> list[tuple[int, int]]:
    """Character spans of sentences (whitespace between them excluded)."""
    spans = []
    start = 0
    for m in _SENT_END.finditer(text):
        before = text[start : m.start() + 1]
        word = re.search(r"([\w.]+)\.$", before)
        if word and (word.group(1).lower() in _ABBREV or len(word.group(1)) == 1 or _ORDINAL.fullmatch(word.group(1))):
            continue
        end = m.start() + len(m.group(0).rstrip())
        spans.append((start, end))
        start = m.end()
    if start < len(text):
        spans.append((start, len(text.rstrip())))
    return [(a, b) for a, b in spans if b > a]


def content_words(text: str) -> list[str]:
    """Words of three or more characters that are not stop words, lower-cased, in order."""
    return [w for w in re.findall(r"\w{3,}", text.lower()) if w not in STOPWORDS]


# frequent function words that rarely appear in the other languages' text
_FUNCTION_WORDS = {
    "de": frozenset(
        "der die das und ist nicht mit von zu den des dem ein eine einer eines auf für sich im werden "
        "wird sind oder nach bei auch als durch über sowie kann soweit dieses gilt".split()
    ),
    "sv": frozenset(
        "och att det som en är på för med av till den inte om har ett de eller ska får enligt "
        "skall vid samt under dessa".split()
    ),
    "en": frozenset(
        "the a and of to is in that for with as was by on are be this which or from at it an has "
        "were have not been its their".split()
    ),
}


def detect_language(text: str, sample: int = 20_000) -> str:
    """ "de", "sv" or "en" (the default) by the share of each language's function words in ``text``."""
    words = re.findall(r"[a-zäöüßåé]+", text[:sample].lower())
    if not words:
        return "en"
    counts = {lang: sum(w in fw for w in words) for lang, fw in _FUNCTION_WORDS.items()}
    best, runner_up = sorted(counts, key=lambda lang: -counts[lang])[:2]
    if best == "en" or counts[best] <= counts[runner_up] or counts[best] < max(3, 0.05 * len(words)):
        return "en"
    return best


# question words a short query shows its language by (beside the function words above)
_QUESTION_WORDS = {
    "de": frozenset(
        "wie was wer wann wo welche welcher welches welchem warum wieso darf muss kann ich mein meine "
        "mir mich zum zur".split()
    ),
    "sv": frozenset("hur vad vem när var vilken vilket vilka varför får måste kan jag min mitt mina mig".split()),
    "en": frozenset("how what who when where which why does do can may must should i my me".split()),
}


def query_language(text: str) -> str:
    """ "de", "sv" or "en" (the default) for a short text such as a query: the language most of whose function
    and question words it uses; ``ü``/``ß`` count for German and ``å`` for Swedish."""
    low = text.lower()
    words = re.findall(r"[a-zäöüßåé]+", low)
    counts = {lang: sum(w in fw or w in _QUESTION_WORDS[lang] for w in words) for lang, fw in _FUNCTION_WORDS.items()}
    counts["de"] += 2 * bool(re.search(r"[üß]", low))
    counts["sv"] += 2 * ("å" in low)
    best = max(counts, key=lambda lang: (counts[lang], lang == "en"))
    return best if counts[best] else "en"


@functools.lru_cache(maxsize=4)
def _dictionary(language: str) -> frozenset[str]:
    """wordfreq's "small" list of ``language`` (~40,000 words)."""
    return frozenset(_frequencies(language))


def is_known_word(word: str, language: str) -> bool:
    """Whether ``word`` is a common word of ``language`` (wordfreq's list of its ~40,000 most frequent words,
    loaded on first use): a word the language knows is no typo, even where an index lacks it."""
    return word.lower() in _dictionary(language)


_WORD = re.compile(r"[^\W\d_]+(?:['’\-][^\W\d_]+)*")
_EDGE = ".,;:!?()[]{}\"'«»„“”‚‘’*_`#>|/\\-–—"
PROSE_MIN = 0.3  # below this share of word-like tokens a text is not prose (base64, hex dumps, minified code)
REPEAT_MAX = 25.0  # above this compression ratio a text only repeats itself (real documents: at most 4.8×)


def repetition(text: str, sample: int = 65_536) -> float:
    """How many times over the first ``sample`` characters compress (zlib, fastest level): a text made of one
    phrase repeated compresses 140× and more, every document of the shared data sets 4.8× at most (German
    laws 2.9×; scripts/bench_ingest.py prose). 1.0 for texts under 4 KB (too short to tell)."""
    import zlib

    data = text[:sample].encode("utf-8", "surrogatepass")
    return len(data) / len(zlib.compress(data, 1)) if len(data) >= 4096 else 1.0


def word_share(text: str, sample: int = 65_536) -> float:
    """The share of a text's tokens (whitespace-separated, with a letter or digit; in the first ``sample``
    characters) that look like words: letters only, inner hyphens and apostrophes, at most 30 characters, edge
    punctuation ignored. Every document of the shared data sets scores ≥ 0.51 (median 0.96), base64 and minified
    code 0.0, a hex dump 0.14 (scripts/bench_ingest.py prose)."""
    tokens = [t for t in text[:sample].split() if any(ch.isalnum() for ch in t)]
    if not tokens:
        return 1.0
    return sum(1 for t in tokens if len(t) <= 30 and _WORD.fullmatch(t.strip(_EDGE) or "-")) / len(tokens)


@functools.lru_cache(maxsize=4)
def _frequencies(language: str) -> dict[str, int]:
    """wordfreq's "small" list of ``language`` as word → frequency in centibels (0: every word, -100: one word in
    ten), read from its data file (format "cB" version 1: a header, then the words by frequency band) without
    importing wordfreq, whose imports (ftfy, langcodes) cost ~150 ms of a one-shot query; any other format goes
    through wordfreq's own reader."""
    import gzip
    import importlib.util
    import math

    import msgpack

    spec = importlib.util.find_spec("wordfreq")
    path = Path(spec.submodule_search_locations[0]) / "data" / f"small_{language}.msgpack.gz" if spec else None
    if path is not None and path.is_file():
        with gzip.open(path, "rb") as fh:
            data = msgpack.load(fh, raw=False)
        if data and isinstance(data[0], dict) and data[0].get("format") == "cB" and data[0].get("version") == 1:
            return {w: -band for band, words in enumerate(data[1:]) for w in words}
    import wordfreq

    return {
        w: round(100 * math.log10(f))
        for w, f in wordfreq.get_frequency_dict(language, wordlist="small").items()
        if f > 0
    }


COMPOUND_LANGUAGES = {"de": ("", "s", "es", "n", "en", "e"), "sv": ("", "s", "a", "u", "e")}  # linking elements
# derivational endings wordfreq lists as words: never the last part ("Unversehrtheit" is no compound)
_SUFFIXES = frozenset(
    "heit heiten keit keiten schaft schaften ungen lich liche lichen licher tum nisse "
    "het heten skap skapen ning ningen lig liga".split()
)
COMPOUND_MIN = 8  # shorter words are not split
PART_MIN = 4  # a part has at least this many letters ("mit" + "tags" + "pause" is no split)
PART_COST = 40  # centibels a split pays per part beyond the first: "Unternehmen" and "Krankenhaus" stay whole,
# "Betriebsratswahl" → betriebsrat, wahl (not betrieb, rats, wahl); 80 would keep "Mittagspause" whole


@functools.lru_cache(maxsize=262_144)
def _split_cached(word: str, language: str) -> tuple[str, ...]:
    parts = _best_split(word, language, 3)[1]
    return tuple(parts) if len(parts) > 1 else ()


def split_compound(word: str, language: str, nouns_only: bool = True) -> list[str]:
    """The parts of a German or Swedish compound ("Mittagspause" → ["mittag", "pause"]), [] when it is none.

    Koehn & Knight's frequency method (2003) over wordfreq's common words: among the word itself and every split
    into known words (a linking element such as the German "s" or "en" may end a part), the one whose parts have
    the highest geometric mean frequency (less ``PART_COST`` per part beyond the first) wins, so a frequent word
    stays whole ("Verbraucher" is no "Verb" + "Raucher") and an unknown or rare compound is split ("Ruhepausen" →
    ruhe, pausen). The frequencies are wordfreq's, read once per language (~40 ms)."""
    if (
        language not in COMPOUND_LANGUAGES
        or len(word) < COMPOUND_MIN
        or not word.isalpha()
        or (nouns_only and language == "de" and not word[0].isupper())
    ):  # German compounds of interest are
        return []  # nouns: capitalised (participles such as "ausgefertigt", "nachfolgenden" are left alone)
    return list(_split_cached(word.lower(), language))


def _best_split(word: str, language: str, depth: int) -> tuple[float, list[str]]:
    """(score, parts) of the best split of ``word`` into at most ``depth`` known words, (-inf, []) when there is
    none. The score is the parts' mean frequency in centibels less ``PART_COST`` per part beyond the first."""
    freq, links = _frequencies(language), COMPOUND_LANGUAGES[language]
    best: tuple[float, list[str]] = (float(freq[word]), [word]) if word in freq else (float("-inf"), [])
    if depth < 2:
        return best
    for cut in range(PART_MIN, len(word) - PART_MIN + 1):
        tail = word[cut:]
        if tail not in freq or tail in _SUFFIXES:
            continue
        head = word[:cut]
        for link in links:
            stem = head[: len(head) - len(link)] if link and head.endswith(link) else (head if not link else "")
            if len(stem) < PART_MIN:
                continue
            parts = [*_best_split(stem, language, depth - 1)[1], tail]
            if len(parts) > 1:
                score = sum(freq[p] for p in parts) / len(parts) - PART_COST * (len(parts) - 1)
                if score > best[0]:
                    best = (score, parts)
    return best


_LETTERS = re.compile(rf"[^\W\d_]{{{COMPOUND_MIN},}}")


def compound_parts(text: str, language: str, query: bool = False) -> list[str]:
    """The parts of every compound in ``text`` (once each, in order of appearance): what BM25 also indexes and
    searches for German and Swedish text, so "Pause" finds "Ruhepausen" and "Mittagspause" finds both.

    ``query``: a query's words, typed in lower case as often as not: German words are split whatever their
    case, and words English knows are left whole (an English query over a German index: "Breakfast" is no
    "break" + "fast")."""
    if language not in COMPOUND_LANGUAGES:
        return []
    seen: dict[str, None] = {}
    for word in _LETTERS.findall(text):
        if query and is_known_word(word, "en"):
            continue
        for part in split_compound(word, language, nouns_only=not query):
            seen.setdefault(part, None)
    return list(seen)
