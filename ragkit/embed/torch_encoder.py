"""The sentence-transformers (torch) encoder: ``encoder = "torch"`` and the source of the ONNX export."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ragkit.embed.models import BUNDLED, Embedder, fingerprint, model_name, prompts, torch_model_dir
from ragkit.embed.torch_export import quiet_offline_transformers
from ragkit.errors import ModelUnavailable
from ragkit.extras import missing


class SentenceTransformerEmbedder(Embedder):
    def __init__(self, spec: str = BUNDLED, batch_size: int = 32):
        self.spec = spec
        self.model_dir = torch_model_dir(spec)
        self.name = model_name(spec, self.model_dir)
        self.fingerprint = fingerprint(self.model_dir)
        self.batch_size = batch_size
        self.encoder = "torch"
        try:
            quiet_offline_transformers()
            from sentence_transformers import SentenceTransformer
        except ImportError as exc:
            raise missing("torch", 'encoder = "torch"') from exc
        try:
            self.model = SentenceTransformer(str(self.model_dir), device="cpu", local_files_only=True)
        except Exception as exc:  # a broken folder can fail in many ways
            raise ModelUnavailable(f"cannot load embedding model {spec}: {exc}") from exc
        self.dimension = int(
            self.model.get_embedding_dimension()
            if hasattr(self.model, "get_embedding_dimension")
            else self.model.get_sentence_embedding_dimension()
        )
        self.max_tokens = int(self.model.max_seq_length or 256)
        self._tokenizer = self.model.tokenizer
        self._query_prompt, self._document_prompt = prompts(spec)
        import torch

        self._batch_threads = torch.get_num_threads()  # batches use every core (queries one: encode_query)

    def count_tokens(self, texts: list[str]) -> list[int]:
        if not texts:
            return []
        enc = self._tokenizer(
            texts, add_special_tokens=False, return_attention_mask=False, return_token_type_ids=False, verbose=False
        )
        return [len(ids) for ids in enc["input_ids"]]

    def encode(self, texts: list[str], progress: Callable[[int], None] | None = None) -> np.ndarray:
        """Embed ``texts`` (normalised), longest first in slices so progress can be shown."""
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        if not texts:
            return out
        self._threads(self._batch_threads)
        order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
        step = self.batch_size * 4  # a progress update every few batches
        for start in range(0, len(order), step):
            idx = order[start : start + step]
            vecs = self.model.encode(
                [self._document_prompt + texts[i] for i in idx],
                batch_size=self.batch_size,
                normalize_embeddings=True,
                convert_to_numpy=True,
                show_progress_bar=False,
            )
            out[idx] = vecs
            if progress:
                progress(len(idx))
        return out

    def encode_queries(self, texts: list[str]) -> np.ndarray:
        """Queries' vectors, on one thread: OpenMP's idle workers spin after a parallel run and slowed the graph
        work that follows a query on two cores (hippo's PageRank 12 → 45 ms)."""
        self._threads(1)
        return self.model.encode(
            [self._query_prompt + t for t in texts],
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )

    def _threads(self, n: int) -> None:
        import torch

        if torch.get_num_threads() != n:
            torch.set_num_threads(n)
