"""A PDF's headings, by line (ragkit/ingest/pdf.py reads them into its sections): from the PDF's outline
(bookmarks) when it has one, each bookmark a heading on its page at the line that prints its title (else at the
top of the page: ``outline_headings``); without an outline, from the lines' look: set in a larger font than the
body text (the size most characters have), one level per size, and short bold lines at the body size where bold
is rare in the body (``font_headings``). A gazette's name (``MASTHEAD``) is no heading."""

from __future__ import annotations

import re

from ragkit.ingest.pdf_lines import Line, body_size
from ragkit.ingest.structure import opens_unit

HEADING_RATIO = 1.15  # a line at least this much larger than the body size is a heading
HEADING_MAX_CHARS = 150
MAX_LEVELS = 3  # heading sizes beyond the third largest count as the third level
BOLD_SHARE = 0.2  # bold lines at the body size are headings only where at most this share of the body is bold
BOLD_MAX_CHARS = 80
CONTINUED = (0, "", True)  # a heading's second line: no heading of its own, not body text
MASTHEAD = re.compile(r"(?:författningssamling|Gesetzblatt|Amtsblatt)$", re.I)  # a gazette's name: no heading


def squeeze(text: str) -> str:
    """Letters and digits only, lower case: a bookmark's title meets its printed line even where one of them
    lost a space ("omanmälningspliktiga") or a hyphen."""
    return "".join(re.findall(r"[^\W_]+", text.lower()))


def outline_headings(outline, lines: list[Line], page_starts: list[int]) -> dict[int, tuple[int, str, bool]]:
    """line number → (level, title, whether the line is the heading's own text). A bookmark becomes a heading
    at the line of its page that prints its title (over several lines when it wraps; the printed words win),
    else at the top of its page. A gazette's name ("… författningssamling", a wrapper around the chapters) is
    no heading."""
    out: dict[int, tuple[int, str, bool]] = {}
    for level, title, page in outline:
        if MASTHEAD.search(title):
            continue
        first = page_starts[page - 1]
        last = page_starts[page] if page < len(page_starts) else len(lines) + 1
        key = squeeze(title)
        at = next((n for n in range(first, last) if n not in out and key and _meets(key, lines[n - 1].text)), None)
        if at is None:  # the title is not on the page as text: the section starts at the top
            if first < last:
                out.setdefault(first, (level, title, False))
            continue
        text, covered, n = lines[at - 1].text, squeeze(lines[at - 1].text), at
        while len(covered) < len(key) and n < last - 1 and key.startswith(covered + squeeze(lines[n].text)):
            n += 1  # the title wraps onto the next line
            text, covered = f"{text} {lines[n - 1].text}", covered + squeeze(lines[n - 1].text)
            out[n] = CONTINUED
        own = len(covered) <= len(key) + 3  # else the line goes on with body text ("6 § Arbetsgivaren ska …")
        out[at] = (level, text if own and covered == key else title, own)
    return out


def _meets(key: str, text: str) -> bool:
    line = squeeze(text)
    return bool(line) and (line.startswith(key) or (len(line) >= 8 and key.startswith(line)))


def font_headings(lines: list[Line]) -> dict[int, tuple[int, str, bool]]:
    """Headings by their look: lines set larger than the body text (one level per size, largest first), and
    short bold lines at the body size below them (when bold is rare in the body)."""
    if not lines:
        return {}
    body = body_size(lines)
    at_body = [ln for ln in lines if ln.size == body]
    bold_headings = sum(len(ln.text) for ln in at_body if ln.bold) <= BOLD_SHARE * sum(len(ln.text) for ln in at_body)
    big = [i for i, ln in enumerate(lines) if _looks_like_heading(ln, body, bold_headings)]
    sizes = sorted({lines[i].size for i in big}, reverse=True)
    level = {s: min(rank + 1, MAX_LEVELS) for rank, s in enumerate(sizes)}
    out: dict[int, tuple[int, str, bool]] = {}
    start = last = None  # the heading being read (its line number) and its last line (index)
    for i in big:
        ln = lines[i]
        if (
            start is not None
            and i == last + 1
            and lines[last].size == ln.size
            and lines[last].page == ln.page
            and not opens_unit(ln.text)  # ("Kapitel 7 - Haftung und Sanktionen" / "§ 83 Schadensersatz": two)
        ):
            lvl, text, _ = out[start]  # a heading wrapped over several lines
            out[start] = (lvl, f"{text} {ln.text}", True)
            out[i + 1] = CONTINUED
        else:
            start = i + 1
            out[start] = (level[ln.size], ln.text, True)
        last = i
    for n in [n for n, (lvl, text, _) in out.items() if lvl and MASTHEAD.search(text)]:
        del out[n]  # a gazette's name ("Statens räddningsverks / författningssamling"), wrapped or not
        while n + 1 in out and out[n + 1] == CONTINUED:
            n += 1
            del out[n]
    return out


def _looks_like_heading(ln: Line, body: float, bold_headings: bool) -> bool:
    if len(ln.text) > HEADING_MAX_CHARS or not re.search(r"[^\W\d_]", ln.text):
        return False
    if ln.size >= body * HEADING_RATIO:
        return True
    return (  # a bold line of its own at the body size: short, no sentence, not a numbered paragraph ("3 §")
        bold_headings
        and ln.bold
        and ln.size >= body
        and ln.paragraph
        and len(ln.text) <= BOLD_MAX_CHARS
        and ln.text[:1].isupper()
        and not re.search(r"[.,;:]$|^\d+\s?[a-z]?\s?§", ln.text)
    )
