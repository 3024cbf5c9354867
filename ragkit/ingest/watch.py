"""``ragkit index PATH --watch``: stay up and index again whenever files under the paths change.

watchfiles reports changes (batched: ``DEBOUNCE_MS`` of quiet before a batch counts); each batch runs an
ordinary incremental ``index()`` over the same paths, which touches only what changed and commits a new run
that readers and a running ``ragkit serve`` pick up. Changes inside the index folder itself and in hidden
files are ignored (an index inside a watched folder would otherwise wake itself up).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

DEBOUNCE_MS = 800


def changes(paths: list[Path], index_dir: Path, stop_event=None, force_polling: bool | None = None) -> Iterator[int]:
    """The number of changed files in each batch, until interrupted or ``stop_event`` is set."""
    import watchfiles

    index_dir = index_dir.resolve()
    base = watchfiles.DefaultFilter()

    def wanted(change, path: str) -> bool:
        p = Path(path).resolve()
        if p == index_dir or index_dir in p.parents:
            return False
        return base(change, path) and not any(part.startswith(".") for part in p.parts[-1:])

    for batch in watchfiles.watch(
        *paths,
        watch_filter=wanted,
        debounce=DEBOUNCE_MS,
        stop_event=stop_event,
        force_polling=force_polling,
        raise_interrupt=False,
    ):
        yield len(batch)


def watch(
    paths: list[Path],
    index_dir: Path,
    run: Callable[[], object],
    on_batch: Callable[[int], None] | None = None,
    stop_event=None,
) -> int:
    """Run ``run()`` (an incremental index of ``paths``) after every batch of changes; returns the runs made."""
    runs = 0
    for n in changes(paths, index_dir, stop_event):
        if on_batch:
            on_batch(n)
        run()
        runs += 1
    return runs
