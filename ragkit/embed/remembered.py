"""An encoder that keeps the vectors of the texts it encoded last: an answer's units are the sentences of its
passages, and questions about the same documents quote from the same sentences, so the answer step encodes each
sentence once per process instead of once per question (``Index.answer``; the quality gate's xquad-de
held-out half: see scripts/README.md "Answers")."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable

import numpy as np

SIZE = 8192  # texts kept (8192 × 384 float32: 12 MB), the least recently asked dropped first


class Remembered:
    """``encode`` (texts → unit vectors, one row each) with the last ``size`` texts' vectors kept; the texts it
    has not met are encoded together, in one call. Safe to share between threads."""

    def __init__(self, encode: Callable[[list[str]], np.ndarray], size: int = SIZE):
        self.encode, self.size = encode, size
        self._kept: OrderedDict[str, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()
        self.encoded = 0  # texts encoded (the rest were kept)

    def __call__(self, texts: list[str]) -> np.ndarray:
        with self._lock:
            found = {t: self._kept[t] for t in texts if t in self._kept}
            for t in found:
                self._kept.move_to_end(t)
        todo = list(dict.fromkeys(t for t in texts if t not in found))
        if todo:
            fresh = np.asarray(self.encode(todo), dtype=np.float32)
            found.update(zip(todo, fresh))
            with self._lock:
                self._kept.update(zip(todo, fresh))
                self.encoded += len(todo)
                while len(self._kept) > self.size:
                    self._kept.popitem(last=False)
        return np.stack([found[t] for t in texts]) if texts else np.zeros((0, 0), dtype=np.float32)
