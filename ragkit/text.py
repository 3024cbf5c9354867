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
