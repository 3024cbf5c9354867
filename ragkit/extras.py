"""ragkit's extras: the heavy parts a plain ``pip install ragkit`` leaves out, what each is for, whether it is
installed, and the line that installs it (with llama.cpp's build flags for this machine).

``pip install ragkit`` indexes and queries every format with the bundled encoders (ONNX Runtime), answers with
quotes, serves HTTP, MCP and the page, and learns from feedback. A feature that needs more stops with
``ExtraMissing`` (exit code 5, as ``ModelUnavailable``): one line naming the feature and the extra, a hint with
the command. ``ragkit models`` lists them (``status()``).

This file imports nothing but the standard library at its top, so that ``python scripts/llm_build_flags.py``
can print the flags before ragkit is installed (the README's second line).
"""

from __future__ import annotations

import importlib.util
import platform
import subprocess
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Extra:
    name: str
    modules: tuple[str, ...]  # importable when the extra is installed
    serves: str


EXTRAS = {
    e.name: e
    for e in (
        Extra(
            "llm",
            ("llama_cpp",),
            "local generation (--answer-mode generate), --planner llm, --extract llm, "
            "--summaries llm, GGUF embedders and rerankers, the bundled Gemma GGUF",
        ),  # fmt: skip
        Extra(
            "torch",
            ("torch", "sentence_transformers"),
            "sentence-transformers folders run by torch "
            '(encoder = "torch"), CrossEncoder folders, models other than BERT, the training scripts',
        ),  # fmt: skip
        Extra("s3", ("boto3",), "indexes on S3 and S3-compatible storage (s3://…)"),
        Extra("ray", ("ray",), "ragkit index --engine ray"),
        Extra("ocr", ("tesserocr",), "scanned PDF pages and pictures read by Tesseract"),
    )
}
# x86-64 instruction sets llama.cpp's ggml is built for when the CPU has them (/proc/cpuinfo's flag → CMake's
# GGML_ option); native builds are off: one crashed in ggml's AMX kernels on this project's machines
X86_FLAGS = (("avx2", "AVX2"), ("fma", "FMA"), ("f16c", "F16C"))


def installed(name: str) -> bool:
    """Whether the extra ``name`` is installed here (its modules importable; nothing is imported)."""
    try:
        return all(importlib.util.find_spec(m) is not None for m in EXTRAS[name].modules)
    except (ImportError, ValueError):  # a module found broken, or one a finder refuses
        return False


def cpu_flags() -> set[str]:
    """This CPU's instruction-set flags, lower case (Linux: /proc/cpuinfo; macOS: sysctl); empty when unknown."""
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.is_file():
        for line in cpuinfo.read_text(errors="replace").splitlines():
            if line.startswith("flags"):
                return set(line.split(":", 1)[1].lower().split())
        return set()
    try:
        out = subprocess.run(
            ["sysctl", "-n", "machdep.cpu.features", "machdep.cpu.leaf7_features"],
            capture_output=True, text=True, timeout=5,
        )  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return set()
    return set(out.stdout.lower().replace(".", "_").split())


def cmake_args(machine: str | None = None, flags: set[str] | None = None) -> str:
    """llama-cpp-python's ``CMAKE_ARGS`` for this machine: on x86-64, no native build and the instruction sets
    the CPU has; elsewhere (ARM, Apple) llama.cpp's own defaults. Never its picture library (llava/mtmd), which
    ragkit does not use."""
    machine = (machine or platform.machine()).lower()
    args = []
    if machine in ("x86_64", "amd64", "x64"):
        have = cpu_flags() if flags is None else flags
        args = ["-DGGML_NATIVE=OFF", *(f"-DGGML_{option}=ON" for flag, option in X86_FLAGS if flag in have)]
    return " ".join([*args, "-DLLAVA_BUILD=OFF"])


def install_line(name: str) -> str:
    """The command that installs the extra ``name`` here."""
    line = f'pip install "ragkit[{name}]"'
    return f'CMAKE_ARGS="{cmake_args()}" {line}' if name == "llm" else line


def missing(name: str, feature: str):
    """The error for ``feature`` asked for without the extra ``name`` (raise it ``from`` the ImportError)."""
    from ragkit.errors import ExtraMissing

    return ExtraMissing(f"{feature} needs the {name} extra, which is not installed", hint=install_line(name))


def status() -> list[dict]:
    """Each extra: its name, what it serves, whether it is installed and how to install it."""
    return [
        {"extra": e.name, "serves": e.serves, "installed": installed(e.name), "install": install_line(e.name)}
        for e in EXTRAS.values()
    ]
