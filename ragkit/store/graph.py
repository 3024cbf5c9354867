"""Evidence graph (igraph): document → section → chunk structure plus references and versions.

Edge types: ``parent_of`` / ``child_of`` (document → root section → subsections
→ chunks), ``adjacent_to`` (consecutive chunks of one section, both ways),
``references`` (chunk → cited section, or document when no section resolved)
and ``supersedes`` (newer document → older version).

The graph is derived state: after each committed run it is rebuilt from the
DuckDB store (a few hundred ms for ~10k chunks, measured) and saved with the
run id, so it can never drift from the store; a reader whose saved graph is
stale rebuilds it in memory.
"""

from __future__ import annotations

import json
from collections import Counter
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np

from ragkit.store import arrays

EDGE_TYPES = ("parent_of", "child_of", "adjacent_to", "references", "supersedes")
FILE = "evidence.npz"


class SavedGraph:
    """Saving and loading of a derived graph's arrays with the run id it belongs to (``ragkit.store.arrays``:
    data, never pickles)."""

    FILE = ""

    def arrays(self) -> dict[str, Any]:
        raise NotImplementedError

    def save(self, folder: Path) -> None:
        arrays.save(folder, self.FILE, self.arrays(), self.run_id)

    @classmethod
    def load(cls, folder: Path):
        found = arrays.load(folder, cls.FILE)
        return cls(*found) if found else None


def _pack(names, kinds, docs, labels, order, latest, edges, types, chunks_per_doc=None) -> dict[str, Any]:
    """EvidenceGraph's arrays from per-vertex lists and (source, target) edges with their types' names."""
    codes = sorted(set(kinds))
    data = {
        "name": list(names),
        "kinds": codes,
        "kind": np.asarray([codes.index(k) for k in kinds], dtype=np.uint8),
        "doc": list(docs),
        "label": arrays.pack_strings(list(labels)),  # decoded when asked (``_labels``)
        "label.n": np.asarray(len(labels), dtype=np.int64),
        "order": np.asarray(order, dtype=np.int32),
        "is_latest": np.asarray(latest, dtype=bool),
        "edges": np.asarray(edges, dtype=np.int32).reshape(-1, 2),
        "etype": np.asarray([EDGE_TYPES.index(t) for t in types], dtype=np.uint8),
    }
    if chunks_per_doc is not None:
        data["chunks_per_doc"] = dict(chunks_per_doc)
    return data


def _arrays(g) -> dict[str, Any]:
    """An igraph evidence graph as EvidenceGraph's arrays."""
    n, e = g.vcount(), g.ecount()
    attr = (lambda name: g.vs[name]) if n else (lambda name: [])
    types = g.es["type"] if e else []
    return _pack(
        attr("name"),
        attr("kind"),
        attr("doc"),
        attr("label"),
        attr("order"),
        attr("is_latest"),
        g.get_edgelist(),
        types,
    )


class EvidenceGraph(SavedGraph):
    """Held as arrays (the vertices' attributes, the edges as two int32 columns and a type code each) with
    the edges of each vertex found by ``np.searchsorted`` over the edges sorted by source and by target: a
    query reads a few vertices' neighbours, and unpickling an igraph graph (building it from 1.3 million
    edges) took 0.7 of the 0.9 s all of federal law's graph took to load. The igraph graph (``g``) is built
    when a whole-graph view needs it (subgraph, export, stats)."""

    FILE = FILE

    def __init__(self, data, run_id: int | None = None):
        if not isinstance(data, dict):  # an igraph graph
            data = _arrays(data)
        self.data = data
        self.run_id = run_id
        self._names: list[str] = data["name"]
        self._idx = {name: i for i, name in enumerate(self._names)}
        self._order = data["order"]
        self._kinds = data["kinds"]
        self._edges = data["edges"]
        self._etype = data["etype"]
        self._by = {mode: np.argsort(self._edges[:, col], kind="stable") for mode, col in (("out", 0), ("in", 1))}
        self._sorted = {mode: self._edges[self._by[mode], col] for mode, col in (("out", 0), ("in", 1))}
        self._g = None

    @cached_property
    def _labels(self) -> list[str]:
        """The vertices' labels (titles, breadcrumbs): kept packed until asked for, since no query reads them
        (26 of the 56 MB of federal law's graph)."""
        return arrays.unpack_strings(self.data["label"], int(self.data["label.n"]))

    @cached_property
    def _chunks_per_doc(self) -> dict[str, int]:
        if "chunks_per_doc" in self.data:  # counted when built (0.13 s of a one-shot query over federal law)
            return self.data["chunks_per_doc"]
        chunk = self._kinds.index("chunk") if "chunk" in self._kinds else -1
        return Counter(d for d, k in zip(self.data["doc"], self.data["kind"]) if k == chunk)

    @property
    def g(self):
        """The graph as igraph (built on first use)."""
        if self._g is None:
            import igraph as ig

            d = self.data
            g = ig.Graph(n=len(self._names), directed=True)
            g.add_edges(d["edges"])
            g.vs["name"], g.vs["doc"], g.vs["label"] = self._names, d["doc"], self._labels
            g.vs["kind"] = [self._kinds[k] for k in d["kind"]]
            g.vs["order"], g.vs["is_latest"] = d["order"].tolist(), d["is_latest"].tolist()
            g.es["type"] = [EDGE_TYPES[t] for t in self._etype]
            self._g = g
        return self._g

    def arrays(self) -> dict[str, Any]:
        return self.data

    # ---------------------------------------------------------------- build

    @classmethod
    def from_store(cls, store, run_id: int | None, superseded: dict[str, str]) -> EvidenceGraph:
        """``superseded``: older document id → the id of the document that supersedes it (the reference
        resolver's ``superseded()``, ragkit/extract/resolve.py: the caller builds it)."""
        names: list[str] = []
        kinds: list[str] = []
        docs: list[str] = []
        labels: list[str] = []
        order: list[int] = []
        latest: list[bool] = []

        same: dict[str, str] = {}  # one string per document id

        def add(name, kind, doc, label, pos, is_latest=True):
            names.append(name), kinds.append(kind), docs.append(same.setdefault(doc, doc)), labels.append(label)
            order.append(pos), latest.append(is_latest)

        for d in store.rows("SELECT id, title, path, is_latest FROM documents ORDER BY id"):
            add(d["id"], "document", d["id"], d["title"] or d["path"], 0, bool(d["is_latest"]))
        sections = store.rows(
            "SELECT id, document_id, parent_id, breadcrumb, ord FROM sections ORDER BY document_id, ord"
        )
        for s in sections:
            add(s["id"], "section", s["document_id"], s["breadcrumb"], s["ord"])
        chunks = store.rows(
            "SELECT id, document_id, section_id, chunk_index FROM chunks ORDER BY document_id, chunk_index"
        )
        for c in chunks:
            add(c["id"], "chunk", c["document_id"], "", c["chunk_index"])
        idx = {n: i for i, n in enumerate(names)}
        edges: list[tuple[int, int]] = []
        types: list[str] = []

        def link(a, b, kind, both: str | None = None):
            if a in idx and b in idx:
                edges.append((idx[a], idx[b]))
                types.append(kind)
                if both:
                    edges.append((idx[b], idx[a]))
                    types.append(both)

        for s in sections:
            link(s["parent_id"] or s["document_id"], s["id"], "parent_of", "child_of")
        prev = None
        for c in chunks:
            link(c["section_id"], c["id"], "parent_of", "child_of")
            if prev and prev["section_id"] == c["section_id"] and prev["chunk_index"] + 1 == c["chunk_index"]:
                link(prev["id"], c["id"], "adjacent_to", "adjacent_to")
            prev = c
        for r in store.rows(
            "SELECT DISTINCT chunk_id, coalesce(resolved_section_id, resolved_document_id) AS t "
            "FROM refs WHERE resolved_document_id IS NOT NULL"
        ):
            link(r["chunk_id"], r["t"], "references")
        for old, new in superseded.items():
            link(new, old, "supersedes")
        data = _pack(
            names, kinds, docs, labels, order, latest, edges, types, dict(Counter(c["document_id"] for c in chunks))
        )
        return cls(data, run_id)

    # ---------------------------------------------------------------- traversal

    def __contains__(self, node: str) -> bool:
        return node in self._idx

    def kind(self, node: str) -> str:
        return self._kinds[self.data["kind"][self._idx[node]]]

    def attrs(self, node: str) -> dict[str, Any]:
        i, d = self._idx[node], self.data
        return {
            "name": node,
            "kind": self.kind(node),
            "doc": d["doc"][i],
            "label": self._labels[i],
            "order": int(d["order"][i]),
            "is_latest": bool(d["is_latest"][i]),
        }

    def neighbors(self, node: str, edge_type: str, mode: str = "out") -> list[str]:
        """Nodes reached from ``node`` over edges of one type (``mode`` out | in)."""
        if node not in self._idx or edge_type not in EDGE_TYPES:
            return []
        v, code = np.int32(self._idx[node]), EDGE_TYPES.index(edge_type)  # (a Python int: the keys cast)
        keys = self._sorted[mode]
        lo, hi = np.searchsorted(keys, v, "left"), np.searchsorted(keys, v, "right")
        found = self._by[mode][lo:hi]
        found = found[self._etype[found] == code]
        other = self._edges[found, 1 if mode == "out" else 0].tolist()
        return [self._names[i] for i in sorted(other, key=lambda i: self._order[i])]

    def chunk_count(self, doc: str) -> int:
        return self._chunks_per_doc.get(doc, 0)

    def get_parent(self, node: str) -> str | None:
        parents = self.neighbors(node, "child_of")
        return parents[0] if parents else None

    def get_children(self, node: str) -> list[str]:
        return self.neighbors(node, "parent_of")

    def get_adjacent(self, chunk: str) -> list[str]:
        return self.neighbors(chunk, "adjacent_to")

    def get_section(self, chunk: str) -> str | None:
        parent = self.get_parent(chunk)
        return parent if parent and self.kind(parent) == "section" else None

    def get_document(self, node: str) -> str | None:
        return self.data["doc"][self._idx[node]] if node in self._idx else None

    def get_subgraph(self, node: str, depth: int = 1) -> EvidenceGraph:
        """The nodes within ``depth`` hops of ``node`` (any edge type) and the edges among them."""
        if node not in self._idx:
            raise KeyError(node)
        ids = self.g.neighborhood(self._idx[node], order=depth, mode="all")
        return EvidenceGraph(self.g.induced_subgraph(sorted(ids)), self.run_id)

    def is_latest(self, doc: str) -> bool:
        return bool(self.data["is_latest"][self._idx[doc]]) if doc in self._idx else True

    def superseded(self) -> list[str]:
        """The documents a newer version replaces."""
        d = self.data
        document = self._kinds.index("document") if "document" in self._kinds else -1
        return [n for n, k, latest in zip(self._names, d["kind"], d["is_latest"]) if k == document and not latest]

    # ---------------------------------------------------------------- reporting

    def stats(self) -> dict[str, Any]:
        kinds = [self._kinds[k] for k in self.data["kind"]]
        return {
            "nodes": len(self._names),
            "edges": len(self._etype),
            "node_kinds": dict(Counter(kinds)),
            "edge_types": dict(Counter(EDGE_TYPES[t] for t in self._etype)),
            "run_id": self.run_id,
        }

    def export(self, path: Path, fmt: str) -> None:
        if fmt == "graphml":
            self.g.write_graphml(str(path))
        elif fmt == "json":  # networkx node-link layout
            data = {
                "directed": True,
                "multigraph": False,
                "graph": {"run_id": self.run_id},
                "nodes": [
                    {"id": v["name"], **{k: v[k] for k in ("kind", "doc", "label", "order", "is_latest")}}
                    for v in self.g.vs
                ],
                "links": [
                    {"source": self.g.vs[e.source]["name"], "target": self.g.vs[e.target]["name"], "type": e["type"]}
                    for e in self.g.es
                ],
            }
            path.write_text(json.dumps(data))
        else:
            raise ValueError(f"unknown export format {fmt!r}")
