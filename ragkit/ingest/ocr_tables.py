"""Tables on a read page in the order they were written: Tesseract reads a page line by line across its whole
width, so a row of a ruled table with cells of several lines comes out interleaved ("39.a Kadmiumselenid i
nano- | Undantaget upphör att" / "kristallina kvantprickar av | gälla för alla kategorier"), and two tables set
side by side are read row by row across both. The page's words keep their boxes, so the cells can be read back
one after another: a cell's lines together, the cells of a row left to right, the left of two tables before the
right. The rules drawn between a table's columns, which Tesseract reads as "|" on line after line at one place,
mark where columns part and are left out of the text; on such a page the lines are taken from the top down (a
cell now and then comes as a block of its own, after the rest). A page without them is left as read, but for two
tables side by side (their header repeated) and a list's numbers hanging left of its items (read as a block of
their own)."""

from __future__ import annotations

import re
import statistics

from ragkit.ingest.ocr import OcrLine, OcrPage, Word

_LETTER = re.compile(r"[^\W\d_]")
_RULE = re.compile(r"^[_|]*\|[_|]*$")  # "|", "_|", "||": a column's rule read as a sign
_DRAWN = re.compile(r"^[_|]+$")  # that, or a rule's end read as "_"
RULE_NEAR = 6.0  # points: marks of one column's rule lie this close across its rows
MIN_RULE_MARKS = 3  # a rule is read on this many lines at least before the page counts as holding a table
ROW_GAP = 0.5  # a table's rows part where the space between two lines is over this share of a line's height
MIN_ROWS = 3  # a ruled table's rows told apart by their spacing, at least (all but one with two cells or more)
MIN_SIDE_ROWS = 6  # rows two tables set side by side hold at least
MIN_GUTTER = 0.8  # the space between two tables side by side, in their header line's heights at least


def order_tables(page: OcrPage) -> None:
    """``page``'s table cells in reading order and the marks its column rules left out (in place; running text
    kept)."""
    rules = _rules(page)
    if rules:
        _drop_rules(page, rules)
    lines = _side_by_side(_hanging_labels(page.lines))
    if rules:
        lines = _ruled_cells(_rows_of_words(lines), rules)
    page.lines[:] = lines


_LABEL = re.compile(r"^\(?(?:\d{1,3}|[a-z])[.:;)]$")  # a list's number or letter ("2.", "13:", "b)", "(c)")


def _hanging_labels(lines: list[OcrLine]) -> list[OcrLine]:
    """A numbered list whose numbers hang left of its text comes as two blocks, the numbers ("1." "2." "3.")
    and then the items: each number alone on its line goes back to the start of the item at its height (one
    with no item beside it stays where it was read)."""
    labels = {id(ln): ln for ln in lines if len(ln.words) == 1 and _LABEL.match(ln.words[0].text)}
    if not labels:
        return lines
    numbered: dict[int, OcrLine] = {}  # an item's line → its number
    for label in labels.values():
        item = next((ln for ln in lines if id(ln) not in labels and id(ln) not in numbered
                     and _level(label, ln) and ln.box[0] > label.box[2]), None)  # fmt: skip
        if item is not None:
            numbered[id(item)] = label
    moved = {id(label) for label in numbered.values()}
    return [
        _line(numbered[id(ln)].words + ln.words, True, ln.size) if id(ln) in numbered else ln
        for ln in lines
        if id(ln) not in moved
    ]


def _rows_of_words(lines: list[OcrLine]) -> list[OcrLine]:
    """A ruled table's page as lines from the top down, those at one height made one (Tesseract reads a cell of
    a table now and then as a block of its own, and gives the blocks of a page in an order of its own)."""
    out: list[OcrLine] = []
    for ln in sorted(lines, key=lambda ln: -ln.box[3]):
        last = out[-1] if out else None
        if last is not None and _level(last, ln) and not _overlap(last, ln):
            out[-1] = _line(sorted(last.words + ln.words, key=lambda w: w.box[0]), last.paragraph, last.size)
        else:
            out.append(ln)
    return out


def _level(a: OcrLine, b: OcrLine) -> bool:
    """``a`` and ``b`` side by side: over half the lower one's height shared."""
    shared = min(a.box[3], b.box[3]) - max(a.box[1], b.box[1])
    return shared > 0.5 * min(a.box[3] - a.box[1], b.box[3] - b.box[1])


def _overlap(a: OcrLine, b: OcrLine) -> bool:
    return a.box[0] < b.box[2] and b.box[0] < a.box[2]


def _rules(page: OcrPage) -> list[float]:
    """Where the page's column rules stand: x of the middle of "|" marks found on ``MIN_RULE_MARKS`` lines."""
    marks = sorted((w.box[0] + w.box[2]) / 2 for ln in page.lines for w in ln.words if _RULE.match(w.text))
    groups: list[list[float]] = []
    for x in marks:
        if groups and x - groups[-1][-1] <= RULE_NEAR:
            groups[-1].append(x)
        else:
            groups.append([x])
    return [statistics.median(g) for g in groups if len(g) >= MIN_RULE_MARKS]


def _drop_rules(page: OcrPage, rules: list[float]) -> None:
    """The marks read where ``rules`` stand left out (elsewhere a "|" may be a letter: "BGBl. | S. 1852" is
    "BGBl. I S. 1852")."""
    kept = []
    for ln in page.lines:
        words = [w for w in ln.words if not (_DRAWN.match(w.text) and _at_rule(w, rules))]
        if words:
            kept.append(_line(words, ln.paragraph, ln.size))
    page.lines[:] = kept


def _at_rule(word: Word, rules: list[float]) -> bool:
    return any(abs((word.box[0] + word.box[2]) / 2 - x) <= RULE_NEAR for x in rules)


def _line(words: list[Word], paragraph: bool, size: float) -> OcrLine:
    box = (min(w.box[0] for w in words), min(w.box[1] for w in words),
           max(w.box[2] for w in words), max(w.box[3] for w in words))  # fmt: skip
    return OcrLine(" ".join(w.text for w in words), box, paragraph, words, size)


def _crosses(line: OcrLine, x: float) -> bool:
    return any(w.box[0] < x < w.box[2] for w in line.words)


def _below(upper: OcrLine, lower: OcrLine) -> bool:
    return lower.box[3] <= upper.box[3] and lower.box[1] < upper.box[1]


def _parts(line: OcrLine, cuts: list[float]) -> list[list[Word]]:
    """``line``'s words by the columns ``cuts`` (ascending x) part it into, left to right (empty ones too)."""
    parts: list[list[Word]] = [[] for _ in range(len(cuts) + 1)]
    for w in line.words:
        parts[sum((w.box[0] + w.box[2]) / 2 > x for x in cuts)].append(w)
    return parts


def _side_by_side(lines: list[OcrLine]) -> list[OcrLine]:
    """Two tables side by side: a header line whose right half repeats its left, two column names or more
    ("Radionuklid Aktivitet (Bq) Radionuklid Aktivitet (Bq)", rules read as "|" or "_" aside; not one column's
    unit over two columns) over at least ``MIN_SIDE_ROWS`` lines below it, with a gap between the halves that no
    word of them spans: the left table's lines first, then the right's."""
    out: list[OcrLine] = []
    n = 0
    while n < len(lines):
        line = lines[n]
        named = [w for w in line.words if not _DRAWN.match(w.text)]
        half = len(named) // 2
        texts = [w.text for w in named]
        if half >= 2 and len(texts) == 2 * half and texts[:half] == texts[half:] and all(map(_LETTER.search, texts)):
            gap = [named[half - 1].box[2], named[half].box[0]]
            end = n + 1
            wide = MIN_GUTTER * (line.box[3] - line.box[1])
            while end < len(lines) and _below(lines[end - 1], lines[end]) and _narrow(gap, lines[end], wide):
                end += 1
            x = sum(gap) / 2
            if sum(all(_parts(ln, [x])) for ln in lines[n + 1 : end]) >= MIN_SIDE_ROWS:
                halves = [_parts(ln, [x]) for ln in lines[n:end]]
                for side in (0, 1):
                    out += [_line(h[side], not i, line.size) for i, h in enumerate(halves) if h[side]]
                n = end
                continue
        out.append(line)
        n += 1
    return out


def _narrow(gap: list[float], line: OcrLine, wide: float) -> bool:
    """``gap`` (left, right) narrowed to leave ``line``'s words in it to their sides (by their middles); False
    when less than ``wide`` is left (the space between two words of running text)."""
    left, right = gap
    for w in line.words:
        if w.box[2] > left and w.box[0] < right:
            if (w.box[0] + w.box[2]) / 2 < (left + right) / 2:
                left = w.box[2]
            else:
                right = w.box[0]
    if right - left < wide:
        return False
    gap[:] = [left, right]
    return True


def _ruled_cells(lines: list[OcrLine], rules: list[float]) -> list[OcrLine]:
    """Runs of lines that no word spans at a rule and that hold words on both sides of one: their rows (parted
    by a wider space between lines than a line's) read cell by cell."""
    out: list[OcrLine] = []
    n = 0
    while n < len(lines):
        cuts = [x for x in rules if not _crosses(lines[n], x)]
        end = n
        while (
            end < len(lines)
            and (end == n or _below(lines[end - 1], lines[end]))
            and not any(_crosses(lines[end], x) for x in cuts)
        ):
            end += 1
        run = lines[n:end]
        if sum(sum(bool(p) for p in _parts(ln, cuts)) >= 2 for ln in run) >= 2:
            out += _cells(run, cuts)
            n = end
        else:
            out.append(lines[n])
            n += 1
    return out


def _cells(run: list[OcrLine], cuts: list[float]) -> list[OcrLine]:
    height = statistics.median(ln.box[3] - ln.box[1] for ln in run)
    rows: list[list[OcrLine]] = [[run[0]]]
    for upper, lower in zip(run, run[1:]):
        if upper.box[1] - lower.box[3] > ROW_GAP * height:
            rows.append([])
        rows[-1].append(lower)
    parted = [list(zip(*(_parts(ln, cuts) for ln in row))) for row in rows]  # row → column → line → words
    if len(rows) < MIN_ROWS or sum(sum(map(any, columns)) >= 2 for columns in parted) < MIN_ROWS - 1:
        return run  # rows not set apart: which lines make a row is not seen, the lines stay as read
    out: list[OcrLine] = []
    for row, columns in zip(rows, parted):
        for column in columns:
            cell = [_line(words, False, ln.size) for words, ln in zip(column, row) if words]
            if cell:
                cell[0].paragraph = True
            out += cell
    return out
