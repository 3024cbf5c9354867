"""The derived files of a run (evidence graph, entity graph, vocabulary, reference resolver) as data, never as
code: numpy arrays in ``.npz`` files read with ``allow_pickle=False``, lists of strings packed as one UTF-8 block
(NUL between them), and nested records as msgpack. An index folder can be shared through a folder or a bucket
others can write: nothing in it is unpickled or executed.

Indexes written before kept these files as pickles (``evidence.pkl``, ``entities.pkl``, ``vocab.pkl``,
``resolver.pkl``). A reader meeting one where the data file should be refuses it (``UnsafeIndexFile``) rather
than load it; the next indexing run writes the run's files anew, and ``ragkit check --repair`` rewrites them.
"""

from __future__ import annotations

import io
import os
import zipfile
from pathlib import Path
from typing import Any

import msgpack
import numpy as np

from ragkit.errors import IndexCorrupt

_RUN = "__run_id"
_STRINGS = "__strings__"
_PACKED = "__packed__"


class UnsafeIndexFile(IndexCorrupt):
    """An index file kept as a pickle (what older versions wrote): loading it could run code, so it is refused."""

    hint = "Rebuild the run's files: ragkit check --repair --index INDEX (or ragkit index PATH)"


def pack_strings(values: list[str]) -> np.ndarray:
    """Strings as one UTF-8 block, NUL between them (a NUL inside one becomes U+FFFD)."""
    return np.frombuffer("\0".join(v.replace("\0", "\ufffd") for v in values).encode(), dtype=np.uint8)


def unpack_strings(block: np.ndarray, count: int) -> list[str]:
    return block.tobytes().decode().split("\0") if count else []


def save(folder: Path, name: str, arrays: dict[str, Any], run_id: int | None) -> None:
    """Write ``arrays`` (numpy arrays, lists of strings, or any msgpack-able value) with the run id they belong
    to as ``folder/name`` (a compressed ``.npz``; atomic replace)."""
    folder.mkdir(parents=True, exist_ok=True)
    out: dict[str, np.ndarray] = {_RUN: np.asarray(-1 if run_id is None else run_id, dtype=np.int64)}
    strings, packed = [], []
    for key, value in arrays.items():
        if isinstance(value, np.ndarray):
            out[key] = value
        elif isinstance(value, list) and all(isinstance(v, str) for v in value):
            out[key] = pack_strings(value)
            out[f"{key}.count"] = np.asarray(len(value), dtype=np.int64)
            strings.append(key)
        else:
            out[key] = np.frombuffer(msgpack.packb(value, use_bin_type=True, default=str), dtype=np.uint8)
            packed.append(key)
    out[_STRINGS] = pack_strings(strings)
    out[f"{_STRINGS}.count"] = np.asarray(len(strings), dtype=np.int64)
    out[_PACKED] = pack_strings(packed)
    out[f"{_PACKED}.count"] = np.asarray(len(packed), dtype=np.int64)
    buffer = io.BytesIO()
    np.savez_compressed(buffer, **out)  # deflate, as the pickles were zlib'd: ids and names repeat (3-5× smaller)
    tmp = folder / f".{name}.tmp"
    tmp.write_bytes(buffer.getvalue())
    os.replace(tmp, folder / name)


def load(folder: Path, name: str) -> tuple[dict[str, Any], int | None] | None:
    """``(arrays, run id)`` of ``folder/name``, or None when it is missing or unreadable; ``UnsafeIndexFile``
    when, instead of it, the run's folder holds the pickle an older version wrote."""
    path = Path(folder) / name
    if not path.is_file():
        legacy = path.with_suffix(".pkl")
        if legacy.is_file():
            raise UnsafeIndexFile(
                f"{legacy} is a pickle (an older ragkit's): it is not loaded, since loading it could run code"
            )
        return None
    try:
        with np.load(path, allow_pickle=False) as data:
            raw = {key: data[key] for key in data.files}
        strings = unpack_strings(raw.pop(_STRINGS), int(raw.pop(f"{_STRINGS}.count")))
        packed = unpack_strings(raw.pop(_PACKED), int(raw.pop(f"{_PACKED}.count")))
        run_id = int(raw.pop(_RUN))
        out: dict[str, Any] = {}
        for key, value in raw.items():
            if key.endswith(".count") and key[: -len(".count")] in strings:
                continue
            if key in strings:
                out[key] = unpack_strings(value, int(raw[f"{key}.count"]))
            elif key in packed:
                out[key] = msgpack.unpackb(value.tobytes(), raw=False, strict_map_key=False)
            else:
                out[key] = value
    except (
        OSError,
        ValueError,
        EOFError,
        KeyError,
        TypeError,
        UnicodeDecodeError,
        zipfile.BadZipFile,
        msgpack.UnpackException,
    ):
        return None  # not an index file of this version: rebuilt from the store
    return out, (None if run_id < 0 else run_id)


def legacy_files(folder: Path) -> list[Path]:
    """The pickles of an older version in a run's folder."""
    return sorted(Path(folder).glob("*.pkl")) if Path(folder).is_dir() else []


def save_vocabulary(folder: Path, vocabulary: dict[str, int], run_id: int | None, name: str = "vocab.npz") -> None:
    """The index's words and their chunk frequencies."""
    words = list(vocabulary)
    save(folder, name, {"words": words, "counts": np.asarray([vocabulary[w] for w in words], dtype=np.int64)}, run_id)


def load_vocabulary(folder: Path, name: str = "vocab.npz") -> tuple[dict[str, int], int | None] | None:
    found = load(folder, name)
    if found is None:
        return None
    data, run_id = found
    return dict(zip(data["words"], data["counts"].tolist())), run_id
