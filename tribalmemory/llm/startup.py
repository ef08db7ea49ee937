"""The start-up check: provider, model, key and price, decided without a network call.

Prices: ``config.llm_prices`` (registered once with ``litellm.register_model``), else
litellm's price map, else ``config.assume_price`` (the recorded spend is then an estimate);
local providers cost nothing. A model without a price is not called (``unknown_model``).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from ..config import EpisodesConfig, env_file
from . import keys
from .health import OFFLINE
from .providers import (
    LOCAL_PROVIDERS,
    PRICELESS_PROVIDERS,
    api_base_for,
    known_missing_keys,
    llm_configured,
    load_litellm,
    missing_keys,
    resolve,
)

logger = logging.getLogger("tribalmemory.llm")

_registered: dict[str, tuple[float, float]] = {}


@dataclass(frozen=True)
class Startup:
    """What the check found: a state and its reason, and what calls are made with."""

    state: str
    reason: str
    provider: str = ""
    model: str = ""
    api_base: str | None = None
    json_mode: bool = False
    prices: tuple[float, float] = (0.0, 0.0)  # USD per input token, per output token
    pricing: str = ""  # where the prices come from, shown by status()

    @property
    def ready(self) -> bool:
        return self.state == "ready"

    def status(self) -> dict[str, str]:
        return {"state": self.state, "reason": self.reason}


def check(cfg: EpisodesConfig, api_key: str | None) -> Startup:
    """Check ``cfg``'s LLM. Imports litellm unless the LLM is off or its key is known to be
    missing (:mod:`.keys`)."""
    if not llm_configured(cfg):
        return Startup("disabled", "LLM features are off (episodes disabled or no provider/model)")
    named = keys.resolve(cfg.summarizer_provider, cfg.summarizer_model)
    missing = known_missing_keys(cfg, api_key)
    if named is not None and missing:  # decided without importing litellm for nothing
        provider, model = named
        return _no_api_key(provider, model, api_base_for(cfg, provider), missing)
    lit = load_litellm()
    provider, model = resolve(cfg, lit)
    api_base = api_base_for(cfg, provider)
    missing = missing_keys(lit, provider, model, api_key, api_base)
    if missing:
        return _no_api_key(provider, model, api_base, missing)
    found = find_prices(lit, cfg, provider, model)
    if found is None:
        return Startup("unknown_model", unknown_model_reason(model), provider, model, api_base)
    prices, pricing = found
    if cfg.llm_prices:
        register_price(lit, provider, model, prices)
    elif pricing.startswith("estimate"):
        logger.warning("LLM spend is an estimate: %s", pricing)
    json_mode = _supports_json_mode(lit, provider, model)
    try:
        lit.token_counter(model=model, messages=[{"role": "user", "content": "hi"}])
    except Exception:  # noqa: BLE001 - warm-up only
        pass
    return Startup(
        "ready", f"{model} is configured", provider, model, api_base, json_mode, prices, pricing
    )


def _no_api_key(provider: str, model: str, api_base: str | None, missing: list[str]) -> Startup:
    """No key configured: the offline mode (a rejected key is ``no_api_key``)."""
    reason = (
        f"no API key configured for {provider}: set {', '.join(missing)} "
        f"(environment or {env_file()}; any value for a local server) to use "
        f"{model}"
    )
    return Startup(OFFLINE, reason, provider, model, api_base)


def _supports_json_mode(lit: Any, provider: str, model: str) -> bool:
    """litellm says the provider takes ``response_format`` (else plain text mode)."""
    try:
        params = (
            lit.get_supported_openai_params(
                model=model.split("/", 1)[1], custom_llm_provider=provider
            )
            or []
        )
    except Exception:  # noqa: BLE001 - unknown provider: plain text mode
        params = []
    return "response_format" in params


# ------------------------------------------------------------ prices


def per_token(setting: dict[str, float]) -> tuple[float, float] | None:
    """``{input_per_mtok, output_per_mtok}`` as USD per token; None when unset ({})."""
    if not setting:
        return None
    return setting["input_per_mtok"] / 1e6, setting["output_per_mtok"] / 1e6


def per_mtok(prices: tuple[float, float]) -> str:
    return f"${prices[0] * 1e6:g} input / ${prices[1] * 1e6:g} output per million tokens"


def _litellm_prices(lit: Any, model: str) -> tuple[float, float] | None:
    try:
        info = lit.get_model_info(model)
    except Exception:  # noqa: BLE001 - unmapped model
        return None
    inp, out = info.get("input_cost_per_token"), info.get("output_cost_per_token")
    if inp is None or out is None:
        return None
    return float(inp), float(out)


def find_prices(
    lit: Any, cfg: EpisodesConfig, provider: str, model: str
) -> tuple[tuple[float, float], str] | None:
    """(USD per input token, per output token) and where they come from, or None."""
    configured = per_token(cfg.llm_prices)
    if configured is not None:
        return configured, f"episodes.llm_prices: {per_mtok(configured)}"
    if provider in LOCAL_PROVIDERS:
        # No lookup: litellm would ask the local server over the network.
        return (0.0, 0.0), f"free: {provider} is a local provider"
    known = _litellm_prices(lit, model)
    if known is not None:
        return known, f"litellm's price map: {per_mtok(known)}"
    assumed = per_token(cfg.assume_price)
    if assumed is not None:
        return assumed, (
            f"estimate: litellm has no price for {model}, so episodes.assume_price "
            f"({per_mtok(assumed)}) is assumed and the recorded spend is an estimate"
        )
    return None


def register_price(lit: Any, provider: str, model: str, prices: tuple[float, float]) -> None:
    """Give litellm the configured price of the model, once per process and price."""
    if _registered.get(model) == prices:
        return
    inp, out = prices
    lit.register_model(
        {
            model: {
                "input_cost_per_token": inp,
                "output_cost_per_token": out,
                # Named so that litellm does not warn about missing cache prices.
                "cache_read_input_token_cost": inp,
                "cache_creation_input_token_cost": inp,
                "litellm_provider": provider,
                "mode": "chat",
            }
        }
    )
    _registered[model] = prices


def unknown_model_reason(model: str) -> str:
    return (
        f"litellm has no price for {model}, so the cost of its calls cannot be bounded "
        "and it is not called. Set episodes.llm_prices to the provider's prices "
        "({input_per_mtok: <USD>, output_per_mtok: <USD>} per million tokens), or "
        "episodes.assume_price to accept an estimated spend; a local server needs no "
        f"price through the {', '.join(PRICELESS_PROVIDERS)} providers "
        "(summarizer_provider, with api_base)"
    )
