"""``ragkit models serve``: ragkit's own models behind the APIs other tools speak, so a team shares one warm
process (and any OpenAI-compatible client can use ragkit's bundled models):

    GET  /v1/models             the models served
    POST /v1/embeddings         OpenAI shape: {"model", "input": str | [str]} → {"data": [{"index", "embedding"}]}
    POST /v1/rerank             Cohere/Jina shape: {"model", "query", "documents", "top_n"} →
                                {"results": [{"index", "relevance_score"}]}, best first
    POST /v1/chat/completions   OpenAI shape, streamed as server-sent events with "stream": true

Each role serves the model its spec names (ragkit/modelspec.py); a request for another model is a 404.
Errors are OpenAI-shaped: ``{"error": {"message", "type", "code"}}``. Models are not thread-safe: one lock
each.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, StreamingResponse

from ragkit import __version__
from ragkit.embed import load_embedder
from ragkit.errors import RagkitError
from ragkit.generate import load_generator
from ragkit.rerank.models import RerankUnavailable, load_reranker


class ServedModels:
    """The models one server answers with, loaded at start, each behind its own lock."""

    def __init__(self, embed: str | None, rerank: str | None, generate: str | None, n_ctx: int = 4096):
        self.embedder = load_embedder(embed, encoder="auto") if embed else None
        self.reranker = load_reranker(rerank) if rerank else None
        self.generator = load_generator(generate, n_ctx=n_ctx) if generate else None
        self.locks = {role: threading.Lock() for role in ("embed", "rerank", "generate")}

    def names(self) -> dict[str, str]:
        found = {"embed": self.embedder, "rerank": self.reranker, "generate": self.generator}
        return {role: m.name for role, m in found.items() if m is not None}


class ApiError(Exception):
    def __init__(self, status: int, message: str, kind: str = "invalid_request_error"):
        super().__init__(message)
        self.status, self.message, self.kind = status, message, kind


def _model(served: ServedModels, role: str, asked: str | None):
    model = {"embed": served.embedder, "rerank": served.reranker, "generate": served.generator}[role]
    if model is None:
        raise ApiError(404, f"this server serves no {role} model", "model_not_found")
    if asked and asked != model.name:
        raise ApiError(
            404, f"model {asked!r} is not served here (the {role} model is {model.name!r})", "model_not_found"
        )
    return model


def _embeddings(served: ServedModels, body: dict[str, Any]) -> dict[str, Any]:
    """``POST /v1/embeddings`` (OpenAI shape)."""
    model = _model(served, "embed", body.get("model"))
    texts = body.get("input")
    texts = [texts] if isinstance(texts, str) else texts
    if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts):
        raise ApiError(400, "input must be a string or a list of strings")
    with served.locks["embed"]:
        vectors = model.encode(texts)
    return {
        "object": "list",
        "model": model.name,
        "data": [{"object": "embedding", "index": i, "embedding": v.tolist()} for i, v in enumerate(vectors)],
        "usage": {"prompt_tokens": sum(model.count_tokens(texts)), "total_tokens": 0},
    }


def _rerank(served: ServedModels, body: dict[str, Any]) -> dict[str, Any]:
    """``POST /v1/rerank`` (Cohere/Jina shape)."""
    model = _model(served, "rerank", body.get("model"))
    docs = [d.get("text", "") if isinstance(d, dict) else d for d in body.get("documents") or []]
    if not isinstance(body.get("query"), str) or not all(isinstance(d, str) for d in docs):
        raise ApiError(400, "query must be a string and documents a list of strings")
    try:
        with served.locks["rerank"]:
            scores = model.score(body["query"], docs)
    except RerankUnavailable as exc:
        raise ApiError(500, str(exc), "server_error") from exc
    order = sorted(range(len(docs)), key=lambda i: -scores[i])[: body.get("top_n") or len(docs)]
    results = [{"index": i, "relevance_score": scores[i]} for i in order]
    if body.get("return_documents"):
        for r in results:
            r["document"] = {"text": docs[r["index"]]}
    return {"model": model.name, "results": results}


def _chat(served: ServedModels, body: dict[str, Any]):
    """``POST /v1/chat/completions`` (OpenAI shape), whole or streamed as server-sent events."""
    model = _model(served, "generate", body.get("model"))
    messages = body.get("messages") or []
    prompt = "\n\n".join(str(m.get("content", "")) for m in messages if m.get("role") != "system")
    args = {
        "max_tokens": int(body.get("max_tokens") or 256),
        "temperature": float(body.get("temperature", 0.0)),
        "stop": body.get("stop") if isinstance(body.get("stop"), list) else None,
    }
    reply = {"id": f"chatcmpl-{uuid.uuid4().hex[:12]}", "created": int(time.time()), "model": model.name}
    if not body.get("stream"):
        with served.locks["generate"]:
            text = model.complete(prompt, **args)
        message = {"role": "assistant", "content": text}
        return reply | {
            "object": "chat.completion",
            "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
        }

    def events():
        with served.locks["generate"]:
            for piece in model.stream(prompt, **args):
                chunk = reply | {
                    "object": "chat.completion.chunk",
                    "choices": [{"index": 0, "delta": {"content": piece}}],
                }
                yield f"data: {json.dumps(chunk)}\n\n"
        yield "data: [DONE]\n\n"

    return StreamingResponse(events(), media_type="text/event-stream")


def create_models_app(served: ServedModels) -> FastAPI:
    app = FastAPI(title="ragkit models", version=__version__)

    @app.exception_handler(ApiError)
    def api_error(request: Request, exc: ApiError):
        return JSONResponse(
            {"error": {"message": exc.message, "type": exc.kind, "code": exc.status}}, status_code=exc.status
        )

    @app.exception_handler(RagkitError)
    def ragkit_error(request: Request, exc: RagkitError):
        return JSONResponse({"error": {"message": exc.message, "type": "server_error", "code": 500}}, 500)

    @app.get("/v1/models")
    def list_models():
        data = [
            {"id": name, "object": "model", "owned_by": "ragkit", "role": role} for role, name in served.names().items()
        ]
        return {"object": "list", "data": data}

    @app.post("/v1/embeddings")
    def embeddings(body: dict[str, Any]):
        return _embeddings(served, body)

    @app.post("/v1/rerank")
    def rerank(body: dict[str, Any]):
        return _rerank(served, body)

    @app.post("/v1/chat/completions")
    def chat(body: dict[str, Any]):
        return _chat(served, body)

    return app


def serve_models(served: ServedModels, host: str, port: int, on_ready=None) -> None:
    """Serve until interrupted (uvicorn on one loopback or given address)."""
    import socket

    import uvicorn

    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.bind((host, port))
    sock.listen(512)
    bound = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(create_models_app(served), log_level="warning", access_log=False))
    if on_ready:
        on_ready({"url": f"http://{host}:{bound}/v1", "port": bound, "models": served.names()})
    server.run(sockets=[sock])
