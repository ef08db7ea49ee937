"""The LLM client: every call goes through ``litellm.acompletion`` and the cost ledger.

``litellm`` is imported lazily on first use (it takes seconds to import), with
``LITELLM_LOCAL_MODEL_COST_MAP=True`` so that the import never fetches a price map; a
provider's missing API key is found without it (:mod:`.keys`).

One logical call (:meth:`LLMClient.complete_json`) makes up to ``1 + max_retries`` attempts.
Each attempt first reserves its worst-case cost in the :class:`~.ledger.Ledger` (denied → no
request, :class:`LLMUnavailable` at once), then calls the provider with litellm's own retries
turned off, then settles the ledger row with what the answer is charged: the provider's
reported usage checked against local token counts and clamped to the reservation
(:func:`~.ledger_math.charge`). 429, 5xx, timeouts, connection errors, non-JSON or truncated
answers and answers that fail validation are retried with exponential backoff; anything else
(401, 404, 400) is not. When all attempts fail the caller gets :class:`LLMUnavailable` and
falls back. A provider that failed is probed again with backoff (:mod:`.recovery`). A provider
that answers, but whose answers are of no use :data:`DEGRADED_AFTER` calls in a row (not JSON,
cut off, failing validation, refused as a bad request), makes the state ``degraded`` until a
call succeeds; calls go on meanwhile.
"""

from __future__ import annotations

import asyncio
import logging
import os
import random
import socket
import sqlite3
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar
from urllib.parse import urlsplit

from ..config import EpisodesConfig
from ..timeutil import to_iso, utc_now
from . import keys
from . import ledger_math as lm
from . import loop as llm_loop
from .ledger import DENIED_CEILING, Ledger, Reservation
from .prompts import PURPOSES, Prompt, parse_json_object
from .recovery import FIRST_PROBE_SECONDS, MAX_PROBE_SECONDS, PROBE, WAIT, Recovery

logger = logging.getLogger("tribalmemory.llm")

T = TypeVar("T")

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
#: No API key configured: episodes run extractive, by design (the default without a key).
OFFLINE = "offline"
#: States that are a choice, not a fault: logged at INFO, shown neutral (not red).
QUIET_STATES = frozenset({OFFLINE, "disabled"})
BASE_URL_ENV = {
    "openai": ("OPENAI_BASE_URL", "OPENAI_API_BASE"),
    "ollama": ("OLLAMA_BASE_URL", "OLLAMA_API_BASE"),
    "ollama_chat": ("OLLAMA_BASE_URL", "OLLAMA_API_BASE"),
    "anthropic": ("ANTHROPIC_BASE_URL", "ANTHROPIC_API_BASE"),
}
TRANSPORT_ERRORS = frozenset({"rate_limit", "server", "timeout", "connection"})
#: Failed requests that may have been billed: settled at their reservation (worst case).
BILLED_ERRORS = frozenset({"timeout", "invalid_response"})
RETRYABLE = TRANSPORT_ERRORS | {"invalid_json", "truncated", "invalid_answer", "invalid_response"}
#: Calls in a row whose answers were of no use (after their retries) before the LLM is shown as
#: ``degraded``; the next call that succeeds makes it ``ready`` again.
DEGRADED_AFTER = 3
#: Extra seconds past request_timeout_seconds before asyncio gives up on a hung request.
TIMEOUT_GRACE_SECONDS = 2.0
#: A usage anomaly of the same kind is logged at WARNING at most this often (all are counted).
ANOMALY_LOG_SECONDS = 300.0
# status() runs on every write; it may reuse the month's ledger totals for this long
# (reserve() always reads them afresh, so this never lets a call through).
STATUS_MAX_AGE = 1.0
TIMEOUT_NAMES = frozenset(
    {
        "APITimeoutError",
        "ReadTimeout",
        "ConnectTimeout",
        "PoolTimeout",
        "WriteTimeout",
        "ServerTimeoutError",
    }
)
CONNECT_NAMES = frozenset(
    {
        "APIConnectionError",
        "ConnectError",
        "ClientConnectorError",
        "ServerDisconnectedError",
        "RemoteProtocolError",
    }
)

_litellm: Any = None
_import_lock = threading.Lock()
_registered: dict[str, tuple[float, float]] = {}


class LLMUnavailable(Exception):
    """No usable LLM answer; ``kind`` says why (ceiling, call_cap, unreachable, ...)."""

    def __init__(self, reason: str, kind: str = "error") -> None:
        super().__init__(reason)
        self.reason = reason
        self.kind = kind


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


def classify_error(lit: Any, exc: BaseException) -> str:
    """A short kind for a failed request: timeout, rate_limit, server, connection, auth, ..."""

    def isa(*names: str) -> bool:
        kinds = tuple(k for k in (getattr(lit, n, None) for n in names) if isinstance(k, type))
        return bool(kinds) and isinstance(exc, kinds)

    chain = _chain(exc)
    if isa("Timeout") or any(
        isinstance(e, TimeoutError) or type(e).__name__ in TIMEOUT_NAMES for e in chain
    ):
        return "timeout"
    if isa("RateLimitError"):
        return "rate_limit"
    if isa("AuthenticationError", "PermissionDeniedError"):
        return "auth"
    if isa("NotFoundError"):
        return "not_found"
    # litellm reports a refused connection to an OpenAI endpoint as InternalServerError.
    if any(isinstance(e, ConnectionError) or type(e).__name__ in CONNECT_NAMES for e in chain):
        return "connection"
    # A 200 whose body litellm could not read (broken JSON, wrong types): no HTTP error in the
    # chain, a parse error (ValueError; pydantic's ValidationError is one) instead.
    unreadable = any(isinstance(e, ValueError) for e in chain[1:])
    if (
        unreadable
        and not isa("BadRequestError")
        and not any(type(e).__name__ == "HTTPStatusError" for e in chain)
    ):
        return "invalid_response"
    if isa("InternalServerError", "ServiceUnavailableError", "BadGatewayError"):
        return "server"
    if isa("APIConnectionError"):
        return "connection"
    if isa("BadRequestError"):
        return "bad_request"
    status = getattr(exc, "status_code", None)
    if isinstance(status, int):
        return "rate_limit" if status == 429 else "server" if status >= 500 else "other"
    return "other"


def _chain(exc: BaseException, depth: int = 8) -> list[BaseException]:
    """The exception and its causes, outermost first."""
    found: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and len(found) < depth and current not in found:
        found.append(current)
        current = current.__cause__ or current.__context__
    return found


def _short(exc: BaseException) -> str:
    text = str(exc).replace("\n", " ").strip() or type(exc).__name__
    return text[:300]


def _usd(amount: float) -> str:
    return f"${amount:.2f}" if amount >= 1 or amount == 0 else f"${amount:.6f}"


def _per_mtok(prices: tuple[float, float]) -> str:
    return f"${prices[0] * 1e6:g} input / ${prices[1] * 1e6:g} output per million tokens"


def _per_token(setting: dict[str, float]) -> tuple[float, float] | None:
    """``{input_per_mtok, output_per_mtok}`` as USD per token; None when unset ({})."""
    if not setting:
        return None
    return setting["input_per_mtok"] / 1e6, setting["output_per_mtok"] / 1e6


@dataclass(frozen=True)
class _Read:
    """What one answer gave: the outcome kind, the validated value and the charge."""

    kind: str
    detail: str
    value: Any
    charge: lm.Charge


def _retry_after(exc: BaseException) -> float | None:
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None)
    try:
        return float(headers.get("retry-after")) if headers else None
    except (TypeError, ValueError):
        return None


class LLMClient:
    """Calls the configured model for the episode engine, within the ledger's limits.

    Prices: ``config.llm_prices`` (registered once with ``litellm.register_model``), else
    litellm's price map, else ``config.assume_price`` (the recorded spend is then an estimate);
    local providers cost nothing. ``api_key`` overrides the provider's environment variable.
    ``config`` is read on every call, so a raised ``monthly_cost_ceiling`` applies at once;
    provider, model and prices are fixed by the start-up check. ``probe_first`` / ``probe_max``
    set the re-probe schedule after a provider failure (:mod:`.recovery`).
    """

    def __init__(
        self,
        config: EpisodesConfig,
        ledger: Ledger,
        *,
        api_key: str | None = None,
        backoff_base: float = 0.5,
        backoff_max: float = 8.0,
        probe_first: float = FIRST_PROBE_SECONDS,
        probe_max: float = MAX_PROBE_SECONDS,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.config = config
        self.ledger = ledger
        self.backoff_base = backoff_base
        self.backoff_max = backoff_max
        self.recovery = Recovery(first=probe_first, cap=probe_max, monotonic=monotonic)
        self._api_key = api_key
        self.provider = ""
        self.model = ""
        self._api_base: str | None = None
        self._json_mode = False
        self._prices: tuple[float, float] = (0.0, 0.0)
        self._pricing = ""  # where the prices come from, shown by status()
        self._static: dict[str, str] | None = None
        self._denied: tuple[str, float] | None = None
        self._logged: str | None = None
        self._anomalies: dict[str, Any] | None = None
        self._anomaly_logged_at: float | None = None
        self._failed_in_a_row = 0  # calls answered without a usable answer, since the last good
        self._last_error: str | None = None
        self._listeners: list[Callable[[str | None, str], None]] = []
        self._lock = threading.Lock()

    # ------------------------------------------------------------ start-up checks

    def probe(self, timeout: float = 3.0) -> dict[str, Any]:
        """Open (and close) a TCP connection to the provider's endpoint: no request, no cost.

        An endpoint that cannot be reached marks the LLM ``unreachable`` (logged, shown in
        :meth:`status`); it is probed again with backoff (:mod:`.recovery`).
        """
        if self._static is None or self._static["state"] != "ready":
            return self.status()
        url = self._api_base or DEFAULT_ENDPOINTS.get(self.provider)
        if not url:
            return self.status()
        parts = urlsplit(url if "://" in url else f"http://{url}")
        host = parts.hostname or ""
        port = parts.port or (443 if parts.scheme == "https" else 80)
        try:
            socket.create_connection((host, port), timeout=timeout).close()
        except OSError as exc:
            self.recovery.fail(
                "unreachable",
                f"cannot reach {host}:{port} ({exc}); LLM work falls back to embeddings and "
                "extractive summaries until it answers",
            )
        return self.status()

    def _resolve(self, lit: Any) -> tuple[str, str]:
        provider = self.config.summarizer_provider.strip()
        model = self.config.summarizer_model.strip()
        head = model.split("/", 1)[0]
        if "/" in model and (head == provider or head in lit.provider_list):
            return head, model
        return provider, f"{provider}/{model}"

    def _api_base_for(self, provider: str) -> str | None:
        if self.config.api_base:
            return self.config.api_base
        for name in BASE_URL_ENV.get(provider, ()):
            if os.environ.get(name):
                return os.environ[name]
        return None

    def _missing_keys(self, lit: Any) -> list[str]:
        if self._api_key or self.provider in LOCAL_PROVIDERS:
            return []
        try:
            found = lit.validate_environment(model=self.model)
        except Exception:  # noqa: BLE001 - litellm may not know how to check this provider
            return []
        missing = list(found.get("missing_keys") or [])
        if self._api_base:
            missing = [k for k in missing if not k.endswith(("_API_BASE", "_BASE_URL"))]
        return missing

    def _litellm_prices(self, lit: Any) -> tuple[float, float] | None:
        try:
            info = lit.get_model_info(self.model)
        except Exception:  # noqa: BLE001 - unmapped model
            return None
        inp, out = info.get("input_cost_per_token"), info.get("output_cost_per_token")
        if inp is None or out is None:
            return None
        return float(inp), float(out)

    def _find_prices(self, lit: Any) -> tuple[tuple[float, float], str] | None:
        """(USD per input token, per output token) and where they come from, or None."""
        configured = _per_token(self.config.llm_prices)
        if configured is not None:
            return configured, f"episodes.llm_prices: {_per_mtok(configured)}"
        if self.provider in LOCAL_PROVIDERS:
            # No lookup: litellm would ask the local server over the network.
            return (0.0, 0.0), f"free: {self.provider} is a local provider"
        known = self._litellm_prices(lit)
        if known is not None:
            return known, f"litellm's price map: {_per_mtok(known)}"
        assumed = _per_token(self.config.assume_price)
        if assumed is not None:
            return assumed, (
                f"estimate: litellm has no price for {self.model}, so episodes.assume_price "
                f"({_per_mtok(assumed)}) is assumed and the recorded spend is an estimate"
            )
        return None

    def _register_price(self, lit: Any, prices: tuple[float, float]) -> None:
        """Give litellm the configured price of the model, once per process and price."""
        if _registered.get(self.model) == prices:
            return
        inp, out = prices
        lit.register_model(
            {
                self.model: {
                    "input_cost_per_token": inp,
                    "output_cost_per_token": out,
                    # Named so that litellm does not warn about missing cache prices.
                    "cache_read_input_token_cost": inp,
                    "cache_creation_input_token_cost": inp,
                    "litellm_provider": self.provider,
                    "mode": "chat",
                }
            }
        )
        _registered[self.model] = prices

    def _unknown_model_reason(self) -> str:
        return (
            f"litellm has no price for {self.model}, so the cost of its calls cannot be bounded "
            "and it is not called. Set episodes.llm_prices to the provider's prices "
            "({input_per_mtok: <USD>, output_per_mtok: <USD>} per million tokens), or "
            "episodes.assume_price to accept an estimated spend; a local server needs no "
            f"price through the {', '.join(PRICELESS_PROVIDERS)} providers "
            "(summarizer_provider, with api_base)"
        )

    def _no_api_key(self, missing: list[str]) -> dict[str, str]:
        """No key configured: the offline mode (a rejected key is ``no_api_key``)."""
        return {
            "state": OFFLINE,
            "reason": f"no API key configured for {self.provider}: set {', '.join(missing)} "
            "(environment or ~/.tribal-memory/.env; any value for a local server) to use "
            f"{self.model}",
        }

    def _compute_static(self) -> dict[str, str]:
        cfg = self.config
        self._pricing = ""
        if not llm_configured(cfg):
            return {
                "state": "disabled",
                "reason": "LLM features are off (episodes disabled or no provider/model)",
            }
        named = keys.resolve(cfg.summarizer_provider, cfg.summarizer_model)
        missing = known_missing_keys(cfg, self._api_key)
        if named is not None and missing:  # decided without importing litellm for nothing
            self.provider, self.model = named
            self._api_base = self._api_base_for(self.provider)
            return self._no_api_key(missing)
        lit = load_litellm()
        self.provider, self.model = self._resolve(lit)
        self._api_base = self._api_base_for(self.provider)
        missing = self._missing_keys(lit)
        if missing:
            return self._no_api_key(missing)
        found = self._find_prices(lit)
        if found is None:
            return {"state": "unknown_model", "reason": self._unknown_model_reason()}
        self._prices, self._pricing = found
        if cfg.llm_prices:
            self._register_price(lit, self._prices)
        elif self._pricing.startswith("estimate"):
            logger.warning("LLM spend is an estimate: %s", self._pricing)
        try:
            params = (
                lit.get_supported_openai_params(
                    model=self.model.split("/", 1)[1], custom_llm_provider=self.provider
                )
                or []
            )
        except Exception:  # noqa: BLE001 - unknown provider: plain text mode
            params = []
        self._json_mode = "response_format" in params
        try:
            lit.token_counter(model=self.model, messages=[{"role": "user", "content": "hi"}])
        except Exception:  # noqa: BLE001 - warm-up only
            pass
        return {"state": "ready", "reason": f"{self.model} is configured"}

    def check_startup(self, *, force: bool = False) -> dict[str, Any]:
        """Check key, model price and settings without any network call; log once if not
        ready. The result is kept; ``force`` checks again (e.g. after a key was added) and
        lets a provider that failed be probed at once.
        Imports litellm (a few seconds) unless the LLM is off or its key is known to be
        missing (:mod:`.keys`): run it off the start-up path, e.g. with :meth:`acheck_startup`."""
        with self._lock:
            if self._static is None or force:
                self._static = self._compute_static()
        if force:
            self.recovery.retry_now()
        return self.status()

    async def acheck_startup(self) -> dict[str, Any]:
        return await asyncio.to_thread(self.check_startup)

    # ------------------------------------------------------------ status

    def _ceiling_status(self) -> dict[str, str] | None:
        month = lm.month_key(self.ledger.clock())
        ceiling = self.config.monthly_cost_ceiling
        spent, held = self.ledger.month_totals(month, max_age=STATUS_MAX_AGE)[:2]
        denied = (
            self._denied is not None and self._denied[0] == month and ceiling <= self._denied[1]
        )
        if denied or (self._prices != (0.0, 0.0) and spent + held >= ceiling):
            return {
                "state": "ceiling_reached",
                "reason": f"monthly LLM cost ceiling reached: {_usd(spent + held)} spent "
                f"of {_usd(ceiling)} in {month} (UTC); LLM work resumes next month "
                "or when monthly_cost_ceiling is raised",
            }
        return None

    def _degraded_status(self) -> dict[str, str] | None:
        with self._lock:
            failed, last = self._failed_in_a_row, self._last_error
        if failed < DEGRADED_AFTER:
            return None
        return {
            "state": "degraded",
            "reason": f"{self.model} answers, but none of the last {failed} calls got a usable "
            f"answer (last: {last}); episodes use their fallbacks until a call succeeds",
        }

    def status(self) -> dict[str, Any]:
        """``{"state": ready|degraded|offline|no_api_key|unknown_model|ceiling_reached|
        unreachable|disabled, "reason": ..., "consecutive_failures": n, "last_error": ...}``, plus
        ``next_probe`` (UTC) while a failed provider waits for its re-probe, ``pricing`` (where
        the prices come from; says when the spend is an estimate) and ``usage_anomalies``
        (answers whose reported usage was rejected). ``consecutive_failures`` counts the calls
        in a row that got no usable answer (``degraded`` from :data:`DEGRADED_AFTER`), and
        ``last_error`` says why the last of them failed (null after a success). Logs a WARNING
        when the state changed since it was last seen."""
        if self._static is None:
            return self.check_startup()
        result: dict[str, Any] = self._static
        if result["state"] == "ready":
            result = (
                self._ceiling_status()
                or self.recovery.status()
                or self._degraded_status()
                or result
            )
        self._note(result)
        out = dict(result)
        with self._lock:
            out["consecutive_failures"] = self._failed_in_a_row
            out["last_error"] = self._last_error
        if self._pricing:
            out["pricing"] = self._pricing
        if self._anomalies is not None:
            out["usage_anomalies"] = dict(self._anomalies)
        return out

    def configured(self) -> bool:
        """True when the start-up check passed: a provider, a key and a price, so calls may be
        made (now, or once an outage or the ceiling allows). False when offline, disabled or
        unpriced (nothing but a new configuration changes that), or not checked yet."""
        static = self._static
        return static is not None and static["state"] == "ready"

    def available(self) -> bool:
        """True when a call would be made now: the LLM is ready or degraded (calls go on, so
        that one that succeeds ends it), or a provider that failed is due for its re-probe."""
        state = self.status()["state"]
        return state in ("ready", "degraded") or (
            state == self.recovery.state and self.recovery.due()
        )

    def outage_probe_in(self) -> float | None:
        """During a provider outage (``unreachable``, a rejected key, an unknown model):
        seconds until its re-probe is due (0: due, or being made). None when no outage."""
        return self.recovery.seconds_to_probe()

    def retry_now(self) -> None:
        """Let the next call probe a provider that failed at once (an explicit request)."""
        self.recovery.retry_now()

    def on_change(self, listener: Callable[[str | None, str], None]) -> None:
        """Call ``listener(previous, state)`` whenever the state seen by :meth:`status`
        changes (from any thread: the listener must be thread-safe)."""
        self._listeners.append(listener)

    def _note(self, result: dict[str, Any]) -> None:
        with self._lock:
            previous, self._logged = self._logged, result["state"]
        if previous == result["state"]:
            return
        for listener in self._listeners:
            listener(previous, result["state"])
        if previous is None and result["state"] == "ready":
            return
        if previous is None and result["state"] in QUIET_STATES:
            # Not a fault: said at INFO here (every local command starts a client); the daemon
            # says it once at WARNING when it starts, and health and status carry it.
            logger.info("LLM %s: %s", result["state"], result["reason"])
        elif previous is None:
            logger.warning("LLM features unavailable (%s): %s", result["state"], result["reason"])
        elif result["state"] == "ready":
            logger.warning("LLM available again (was %s): %s", previous, result["reason"])
        else:
            logger.warning(
                "LLM state changed from %s to %s: %s", previous, result["state"], result["reason"]
            )

    def _note_anomaly(self, problems: tuple[str, ...]) -> None:
        """Count an answer whose usage report was rejected; WARNING at most every 5 minutes."""
        text = "; ".join(problems)
        now = time.monotonic()
        with self._lock:
            count = (self._anomalies or {}).get("count", 0) + 1
            self._anomalies = {
                "count": count,
                "last": f"{text} (charged at most the call's reservation)",
                "time": to_iso(utc_now()),
            }
            last = self._anomaly_logged_at
            log = last is None or now - last >= ANOMALY_LOG_SECONDS
            if log:
                self._anomaly_logged_at = now
        if log:
            logger.warning(
                "LLM provider %s reported usage that cannot be right (%s): charged at most the "
                "call's reservation, never past the ceiling; %d such answer(s) so far",
                self.model,
                text,
                count,
            )

    # ------------------------------------------------------------ calls

    async def run(
        self, prompt: Prompt[T], *, episode_id: str | None = None, memory_id: str | None = None
    ) -> T:
        """:meth:`complete_json` for a :class:`~.prompts.Prompt`."""
        return await self.complete_json(
            prompt.purpose,
            prompt.messages,
            prompt.validate,
            episode_id=episode_id,
            memory_id=memory_id,
            max_tokens=prompt.max_tokens,
        )

    async def complete_json(
        self,
        purpose: str,
        messages: list[dict[str, Any]],
        validate: Callable[[dict[str, Any]], T],
        *,
        episode_id: str | None = None,
        memory_id: str | None = None,
        max_tokens: int | None = None,
    ) -> T:
        """One JSON answer, validated by ``validate``; raises :class:`LLMUnavailable`.

        While a provider that failed waits for its re-probe, no request is made; the first call
        once it is due is the probe (one attempt)."""
        if purpose not in PURPOSES:
            raise ValueError(f"unknown purpose {purpose!r}; expected one of {PURPOSES}")
        if self._static is None:
            await asyncio.to_thread(self.check_startup)
        assert self._static is not None
        if self._static["state"] != "ready":
            raise LLMUnavailable(self._static["reason"], self._static["state"])
        admitted = self.recovery.admit()
        if admitted == WAIT:
            outage = self.recovery.status() or {"state": "unreachable", "reason": "probing"}
            raise LLMUnavailable(outage["reason"], outage["state"])
        try:
            return await self._call(
                purpose,
                messages,
                validate,
                episode_id=episode_id,
                memory_id=memory_id,
                max_tokens=max_tokens,
                attempts=1 if admitted == PROBE else 1 + self.config.max_retries,
            )
        finally:
            if admitted == PROBE:
                self.recovery.release()

    async def _call(
        self,
        purpose: str,
        messages: list[dict[str, Any]],
        validate: Callable[[dict[str, Any]], T],
        *,
        episode_id: str | None,
        memory_id: str | None,
        max_tokens: int | None,
        attempts: int,
    ) -> T:
        lit = load_litellm()
        cfg = self.config
        out_cap = (
            cfg.max_output_tokens
            if max_tokens is None
            else max(1, min(max_tokens, cfg.max_output_tokens))
        )
        counted = await asyncio.to_thread(self._count_tokens, lit, messages)  # off the loop
        worst = lm.worst_case_cost_usd(counted, out_cap, *self._prices)
        call_id = uuid.uuid4().hex
        kind, detail, wait_hint = "other", "", None
        for attempt in range(1, attempts + 1):
            if attempt > 1:
                await asyncio.sleep(self._backoff(attempt - 1, wait_hint))
            res = await self._reserve(
                purpose, worst, call_id, attempt, episode_id, memory_id, counted
            )
            ok, value, kind, detail, wait_hint = await self._attempt(
                lit, res, messages, counted, out_cap, validate
            )
            if ok:
                with self._lock:
                    self._failed_in_a_row, self._last_error = 0, None
                self.status()
                return value
            if kind not in RETRYABLE:
                break
        self._after_failure(purpose, kind, detail)
        raise LLMUnavailable(
            f"{purpose} failed after {attempt} attempt(s): {kind}: {detail}",
            "unreachable" if kind in TRANSPORT_ERRORS else kind,
        )

    def _count_tokens(self, lit: Any, messages: list[dict[str, Any]]) -> int:
        try:
            return int(lit.token_counter(model=self.model, messages=messages))
        except Exception:  # noqa: BLE001 - unknown tokenizer: over-estimate
            return sum(len(str(m.get("content") or "")) for m in messages) // 2 + 16

    def _count_answer(self, lit: Any, content: str, max_tokens: int) -> int:
        """Tokens of an answer, counted locally; its length when it is far over max_tokens."""
        if len(content) > max_tokens * lm.CHARS_PER_TOKEN_LIMIT:
            return len(content)  # certainly more than max_tokens: not worth counting
        try:
            return int(lit.token_counter(model=self.model, text=content))
        except Exception:  # noqa: BLE001 - unknown tokenizer: about 4 characters a token
            return len(content) // 4

    def _backoff(self, retry: int, hint: float | None) -> float:
        delay = min(self.backoff_max, self.backoff_base * 2 ** (retry - 1))
        delay *= random.uniform(0.5, 1.0)
        if hint is not None:
            delay = max(delay, min(hint, self.backoff_max))
        return delay

    async def _reserve(
        self,
        purpose: str,
        worst: float,
        call_id: str,
        attempt: int,
        episode_id: str | None,
        memory_id: str | None,
        counted: int,
    ) -> Reservation:
        try:
            res = await asyncio.to_thread(
                self.ledger.reserve,
                purpose=purpose,
                model=self.model,
                reserved_usd=worst,
                call_id=call_id,
                attempt=attempt,
                episode_id=episode_id,
                memory_id=memory_id,
                prompt_tokens=counted,
                ceiling_usd=self.config.monthly_cost_ceiling,
                call_cap=self.config.max_llm_calls_per_memory,
            )
        except sqlite3.Error as exc:
            raise LLMUnavailable(f"cost ledger unavailable: {exc}", "ledger") from exc
        if res.granted:
            self._denied = None
            return res
        if res.outcome == DENIED_CEILING:
            self._denied = (res.month, self.config.monthly_cost_ceiling)
            self.status()
            raise LLMUnavailable(f"monthly cost ceiling: {res.detail}", "ceiling")
        raise LLMUnavailable(f"call cap: {res.detail}", "call_cap")

    def _request(self, messages: list[dict[str, Any]], max_tokens: int) -> dict[str, Any]:
        kwargs: dict[str, Any] = {
            "model": self.model,
            "messages": messages,
            "max_tokens": max_tokens,
            "temperature": self.config.summarizer_temperature,
            "timeout": self.config.request_timeout_seconds,
            "num_retries": 0,
            "max_retries": 0,
            "drop_params": True,
        }
        if self._api_base:
            kwargs["api_base"] = self._api_base
        if self._api_key:
            kwargs["api_key"] = self._api_key
        if self._json_mode:
            kwargs["response_format"] = {"type": "json_object"}
        return kwargs

    async def _attempt(
        self,
        lit: Any,
        res: Reservation,
        messages: list[dict[str, Any]],
        counted: int,
        max_tokens: int,
        validate: Callable[[dict[str, Any]], T],
    ) -> tuple[bool, Any, str, str, float | None]:
        """One request; always settles the ledger row. (ok, value, kind, detail, retry-after)."""
        assert res.id is not None
        try:
            response = await asyncio.wait_for(
                llm_loop.run(lambda: lit.acompletion(**self._request(messages, max_tokens))),
                self.config.request_timeout_seconds + TIMEOUT_GRACE_SECONDS,
            )
        except asyncio.CancelledError:
            self._settle_cancelled(res)
            raise
        except Exception as exc:  # noqa: BLE001 - every provider error is classified
            kind = classify_error(lit, exc)
            # A timed-out request, or an answer litellm could not read, may still be billed:
            # count it at its worst case.
            cost = res.reserved_usd if kind in BILLED_ERRORS else 0.0
            await asyncio.to_thread(
                self._settle, res.id, outcome=f"error:{kind}", cost_usd=cost, detail=_short(exc)
            )
            return False, None, kind, _short(exc), _retry_after(exc)
        try:  # counting the answer's tokens can take milliseconds: off the event loop
            read = await asyncio.to_thread(self._read, lit, response, counted, max_tokens, validate)
        except asyncio.CancelledError:
            self._settle_cancelled(res)
            raise
        except Exception as exc:  # noqa: BLE001 - an answer of an unexpected shape
            worst = lm.Charge(lm.worst_case_prompt_tokens(counted), max_tokens)
            read = _Read("invalid_response", f"unreadable answer: {_short(exc)}", None, worst)
        charge = read.charge
        if charge.problems:
            self._note_anomaly(charge.problems)
        usage_note = f"usage rejected: {'; '.join(charge.problems)}" if charge.problems else ""
        await asyncio.to_thread(
            self._settle,
            res.id,
            outcome="ok" if read.kind == "ok" else f"error:{read.kind}",
            cost_usd=lm.usage_cost_usd(
                charge.prompt_tokens, charge.completion_tokens, *self._prices
            ),
            prompt_tokens=charge.prompt_tokens,
            completion_tokens=charge.completion_tokens,
            detail="; ".join(filter(None, (read.detail, usage_note)))[:300] or None,
        )
        self.recovery.succeed()  # the provider answered, so it is reachable
        if read.kind != "ok":
            return False, None, read.kind, read.detail[:300], None
        return True, read.value, "ok", "", None

    def _settle_cancelled(self, res: Reservation) -> None:
        """Settle the row of a call its caller cancelled, at its reservation (a request that
        was sent may be billed)."""
        assert res.id is not None
        self._settle(
            res.id,
            outcome="error:cancelled",
            cost_usd=res.reserved_usd,
            detail="cancelled by the caller",
        )

    def _read(
        self,
        lit: Any,
        response: Any,
        counted: int,
        max_tokens: int,
        validate: Callable[[dict[str, Any]], T],
    ) -> _Read:
        """Charge, parse and validate one answer (pure but for local token counting)."""
        choice = response.choices[0]
        content = choice.message.content or ""
        if not isinstance(content, str):
            raise TypeError(f"message content is {type(content).__name__}, not text")
        usage = getattr(response, "usage", None)
        charge = lm.charge(
            reported_prompt=getattr(usage, "prompt_tokens", None),
            reported_completion=getattr(usage, "completion_tokens", None),
            counted_prompt=counted,
            counted_completion=self._count_answer(lit, content, max_tokens),
            max_tokens=max_tokens,
        )
        try:
            data = parse_json_object(content)
        except ValueError as exc:
            kind = "truncated" if choice.finish_reason == "length" else "invalid_json"
            return _Read(kind, str(exc), None, charge)
        try:
            value = validate(data)
        except (ValueError, TypeError, KeyError) as exc:
            return _Read("invalid_answer", str(exc) or type(exc).__name__, None, charge)
        return _Read("ok", "", value, charge)

    def _settle(self, row_id: int, **kwargs: Any) -> None:
        """Settle a ledger row; a ledger failure is logged, never raised into the caller
        (the open reservation is later closed as abandoned, at its reserved cost)."""
        try:
            self.ledger.settle(row_id, **kwargs)
        except (sqlite3.Error, KeyError, ValueError):
            logger.exception("LLM ledger: could not settle row %s", row_id)

    def _after_failure(self, purpose: str, kind: str, detail: str) -> None:
        """A call failed: a provider-side failure starts (or extends) an outage; an answer of no
        use counts towards ``degraded`` (:data:`DEGRADED_AFTER`)."""
        if kind in TRANSPORT_ERRORS:
            state, reason = "unreachable", f"{self.model} did not answer ({kind}): {detail}"
        elif kind == "auth":
            state, reason = "no_api_key", f"the provider rejected the API key: {detail}"
        elif kind == "not_found":
            state, reason = "unknown_model", f"the provider does not know {self.model}: {detail}"
        else:
            with self._lock:
                self._failed_in_a_row += 1
                self._last_error = f"{purpose}: {kind}: {detail}"[:300]
            self.status()
            return
        delay = self.recovery.fail(state, reason)
        logger.info("LLM %s: next probe in %.0f s", state, delay)
        self.status()
