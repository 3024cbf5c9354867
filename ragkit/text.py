"""Word-level helpers shared by ranking, planning and indexing."""

from __future__ import annotations

import re

STOPWORDS = frozenset("""the a an and or of to in on for with by is are was were be been how what which who whom whose
why when where does do did can could should would may might must shall will this that these those it its from
as at into than then there their about under over der die das und oder ein eine einer eines dem den des ist
sind wie was wer wann wo mit von zu im in auf für bei nach nicht auch als""".split())


def content_words(text: str) -> list[str]:
    """Words of three or more characters that are not stop words, lower-cased, in order."""
    return [w for w in re.findall(r"\w{3,}", text.lower()) if w not in STOPWORDS]


# frequent function words that rarely appear in the other languages' text
_FUNCTION_WORDS = {
    "de": frozenset("der die das und ist nicht mit von zu den des dem ein eine einer eines auf für sich im werden "
                    "wird sind oder nach bei auch als durch über sowie kann soweit dieses gilt".split()),
    "sv": frozenset("och att det som en är på för med av till den inte om har ett de eller ska får enligt "
                    "skall vid samt under dessa".split()),
    "en": frozenset("the a and of to is in that for with as was by on are be this which or from at it an has "
                    "were have not been its their".split()),
}


def detect_language(text: str, sample: int = 20_000) -> str:
    """"de", "sv" or "en" (the default) by the share of each language's function words in ``text``."""
    words = re.findall(r"[a-zäöüßåé]+", text[:sample].lower())
    if not words:
        return "en"
    counts = {lang: sum(w in fw for w in words) for lang, fw in _FUNCTION_WORDS.items()}
    best, runner_up = sorted(counts, key=lambda lang: -counts[lang])[:2]
    if best == "en" or counts[best] <= counts[runner_up] or counts[best] < max(3, 0.05 * len(words)):
        return "en"
    return best
