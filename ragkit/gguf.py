"""llama.cpp in-process (``llama-cpp-python``): loading a GGUF file with its C logs kept quiet, for the three
model roles (embed/gguf_encoder.py, rerank/models.py, generate.py). llama_cpp is imported on first use."""

from __future__ import annotations

import os
from pathlib import Path

from ragkit.errors import ModelUnavailable
from ragkit.extras import missing


def load_llama(path: Path, **params):
    """A llama.cpp model with its C logs quiet; ``ModelUnavailable`` when the library or the file fails."""
    try:
        from llama_cpp import Llama
    except ImportError as exc:
        raise missing("llm", f"the GGUF model {path.name} (llama.cpp in-process)") from exc
    if not path.is_file():
        raise ModelUnavailable(f"GGUF model not found: {path}", hint="Pass the path of a .gguf file.")
    quiet_llama_logs()
    try:
        return Llama(model_path=str(path), n_threads=os.cpu_count() or 2, verbose=False, **params)
    except (ValueError, RuntimeError) as exc:  # llama.cpp could not read the file
        raise ModelUnavailable(
            f"cannot load the GGUF model {path}: {exc}", hint="Is it a readable .gguf file?"
        ) from exc


_LOG_CALLBACK = None


def quiet_llama_logs() -> None:
    """Route llama.cpp's C-level log lines through a callback that keeps only errors (ggml's levels: 0 none,
    1 debug, 2 info, 3 warn, 4 error, 5 continuation)."""
    global _LOG_CALLBACK
    if _LOG_CALLBACK is not None:
        return
    import ctypes
    import sys

    import llama_cpp

    @llama_cpp.llama_log_callback
    def callback(level: int, text: bytes, user_data) -> None:
        if level == 4:
            sys.stderr.write(text.decode("utf-8", "replace"))

    _LOG_CALLBACK = callback  # keep a reference: C holds only the pointer
    llama_cpp.llama_log_set(callback, ctypes.c_void_p(0))


# GGUF value types (the file format's header): the scalar ones and their struct codes; 8 = string, 9 = array
_SCALARS = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d"}


def read_metadata(path: Path, until: str = "tokenizer.") -> dict[str, object]:
    """A GGUF file's metadata (its header's key–value pairs, arrays skipped) up to the first key that starts
    with ``until`` (the tokenizer's vocabulary follows the model's own keys: reading it costs 0.3 s), without
    loading the model: what llama.cpp must be told (architecture, pooling type) is known first."""
    import struct

    def read(fmt: str):
        size = struct.calcsize("<" + fmt)
        return struct.unpack("<" + fmt, fh.read(size))[0]

    def text() -> str:
        return fh.read(read("Q")).decode("utf-8", "replace")

    def value(kind: int):
        if kind in _SCALARS:
            return read(_SCALARS[kind])
        if kind == 8:
            return text()
        if kind == 9:
            inner, count = read("I"), read("Q")
            for _ in range(count):
                value(inner)
            return None
        raise ValueError(f"unknown GGUF value type {kind}")

    out: dict[str, object] = {}
    try:
        with open(path, "rb") as fh:
            if fh.read(4) != b"GGUF":
                raise ModelUnavailable(f"{path} is not a GGUF file")
            read("I")  # version
            read("Q")  # tensors
            for _ in range(read("Q")):
                key = text()
                if until and key.startswith(until):
                    break
                out[key] = value(read("I"))
    except (OSError, struct.error, ValueError) as exc:
        raise ModelUnavailable(f"cannot read the GGUF header of {path}: {exc}") from exc
    return out
