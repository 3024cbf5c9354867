"""What a document's pages get once OCR has read them all (``finish``; the cache keeps pages as read): tables'
cells in reading order (``ocr_tables``), the paragraph signs Tesseract's German and Swedish models lose when
glued to a number ("18" for "1 §"), a table of contents' dot leaders read as letters, lists' dashes and raised
numbers read as other signs ("=", "föreskriver!"), and signs glued to their numbers ("Art7"). Pages in reading
order, changed in place."""

from __future__ import annotations

import re

from ragkit.ingest.ocr import OcrPage, Word
from ragkit.ingest.ocr_tables import order_tables

_GLUED_NUMBER = re.compile(r"^(\d{1,3})(?:\s?([a-h]))?[8S$]$")  # "18" read for "1 §", "5a8" for "5 a §"
_OPENS = re.compile(r"^(\d{1,3})(?:\s?([a-h]))?(?: §)?$")  # a paragraph's number ("26" before "§", "26 §" from "26$")
AHEAD = 5  # paragraphs a glued number may run ahead of the last one read (those between read otherwise)
_CHAPTER = re.compile(r"^\d{1,3}\s?[a-h]?$")  # "3" before "kap." (its paragraphs count from 1 again)
_DASHES = {"—", "–", "-", "_"}  # the space after "1 §" read as a dash ("1 § — Dessa föreskrifter")


def number_paragraphs(pages: list[OcrPage]) -> None:
    """Swedish paragraphs open a line with "1 §", "2 §", …; the German and Swedish models often read the number
    and the sign as one word ("18", "108", "388" for "1 §", "10 §", "38 §"), which hides the paragraph from the
    section tree and from reference questions. A line that opens with such a word and goes on with a capital
    letter (a dash read in the space between aside) gets its "§" back when the number is the next in the
    document's count (up to ``AHEAD`` after the last paragraph read, which starts again after "N kap."; a line
    opening "19 § tillgängliga" is a reference read at a line's start, not a paragraph): pages in reading order,
    ``pages`` changed in place."""
    last = 0
    for page in pages:
        if page.language == "eng":
            continue
        for line in page.lines:
            words = line.words
            if len(words) < 2:
                continue
            first, second = words[0].text, words[1].text
            rest = [w.text for w in words[1:] if w.text not in _DASHES and w.text != "§"]
            opens = bool(rest) and rest[0][:1].isupper()  # what follows the number (and its sign) begins a sentence
            if _CHAPTER.match(first) and second.startswith("kap") and (len(words) < 3 or words[2].text[:1].isupper()):
                last = 0  # (not "… enligt / 1 kap. 6 §": a reference)
            elif (m := _OPENS.match(first)) and (first.endswith("§") or second == "§") and opens:
                last = int(m.group(1))  # (not "… enligt / 19 § tillgängliga": a reference)
            elif (m := _GLUED_NUMBER.match(first)) and opens:
                number, letter = int(m.group(1)), m.group(2)
                if last < number <= last + AHEAD or (letter and number == last):
                    words[:1] = _split(words[0], f"{number} {letter}" if letter else str(number), "§")
                    line.text = " ".join(w.text for w in words)
                    last = number


_DOTS = re.compile(r"\.{4,}|…{2,}|(?:\. ){3,}\.")  # a dot leader as read ("........", "……", ". . . .")
_PAGE = re.compile(r"^\d{1,4}$")  # the page number a table of contents' line ends with
LEADER_MIN = 8  # characters of a dot leader read as letters ("uussseesessssssnsnenennennnnnnn")
LEADER_VARIETY = 0.35  # at most this share of them different ("Tillhandahallande": 0.47)


def _leader_at(word: str, numbered: bool) -> int | None:
    """Where in ``word`` a dot leader starts (None: it holds none): at its dots, or, on a line that ends with a
    page number (``numbered``), the whole word when it is a long run of few letters (the dots read as letters)."""
    m = _DOTS.search(word)
    if m:
        return m.start()
    low = word.lower()
    if not numbered:
        return None
    return 0 if len(low) >= LEADER_MIN and len(set(low)) <= LEADER_VARIETY * len(low) else None


def tidy_leaders(pages: list[OcrPage]) -> None:
    """A table of contents' dot leaders come out of OCR as dots and runs of letters ("Tillämpningsområde
    ......uussseesesssnsnenennen rr rar 7", "kvalitetssäkring........seeesss 105"): from the leader's first
    character to the page number ending the line (or to the line's end) the words become one word of dots, so
    that the text reads as the text layer's ("Tillämpningsområde ........ 7"), the section tree knows the line
    for a table of contents' and search does not index the noise: ``pages`` changed in place."""
    for page in pages:
        for line in page.lines:
            words = line.words
            end = len(words) - 1 if len(words) >= 2 and _PAGE.match(words[-1].text) else len(words)
            for i in range(end):
                at = _leader_at(words[i].text, end < len(words))
                if at is None or i == 0 and at == 0:  # (a line of nothing but a leader: left as read)
                    continue
                first, last = words[i], words[end - 1]
                dots = "." * max(sum(len(w.text) for w in words[i:end]) - at, 3)
                kept: list[Word] = []
                cut = first.box[0]
                if at:  # the word's own letters before its dots ("kvalitetssäkring")
                    cut = first.box[0] + (first.box[2] - first.box[0]) * at / len(first.text)
                    kept.append(
                        Word(first.text[:at], (first.box[0], first.box[1], cut, first.box[3]), first.confidence)
                    )
                box = (cut, min(w.box[1] for w in words[i:end]), last.box[2], max(w.box[3] for w in words[i:end]))
                words[i:end] = [*kept, Word(dots, box, min(w.confidence for w in words[i:end]))]
                line.text = " ".join(w.text for w in words)
                break


_GLUED_UNIT = re.compile(r"^(§|Art\.?|Artikel)(\d{1,3}[a-z]?)$")  # "Art7", "§3a": the space after the sign lost


_ROMAN_READ = re.compile(r"^[IVXl]*l[IVXl]*\.$")  # "l.", "ll.", "Vll." at a line's start: "I.", "II.", "VII."


def split_glued_units(pages: list[OcrPage]) -> None:
    """German pages: a paragraph's or an article's sign read together with its number ("Art7", "§3a") is two
    words again ("Art 7"), as headings, breadcrumbs and citations write them; a Roman numeral opening a line
    read with "l" for "I" ("l. - Die Grundrechte") gets its "I" back: ``pages`` changed in place."""
    for page in pages:
        if page.language == "eng":
            continue
        for line in page.lines:
            if line.words and _ROMAN_READ.match(line.words[0].text):
                line.words[0].text = line.words[0].text.replace("l", "I")
                line.text = " ".join(w.text for w in line.words)
            for i in reversed(range(len(line.words))):
                m = _GLUED_UNIT.match(line.words[i].text)
                if m:
                    line.words[i : i + 1] = _split(line.words[i], m.group(1), m.group(2))
                    line.text = " ".join(w.text for w in line.words)


_BULLET = re.compile(r"^[=—–-]{1,3}$")  # a list's dash as read: "-", "—", "=" (a thin dash), "--", "= -"
_SUPER = {"!": "1", "?": "2"}  # a raised 1 or 2 (a footnote's number, "m/s²") as Tesseract reads it
_MARK_BEFORE = re.compile(r"^(.*?[^\W_])([!?]+)([.,;:)]?)$")  # "föreskriver!", "m/s?"; "EU!." ends a sentence
_MARKS_ALONE = re.compile(r"^!+\d*$")  # "!", "!!", "!5": a footnote's number opening its line at the page's foot


def _tall(dash: Word, word: Word) -> bool:
    """``dash`` (a dash after a list's dash) as tall as half ``word`` or more: the space after the list's dash
    read as a sign (a dash drawn is a thin line)."""
    return dash.box[3] - dash.box[1] > 0.5 * (word.box[3] - word.box[1])


def tidy_marks(pages: list[OcrPage]) -> None:
    """A list's dash and raised numbers as the page prints them: a dash opening a line read "=" or "--" (then
    "–"), or read twice, the second time as tall as a letter (the space after it: dropped); a footnote's number or
    a square's 2 read "!" or "?" where no sentence ends: before a word in lower case, a digit or "/"
    ("föreskriver! följande" is "föreskriver1 följande", "!/3" is "1/3", "m/s? ska" is "m/s2 ska"), and "!"
    alone at a line's start (a footnote at the page's foot: "! Jämför …"): ``pages`` changed in place."""
    for page in pages:
        for line in page.lines:
            words = line.words
            if len(words) >= 2 and _BULLET.match(words[0].text):
                while len(words) > 2 and _BULLET.match(words[1].text) and _tall(words[1], words[2]):
                    del words[1]
                if (len(words[0].text) > 1 or "=" in words[0].text) and words[1].text[:1].isalpha():
                    words[0].text = "–"
            if words and _MARKS_ALONE.match(words[0].text) and len(words) >= 2 and words[1].text[:1].isalpha():
                words[0].text = words[0].text.replace("!", "1")
            for i, w in enumerate(words):
                if "!" not in w.text and "?" not in w.text:
                    continue
                after = words[i + 1].text[:1] if i + 1 < len(words) else ""
                w.text = re.sub(r"(?<=[^\W_])[!?](?=[/\d])|^[!?](?=/)", lambda m: _SUPER[m.group()], w.text)
                m = _MARK_BEFORE.match(w.text)
                if m and not m.group(3) and (after.islower() or after.isdigit()):
                    w.text = m.group(1) + "".join(_SUPER[c] for c in m.group(2))
            line.text = " ".join(w.text for w in words)


def finish(pages: list[OcrPage]) -> None:
    """What a document's pages get once all are read (in reading order; the cache keeps them as read): tables'
    cells in reading order (ragkit/ingest/ocr_tables.py), dot leaders tidied, lists' dashes and raised numbers
    given back, paragraph signs given back to numbers, signs glued to their numbers parted."""
    for page in pages:
        order_tables(page)
    tidy_leaders(pages)
    tidy_marks(pages)
    number_paragraphs(pages)
    split_glued_units(pages)


def _split(word: Word, head: str, tail: str) -> list[Word]:
    """``word`` as two words, ``head`` and ``tail``, its box shared in proportion to their characters."""
    left, bottom, right, top = word.box
    cut = left + (right - left) * len(head) / (len(head) + len(tail))
    return [
        Word(head, (left, bottom, cut, top), word.confidence),
        Word(tail, (cut, bottom, right, top), word.confidence),
    ]
