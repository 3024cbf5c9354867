"""The held-out guard's rule: a change is adopted only when its gain on the held-out part can be told from noise.

A held-out part of a few dozen queries moves by chance: ``ragkit learn`` once adopted a ranker on +0.002 nDCG@10
over 47 held-out SciFact queries that then lost 0.019 on SciFact questions it never saw. So each held-out query's
figure before and after is paired, and the pairs are resampled (a paired bootstrap): the change counts as better
only when the mean gain is above zero in at least 95 % of the resampled held-out sets (``P_MAX`` = 0.05). The
same rule decides what ``ragkit learn`` adopts (rankers, abstention thresholds) and where the shipped reranker is
on by default (scripts/bench_reranker.py).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

P_MAX = 0.05
ROUNDS = 2000
SEED = 51


def paired_bootstrap(before: Sequence[float], after: Sequence[float], rounds: int = ROUNDS, seed: int = SEED) -> float:
    """The share of ``rounds`` resampled held-out sets (queries drawn with replacement, each with its own pair)
    on which the mean of ``after`` is not above the mean of ``before``: a one-sided p-value (1.0 for no pairs)."""
    gain = np.asarray(after, dtype=float) - np.asarray(before, dtype=float)
    if len(gain) == 0:
        return 1.0
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, len(gain), size=(rounds, len(gain)))
    return float(np.mean(gain[picks].mean(axis=1) <= 0))


def better(before: Sequence[float], after: Sequence[float], p_max: float = P_MAX) -> tuple[bool, float]:
    """Whether ``after`` beats ``before`` on these held-out queries by more than chance would, and the p-value."""
    p = paired_bootstrap(before, after)
    return p < p_max, p
