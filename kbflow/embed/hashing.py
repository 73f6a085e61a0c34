"""A deterministic feature-hashing embedder: ``hash:DIM``.

Each lower-cased word is hashed to a signed slot of a ``DIM``-wide vector;
the vector is L2-normalized. No model, no randomness: the same text always
gives the same vector, on every machine. Useful for tests and for smoke runs
of the pipeline where semantic quality does not matter.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence

import numpy as np

from kbflow.embed.base import Embedder, register_provider
from kbflow.errors import ConfigError

_WORD = re.compile(r"\w+")


@register_provider("hash")
class HashingEmbedder(Embedder):
    def __init__(self, dim: str | int = 64, batch_size: int = 32) -> None:
        try:
            self.dim = int(dim)
        except ValueError:
            raise ConfigError(f"hash embedder: dimension must be an integer, got {dim!r} (use hash:64)") from None
        if not 2 <= self.dim <= 4096:
            raise ConfigError(f"hash embedder: dimension must be in 2..4096, got {self.dim}")
        self.model_id = f"hash:{self.dim}"

    def _vector(self, text: str) -> np.ndarray:
        vec = np.zeros(self.dim, dtype=np.float32)
        for word in _WORD.findall(text.lower()):
            h = int.from_bytes(hashlib.blake2b(word.encode(), digest_size=8).digest(), "little")
            vec[h % self.dim] += 1.0 if (h >> 63) & 1 else -1.0
        norm = float(np.linalg.norm(vec))
        if norm == 0.0:
            vec[0] = 1.0
            return vec
        return vec / norm

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not len(texts):
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.stack([self._vector(t) for t in texts])
