"""Which provider and model a configuration names, where it is, and whether it needs litellm.

``litellm`` is imported lazily, once (:func:`load_litellm`; it takes seconds), with
``LITELLM_LOCAL_MODEL_COST_MAP=True`` so that the import never fetches a price map; a
provider's missing API key is found without it (:mod:`.keys`).
"""

from __future__ import annotations

import os
import socket
import threading
from typing import Any
from urllib.parse import urlsplit

from ..config import EpisodesConfig
from . import keys

DEFAULT_ENDPOINTS = {
    "openai": "https://api.openai.com",
    "anthropic": "https://api.anthropic.com",
    "ollama": "http://localhost:11434",
    "ollama_chat": "http://localhost:11434",
}
LOCAL_PROVIDERS = frozenset({"ollama", "ollama_chat", "lm_studio", "llamafile", "hosted_vllm"})
#: Suggested in the unknown_model message: providers for local servers, which need no price.
PRICELESS_PROVIDERS = ("hosted_vllm", "lm_studio", "ollama")
DISABLED_PROVIDERS = frozenset({"", "none", "off", "disabled"})
BASE_URL_ENV = {
    "openai": ("OPENAI_BASE_URL", "OPENAI_API_BASE"),
    "ollama": ("OLLAMA_BASE_URL", "OLLAMA_API_BASE"),
    "ollama_chat": ("OLLAMA_BASE_URL", "OLLAMA_API_BASE"),
    "anthropic": ("ANTHROPIC_BASE_URL", "ANTHROPIC_API_BASE"),
}

_litellm: Any = None
_import_lock = threading.Lock()


def llm_configured(cfg: EpisodesConfig) -> bool:
    """Episodes are on and name an LLM provider and model: the client will import litellm."""
    return (
        cfg.enabled
        and cfg.summarizer_provider.strip().lower() not in DISABLED_PROVIDERS
        and bool(cfg.summarizer_model.strip())
    )


def known_missing_keys(cfg: EpisodesConfig, api_key: str | None = None) -> list[str]:
    """The key variables ``cfg``'s provider lacks, when that is known without litellm
    (:mod:`.keys`); ``[]`` when a key is set, the provider is local, or only litellm can tell."""
    named = keys.resolve(cfg.summarizer_provider, cfg.summarizer_model)
    if named is None or api_key or named[0] in LOCAL_PROVIDERS:
        return []
    return keys.missing_key(named[0], os.environ) or []


def needs_litellm(cfg: EpisodesConfig) -> bool:
    """An LLM is configured and not known to lack its key: its start-up check imports litellm."""
    return llm_configured(cfg) and not known_missing_keys(cfg)


def load_litellm() -> Any:
    """Import litellm once, offline-safe and quiet."""
    global _litellm
    if _litellm is None:
        with _import_lock:
            if _litellm is None:
                os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
                import litellm

                litellm.suppress_debug_info = True
                _litellm = litellm
    return _litellm


def resolve(cfg: EpisodesConfig, lit: Any) -> tuple[str, str]:
    """(provider, litellm model string) of the configured model."""
    provider = cfg.summarizer_provider.strip()
    model = cfg.summarizer_model.strip()
    head = model.split("/", 1)[0]
    if "/" in model and (head == provider or head in lit.provider_list):
        return head, model
    return provider, f"{provider}/{model}"


def api_base_for(cfg: EpisodesConfig, provider: str) -> str | None:
    """The endpoint override: ``api_base``, else the provider's base-URL variable, else None."""
    if cfg.api_base:
        return cfg.api_base
    for name in BASE_URL_ENV.get(provider, ()):
        if os.environ.get(name):
            return os.environ[name]
    return None


def missing_keys(
    lit: Any, provider: str, model: str, api_key: str | None, api_base: str | None
) -> list[str]:
    """The environment variables litellm says ``model`` lacks (none with an explicit key)."""
    if api_key or provider in LOCAL_PROVIDERS:
        return []
    try:
        found = lit.validate_environment(model=model)
    except Exception:  # noqa: BLE001 - litellm may not know how to check this provider
        return []
    missing = list(found.get("missing_keys") or [])
    if api_base:
        missing = [k for k in missing if not k.endswith(("_API_BASE", "_BASE_URL"))]
    return missing


def unreachable_reason(url: str, timeout: float) -> str | None:
    """Open (and close) a TCP connection to ``url``'s host: no request, no cost. None when it
    connects, else why not."""
    parts = urlsplit(url if "://" in url else f"http://{url}")
    host = parts.hostname or ""
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        socket.create_connection((host, port), timeout=timeout).close()
    except OSError as exc:
        return (
            f"cannot reach {host}:{port} ({exc}); LLM work falls back to embeddings and "
            "extractive summaries until it answers"
        )
    return None
