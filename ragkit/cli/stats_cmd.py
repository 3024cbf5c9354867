"""ragkit stats"""

from __future__ import annotations

from rich.table import Table

from ragkit.cli.common import console, handle_errors, models, print_json
from ragkit.cli.options import AsJson, IndexOpt


def human_size(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.1f} {unit}" if unit != "B" else f"{int(n)} B"
        n /= 1024
    return f"{n:.1f} GiB"


@handle_errors
def stats_cmd(index: IndexOpt = None, as_json: AsJson = False):
    """Show what an index holds: documents, sections, chunks, doc_types, size per component, embedder."""
    from ragkit.config import index_origin

    st = models().open(index).stats() | {"found": index_origin(index)}
    if as_json:
        print_json(st)
        return
    t = Table(show_header=False, title=f"index {st['index']}")
    t.add_column(style="bold")
    t.add_column()
    t.add_row("found", st["found"])
    t.add_row("documents", str(st["documents"]))
    t.add_row("sections", str(st["sections"]))
    t.add_row("chunks", str(st["chunks"]))
    t.add_row("doc_types", ", ".join(f"{k} {v}" for k, v in st["doc_types"].items()))
    t.add_row("collections", ", ".join(f"{k} {v}" for k, v in st["collections"].items()))
    ratio = f" = {st['size_ratio']}× the source ({human_size(st['source_bytes'])})" if st["size_ratio"] else ""
    t.add_row("size on disk", human_size(st["size_bytes"]) + ratio)
    for part, n in sorted(st["bytes"].items(), key=lambda kv: -kv[1]):
        t.add_row(f"  {part}", human_size(n))
    scanned = st.get("ocr") or {}
    if scanned.get("pages_read") or scanned.get("pages_unread"):
        unread = scanned["pages_unread"]
        t.add_row("scanned pages", f"{scanned['pages_read']:,} read by OCR"
                  + (f", {unread:,} not read (ragkit check says why)" if unread else ""))  # fmt: skip
    e = st["embedder"]
    t.add_row("embedder", f"{e['name']} ({e['dimension']}d, fingerprint {e['fingerprint']})")
    if st.get("fill"):
        f = st["fill"]
        t.add_row("filling in", f"{f['model']}: {f['filled']:,} of {f['total']:,} chunks ({f['share']:.0%})")
    learned = st.get("learned") or {}
    for scope, m in learned.get("scopes", {}).items():
        gain = ""
        if m.get("before") and m.get("after"):
            gain = (
                f": held-out nDCG@10 {m['before']['ndcg@10']:.3f} → {m['after']['ndcg@10']:.3f}, "
                f"top-1 {m['before']['top1']:.3f} → {m['after']['top1']:.3f}"
            )
        t.add_row(
            f"learned ranker ({scope})",
            f"v{m['version']}, fitted {m.get('fitted')} on {m.get('queries')} queries{gain}",
        )
    if learned and not learned.get("scopes"):
        t.add_row("ranker", "the shipped default" if learned.get("shipped_default") else "the hand-set weights")
    for scope, languages in (learned.get("answers") or {}).items():
        for language, m in languages.items():
            t.add_row(
                f"answers abstain ({scope}, {language})",
                f"under confidence {m['threshold']:.3f}, fitted {m.get('fitted')} on {m.get('answers')} questions "
                f"with rated answers: held-out right {m['before']['right']:.3f} → {m['after']['right']:.3f}",
            )
    if st["last_run"]:
        lr = st["last_run"]
        t.add_row(
            "last run",
            f"#{lr['id']}: new {lr['new']}, changed {lr['changed']}, unchanged {lr['unchanged']}, "
            f"removed {lr['removed']}, skipped {lr['skipped']}",
        )
    console.print(t)
