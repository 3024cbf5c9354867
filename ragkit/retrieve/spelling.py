"""Spelling correction against the index's own vocabulary (words of the chunks, with chunk frequencies).

Only words the index does not contain are corrected, to the most frequent
index word one edit away (insertion, deletion, substitution or transposition
of adjacent letters), found through a symmetric-delete index (SymSpell's idea:
a word and its one-letter deletions as keys) that is built on the first
unknown word. Words shorter than five letters, with digits, without a
candidate of at least ``MIN_DF`` chunks, or that the query's language (or
English) knows as a common word stay as they are: an index holds a small share
of a language's word forms, most of all in German, and "correcting" a real word
the index lacks changes the question ("nachts" → "nichts", "wohne" → "ohne").
"""

from __future__ import annotations

import re

from ragkit.text import is_known_word

MIN_LENGTH = 5
MIN_DF = 2
_TOKEN = re.compile(r"[a-zà-öø-ÿß]+", re.I)


def _deletes(word: str) -> set[str]:
    return {word[:i] + word[i + 1:] for i in range(len(word))}


def _one_edit(a: str, b: str) -> bool:
    """Damerau–Levenshtein distance ≤ 1 (adjacent transposition counts as one)."""
    if a == b:
        return True
    la, lb = len(a), len(b)
    if abs(la - lb) > 1:
        return False
    i = 0
    while i < min(la, lb) and a[i] == b[i]:
        i += 1
    if la == lb:
        return a[i + 1:] == b[i + 1:] or (i + 1 < la and a[i] == b[i + 1] and a[i + 1] == b[i] and a[i + 2:] == b[i + 2:])
    return a[i + 1:] == b[i:] if la > lb else a[i:] == b[i + 1:]


class Speller:
    def __init__(self, vocab: dict[str, int]):
        self.vocab = vocab
        self._index: dict[str, list[str]] | None = None

    def _keys(self) -> dict[str, list[str]]:
        if self._index is None:
            index: dict[str, list[str]] = {}
            for term in self.vocab:
                if len(term) >= MIN_LENGTH - 1:
                    for key in _deletes(term) | {term}:
                        index.setdefault(key, []).append(term)
            self._index = index
        return self._index

    def correct_word(self, word: str, language: str = "en") -> str | None:
        w = word.lower()
        if len(w) < MIN_LENGTH or w in self.vocab or not w.isalpha():
            return None
        if is_known_word(w, language) or (language != "en" and is_known_word(w, "en")):
            return None
        keys = self._keys()
        found = {t for key in _deletes(w) | {w} for t in keys.get(key, ())}
        best = [t for t in found if _one_edit(w, t) and self.vocab[t] >= MIN_DF]
        return max(best, key=lambda t: (self.vocab[t], t)) if best else None

    def correct(self, text: str, language: str = "en") -> tuple[str, list[dict[str, str]]]:
        """The text with unknown words corrected, and the corrections made (``language``: the query's)."""
        changes: list[dict[str, str]] = []

        def fix(m: re.Match) -> str:
            new = self.correct_word(m.group(0), language)
            if new is None:
                return m.group(0)
            changes.append({"from": m.group(0), "to": new})
            return new

        return _TOKEN.sub(fix, text), changes
