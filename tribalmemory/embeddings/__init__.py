"""Text embeddings through fastembed; the default model ships inside installed packages."""

from .embedder import BUNDLED_MODEL, Embedder, EmbeddingModelError, load_embedder

__all__ = ["BUNDLED_MODEL", "Embedder", "EmbeddingModelError", "load_embedder"]
