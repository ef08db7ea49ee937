"""Whether the configured provider's API key is set, decided without importing litellm.

litellm's ``validate_environment`` knows every provider, but importing litellm takes seconds
(tens on a loaded machine), and without a key nothing else needs it. For the providers in
:data:`PROVIDER_KEYS` the environment is read here; ``tests/test_llm_keys.py`` checks the table
against litellm's own answer. Any other provider is litellm's to judge.
"""

from __future__ import annotations

from collections.abc import Mapping

PROVIDER_KEYS: dict[str, tuple[tuple[str, ...], str]] = {
    # provider: (the variables any one of which is a key, the one a missing key names)
    "openai": (("OPENAI_API_KEY",), "OPENAI_API_KEY"),
    "anthropic": (("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN"), "ANTHROPIC_API_KEY"),
    "cohere": (("COHERE_API_KEY",), "COHERE_API_KEY"),
    "deepseek": (("DEEPSEEK_API_KEY",), "DEEPSEEK_API_KEY"),
    "groq": (("GROQ_API_KEY",), "GROQ_API_KEY"),
    "mistral": (("MISTRAL_API_KEY",), "MISTRAL_API_KEY"),
    "openrouter": (("OPENROUTER_API_KEY",), "OPENROUTER_API_KEY"),
    "together_ai": (("TOGETHERAI_API_KEY",), "TOGETHERAI_API_KEY"),
    "xai": (("XAI_API_KEY",), "XAI_API_KEY"),
}
"""Providers whose key litellm looks for by name alone (presence in the environment)."""


def resolve(provider: str, model: str) -> tuple[str, str] | None:
    """``(provider, "provider/model")`` as the client resolves them, or ``None`` when that
    depends on litellm's provider list (a model named ``<unknown head>/...``)."""
    provider, model = provider.strip(), model.strip()
    if "/" not in model:
        return provider, f"{provider}/{model}"
    head = model.split("/", 1)[0]
    if head == provider or head in PROVIDER_KEYS:
        return head, model
    return None


def missing_key(provider: str, environ: Mapping[str, str]) -> list[str] | None:
    """The variable to set when ``provider``'s key is missing, ``[]`` when it is set, ``None``
    when the provider is not in :data:`PROVIDER_KEYS` (litellm knows). A variable set to an
    empty or blank value is no key (litellm counts it as one, and every call then fails)."""
    known = PROVIDER_KEYS.get(provider)
    if known is None:
        return None
    names, named = known
    return [] if any(environ.get(name, "").strip() for name in names) else [named]
