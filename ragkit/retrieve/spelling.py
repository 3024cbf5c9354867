"""Spelling correction against the index's own vocabulary (words of the chunks, with chunk frequencies).

Only words the index does not contain are corrected, to the most frequent
index word one edit away (insertion, deletion, substitution or transposition
of adjacent letters): every such edit of the word, over the letters the index
uses, is looked up in the vocabulary (a few hundred look-ups, ~0.2 ms; the
symmetric-delete index this replaced took 0.5 s to build on SciFact's
vocabulary, paid by every one-shot query with an unknown word). Words shorter than five letters, with digits, without a
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


def _edits(word: str, letters: str) -> set[str]:
    """Every string one deletion, transposition, substitution or insertion (of ``letters``) from ``word``."""
    splits = [(word[:i], word[i:]) for i in range(len(word) + 1)]
    return (
        {a + b[1:] for a, b in splits if b}
        | {a + b[1] + b[0] + b[2:] for a, b in splits if len(b) > 1}
        | {a + c + b[1:] for a, b in splits if b for c in letters}
        | {a + c + b for a, b in splits for c in letters}
    )


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
        return a[i + 1 :] == b[i + 1 :] or (
            i + 1 < la and a[i] == b[i + 1] and a[i + 1] == b[i] and a[i + 2 :] == b[i + 2 :]
        )
    return a[i + 1 :] == b[i:] if la > lb else a[i:] == b[i + 1 :]


class Speller:
    def __init__(self, vocab: dict[str, int]):
        self.vocab = vocab
        self._letters: str | None = None

    def letters(self) -> str:
        """The letters the index's words use (read once)."""
        if self._letters is None:
            self._letters = "".join(sorted(set("".join(self.vocab))))
        return self._letters

    def correct_word(self, word: str, language: str = "en", allowed=None) -> str | None:
        """The frequent index word one edit away from an unknown ``word``, or None; ``allowed(candidate)`` may
        refuse candidates (a served token's query: words its own collections do not hold)."""
        w = word.lower()
        if len(w) < MIN_LENGTH or w in self.vocab or not w.isalpha():
            return None
        if is_known_word(w, language) or (language != "en" and is_known_word(w, "en")):
            return None
        best = [
            t
            for t in _edits(w, self.letters())
            if self.vocab.get(t, 0) >= MIN_DF and len(t) >= MIN_LENGTH - 1 and _one_edit(w, t)
        ]
        for candidate in sorted(best, key=lambda t: (self.vocab[t], t), reverse=True):
            if allowed is None or allowed(candidate):
                return candidate
        return None

    def correct(self, text: str, language: str = "en", allowed=None) -> tuple[str, list[dict[str, str]]]:
        """The text with unknown words corrected, and the corrections made (``language``: the query's;
        ``allowed``: as for ``correct_word``)."""
        changes: list[dict[str, str]] = []

        def fix(m: re.Match) -> str:
            new = self.correct_word(m.group(0), language, allowed)
            if new is None:
                return m.group(0)
            changes.append({"from": m.group(0), "to": new})
            return new

        return _TOKEN.sub(fix, text), changes
