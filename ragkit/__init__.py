"""ragkit: local retrieval toolkit over embedded storage.

    import ragkit
    ix = ragkit.open("handbook")          # an Index (ragkit/library/engine.py)
    ix.query("how are overtime hours limited?", k=5)

``ragkit.open``, ``ragkit.index``, ``ragkit.evaluate`` and ``ragkit.Index`` load the library on first use, so
``import ragkit`` (and ``ragkit --help``) stays light.
"""

import os

# numpy's OpenBLAS threads spin after a parallel run and took a core from what followed a dense search on two
# cores (hippo's PageRank 42 → 118 ms on SciFact); ragkit's numpy work is matrix × vector, which one thread
# does at memory speed. Set before numpy is imported (an application that imported numpy first keeps its own).
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

__version__ = "0.1.0"
__all__ = ["Index", "evaluate", "index", "open"]


def __getattr__(name: str):
    if name == "evaluate":
        from ragkit import measure

        return measure.evaluate
    if name in __all__:
        from ragkit import library

        return getattr(library, name)
    raise AttributeError(f"module 'ragkit' has no attribute {name!r}")
