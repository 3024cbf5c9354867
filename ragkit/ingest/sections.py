"""A parsed file's headings and blocks → its section tree: sections with breadcrumbs and line spans, each
with its body blocks; and the title of a document that names none."""

from __future__ import annotations

from ragkit.ingest.raw import RawDoc, RawHeading
from ragkit.records import Block, Section


def build_sections(raw: RawDoc, doc_id: str, title: str, id_fn) -> tuple[list[Section], dict[str, list[Block]]]:
    """Turn headings/blocks into a section tree with breadcrumbs and line spans.

    The root section (level 0) holds text before the first heading. A first
    level-1 heading with no text before it is folded into the root and names it,
    when it is the document's only level-1 heading or repeats its title (a PDF's
    chapters stay chapters).
    """
    root = Section(id_fn(doc_id, "0"), doc_id, None, title, 0, title, 0, 1, max(1, raw.line_count))
    sections = [root]
    blocks: dict[str, list[Block]] = {root.id: []}
    stack = [root]
    first_heading = True
    level_one = sum(1 for i in raw.items if isinstance(i, RawHeading) and i.level == 1)
    for item in raw.items:
        if isinstance(item, Block):
            blocks[stack[-1].id].append(item)
            continue
        if first_heading and item.level == 1 and not blocks[root.id] and (level_one == 1 or item.text == title):
            # the document's own H1 names the root (it is usually the title)
            first_heading = False
            root.heading = root.breadcrumb = item.text
            continue
        first_heading = False
        while len(stack) > 1 and stack[-1].level >= item.level:
            stack.pop()
        parent = stack[-1]
        sec = Section(
            id=id_fn(doc_id, str(len(sections))),
            document_id=doc_id,
            parent_id=parent.id,
            heading=item.text,
            level=item.level,
            breadcrumb=f"{parent.breadcrumb} > {item.text}",
            order=len(sections),
            line_start=item.line,
            line_end=raw.line_count,
        )
        sections.append(sec)
        blocks[sec.id] = []
        stack.append(sec)
    # a section ends where the next heading at its level or above starts
    for i, sec in enumerate(sections[1:], start=1):
        for later in sections[i + 1 :]:
            if later.level <= sec.level:
                sec.line_end = max(sec.line_start, later.line_start - 1)
                break
    return sections, blocks


def infer_title(raw: RawDoc, fallback: str) -> str:
    if raw.title:
        return raw.title
    for item in raw.items:
        if isinstance(item, RawHeading):
            return item.text if item.level == 1 else fallback
    return fallback
