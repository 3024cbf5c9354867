"""What the index knows beyond its text: entities, relations and communities, and the vectors and rows the
graph strategies read. One place, three rooms:

- ``sql.py``: the extraction rows (``mentions``, ``cooccur``, ``aliases``) the store keeps, the views over them
  (``entities``, ``relations``, ``alias_map``), the communities re-clustered at each commit, and the
  descriptions and community reports written from the chunk text when they are shown;
- ``rows.py``: the rows a query reads, from DuckDB (``StoreRows``, a one-shot process) or from memory
  (``KnowledgeMemory``, a warm reader from its second query on);
- ``vectors.py``: the vectors of entities, relations, communities and summary-tree nodes, derived from the
  chunk vectors when a query first needs them (``DerivedVectors``); nothing of it is stored.
"""

from ragkit.store.knowledge.rows import KnowledgeMemory, StoreRows
from ragkit.store.knowledge.vectors import DerivedVectors

__all__ = ["DerivedVectors", "KnowledgeMemory", "StoreRows"]
