"""ragkit: local retrieval toolkit over embedded storage."""

import os

# numpy's OpenBLAS threads spin after a parallel run and took a core from what followed a dense search on two
# cores (hippo's PageRank 42 → 118 ms on SciFact); ragkit's numpy work is matrix × vector, which one thread
# does at memory speed. Set before numpy is imported (an application that imported numpy first keeps its own).
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

__version__ = "0.1.0"
