"""The chunks table's layout in LanceDB: how it is opened, its Arrow schema, its full-text (BM25) languages and
settings, and its rows read back (as dicts, with the text cut from the embedded content, and as ``Hit``s).
The table itself is read by ragkit/store/lance.py and written by ragkit/store/lance_write.py."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa

from ragkit.records import Hit


def _quiet() -> None:
    """Before lance or lancedb is imported: their Rust loggers are chatty at WARN for harmless events."""
    import os

    os.environ.setdefault("LANCE_LOG", "error")
    os.environ.setdefault("LANCEDB_LOG", "error")


def _connect(path: Path | str):
    _quiet()
    import lancedb

    return lancedb.connect(str(path))


def chunk_schema(dim: int) -> pa.Schema:
    return pa.schema(
        [
            ("id", pa.string()),
            ("document_id", pa.string()),
            ("section_id", pa.string()),
            ("chunk_index", pa.int32()),
            ("header", pa.string()),
            ("content", pa.string()),  # header + "\n" + text: what was embedded and what BM25 indexes (the text
            # itself is read back from it: a column of its own would store every chunk twice)
            ("terms", pa.string()),  # German / Swedish: the parts of the content's compounds, which BM25 also
            # indexes ("Ruhepausen" → "ruhe pausen"); else null
            ("path", pa.string()),
            ("title", pa.string()),
            ("doc_type", pa.string()),
            ("collection", pa.string()),
            ("external_id", pa.string()),
            ("line_start", pa.int32()),
            ("line_end", pa.int32()),
            ("token_count", pa.int32()),
            ("boundary_confidence", pa.float32()),
            ("page_start", pa.int32()),
            ("page_end", pa.int32()),  # paged formats (PDF), else null
            ("vector", pa.list_(pa.float32(), dim)),
        ]
    )


COMPOUND_FTS = {"German": "de", "Swedish": "sv"}  # BM25 languages whose index also holds the compounds' parts


FTS_LANGUAGES = {"de": "German", "sv": "Swedish", "en": "English"}


def fts_language(configured: str, recorded: str | None, chunk_languages: list[str]) -> str:
    """A run's BM25 language: as configured, else the one the index was built with, else the language of most
    of the run's chunks (German laws get German stemming without being told)."""
    if configured != "auto":
        return configured
    if recorded:
        return recorded
    counts: dict[str, int] = {}
    for language in chunk_languages:
        counts[language] = counts.get(language, 0) + 1
    return FTS_LANGUAGES.get(max(counts, key=lambda k: counts[k]) if counts else "en", "English")


@dataclass
class FtsSettings:
    language: str = "English"
    stem: bool = True
    remove_stop_words: bool = True

    def columns(self) -> list[str]:
        """The columns with a full-text index: ``terms`` too where compounds are split."""
        return ["content", "terms"] if self.language in COMPOUND_FTS else ["content"]


def chunk_text(content: str, header: str | None) -> str:
    """A chunk's text from the embedded content (header + newline + text)."""
    return content[len(header) + 1 :] if header and content.startswith(header + "\n") else content


def _rows(table: pa.Table) -> list[dict[str, Any]]:
    """Arrow result → row dicts, with vectors as numpy rows (no per-float Python objects)."""
    cols = {name: table.column(name).to_pylist() for name in table.column_names if name != "vector"}
    if "content" in cols and "header" in cols:
        cols["text"] = [chunk_text(c, h) for c, h in zip(cols["content"], cols["header"])]
    vectors = None
    if "vector" in table.column_names and table.num_rows:
        arr = table.column("vector").combine_chunks()
        vectors = arr.flatten().to_numpy(zero_copy_only=False).reshape(table.num_rows, -1)
    return [
        {**{k: v[i] for k, v in cols.items()}, "vector": vectors[i] if vectors is not None else None}
        for i in range(table.num_rows)
    ]


def to_hits(rows: list[dict[str, Any]], kind: str) -> list[Hit]:
    """Chunk rows of a dense (``_distance``) or BM25 (``_score``) search as hits."""
    hits = []
    for r in rows:
        score = 1.0 - float(r["_distance"]) if kind == "dense" else float(r["_score"])
        hits.append(
            Hit(
                chunk_id=r["id"],
                document_id=r["document_id"],
                section_id=r["section_id"],
                chunk_index=int(r["chunk_index"]),
                text=r["text"],
                header=r["header"],
                path=r["path"],
                title=r["title"],
                doc_type=r["doc_type"],
                collection=r["collection"],
                line_start=int(r["line_start"]),
                line_end=int(r["line_end"]),
                token_count=int(r["token_count"]),
                external_id=r["external_id"],
                score=score,
                boundary_confidence=float(r["boundary_confidence"]),
                vector=r.get("vector"),
                page_start=r.get("page_start"),
                page_end=r.get("page_end"),
            )
        )
    return hits
