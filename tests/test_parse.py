import pytest

from ragkit.ingest.discover import stable_id
from ragkit.ingest.parse import parse_beir_jsonl, parse_html, parse_markdown, parse_rst, parse_text
from ragkit.ingest.raw import ParseError, RawHeading
from ragkit.ingest.sections import build_sections, infer_title
from ragkit.records import Block

MD = """---
title: Handbook
doc_type: policy
---

# Handbook

Intro text.

## Part 1

Body one.

```python
x = 1

y = 2
```

### § 5 Detail

Detail text
continues here.

## Part 2

Body two.
"""


def sections_of(raw, title="Handbook"):
    return build_sections(raw, "doc", title, stable_id)


def test_markdown_front_matter_and_tree():
    raw = parse_markdown(MD)
    assert raw.metadata == {"title": "Handbook", "doc_type": "policy"}
    assert infer_title(raw, "x") == "Handbook"
    secs, blocks = sections_of(raw)
    crumbs = [s.breadcrumb for s in secs]
    assert crumbs == ["Handbook", "Handbook > Part 1", "Handbook > Part 1 > § 5 Detail", "Handbook > Part 2"]
    part1, detail, part2 = secs[1], secs[2], secs[3]
    assert part1.parent_id == secs[0].id and detail.parent_id == part1.id and part2.parent_id == secs[0].id
    # line spans refer to the original file (front matter counted)
    assert part1.line_start == 10 and part1.line_end == 24 and detail.line_start == 20
    assert [b.text for b in blocks[secs[0].id]] == ["Intro text."]
    # fenced code with a blank line inside stays one block
    code = [b for b in blocks[part1.id] if b.text.startswith("```")]
    assert len(code) == 1 and "y = 2" in code[0].text
    assert blocks[detail.id][0].line_start == 22 and blocks[detail.id][0].line_end == 23


def test_markdown_heading_inside_code_is_not_a_heading():
    raw = parse_markdown("# T\n\n```\n# not a heading\n```\n\n## Real\n\ntext\n")
    assert [h.text for h in raw.items if isinstance(h, RawHeading)] == ["T", "Real"]


def test_setext_headings():
    raw = parse_markdown("Title\n=====\n\nSub\n---\n\nbody\n")
    heads = [(h.level, h.text) for h in raw.items if isinstance(h, RawHeading)]
    assert heads == [(1, "Title"), (2, "Sub")]


def test_rst_underline_levels():
    raw = parse_rst(
        "Guide\n=====\n\nIntro.\n\nInstall\n-------\n\nSteps.\n\nLinux\n~~~~~\n\nApt.\n\nUsage\n-----\n\nRun.\n"
    )
    heads = [(h.level, h.text) for h in raw.items if isinstance(h, RawHeading)]
    assert heads == [(1, "Guide"), (2, "Install"), (3, "Linux"), (2, "Usage")]
    secs, _ = sections_of(raw, "Guide")
    assert secs[2].breadcrumb == "Guide > Install > Linux"


def test_html_headings_text_no_markup():
    html = "<html><head><title>Page</title><style>p{}</style></head><body>\n<h1>Page</h1>\n<p>Hello <b>bold</b> world.</p>\n<h2>Next</h2>\n<p>More.</p><script>var x=1;</script></body></html>"
    raw = parse_html(html)
    assert raw.title == "Page"
    texts = [(type(i).__name__, i.text) for i in raw.items]
    assert ("RawHeading", "Next") in texts
    assert ("Block", "Hello bold world.") in texts
    assert not any("var x" in t for _, t in texts)


def test_plain_text_paragraphs():
    raw = parse_text("a\nb\n\n\nc\n")
    assert [(b.text, b.line_start, b.line_end) for b in raw.items] == [("a\nb", 1, 2), ("c", 5, 5)]


def test_beir_jsonl():
    recs = list(parse_beir_jsonl('{"_id": "d1", "title": "T", "text": "Body."}\n\n{"_id": 2, "text": "X"}\n'))
    assert [(r.external_id, r.title, r.line) for r in recs] == [("d1", "T", 1), ("2", "", 3)]
    assert isinstance(recs[0].doc.items[0], Block)
    with pytest.raises(ParseError):
        list(parse_beir_jsonl('{"id": 1}\n'))
    with pytest.raises(ParseError):
        list(parse_beir_jsonl("not json\n"))
