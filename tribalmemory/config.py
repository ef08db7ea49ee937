"""Configuration: one YAML file, every key documented with its default and allowed values.

``load_config`` reads ``--config``, else ``$TRIBAL_MEMORY_CONFIG``, else
``~/.tribal-memory/config.yaml`` (a missing default file means all defaults). Secrets live in
``~/.tribal-memory/.env``; :func:`load_env` loads it without overriding variables already set.
A wrong type, an out-of-range value or an unknown key raises :class:`ConfigError` naming the key.
The keys of version 0.9 (:data:`LEGACY_KEYS`) are accepted and listed in
``Config.deprecations``, each saying what replaces it; the CLI and the daemon log them as
WARNINGs.
"""

from __future__ import annotations

import math
import os
import re
import types
import typing
from collections.abc import Callable
from dataclasses import MISSING, dataclass, field, fields
from pathlib import Path
from typing import Any

import yaml

DEFAULT_HOME = Path("~/.tribal-memory")
CONFIG_ENV = "TRIBAL_MEMORY_CONFIG"
HOME_ENV = "TRIBAL_MEMORY_HOME"


class ConfigError(ValueError):
    """The configuration cannot be used; the message names the key and what is allowed."""


def setting(
    default: Any,
    doc: str,
    *,
    minimum: float | None = None,
    maximum: float | None = None,
    choices: tuple[Any, ...] | None = None,
    nullable: bool = False,
    check: Callable[[str, Any], Any] | None = None,
) -> Any:
    """A documented config field with its validation rules (``check(key, value)`` validates
    a structured value further and returns it)."""
    meta = {
        "doc": doc,
        "min": minimum,
        "max": maximum,
        "choices": choices,
        "nullable": nullable,
        "check": check,
    }
    if isinstance(default, list | dict):
        return field(default_factory=lambda: type(default)(default), metadata=meta)
    return field(default=default, metadata=meta)


def check_url(key: str, value: str) -> str:
    """An ``http://`` or ``https://`` URL with a host (``http://localhost:6333``)."""
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(value)
        parts.port  # noqa: B018 - raises ValueError for a port that is not a number
    except ValueError:
        parts = None
    if parts is None or parts.scheme not in ("http", "https") or not parts.hostname:
        raise ConfigError(f"{key}: {value!r} is not a URL; expected http(s)://host[:port]")
    return value


def check_host(key: str, value: str) -> str:
    """A host name or an IP address to bind (``127.0.0.1``, ``0.0.0.0``, ``::1``, ``myhost``)."""
    import ipaddress

    try:
        ipaddress.ip_address(value)
        return value
    except ValueError:
        pass
    label = r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
    if not re.fullmatch(rf"{label}(?:\.{label})*", value):
        raise ConfigError(f"{key}: {value!r} is not a host name or an IP address (e.g. 127.0.0.1)")
    return value


PRICE_KEYS = ("input_per_mtok", "output_per_mtok")
MAX_PRICE_PER_MTOK = 10000.0


def check_prices(key: str, value: dict[str, Any]) -> dict[str, float]:
    """``{}`` (unset) or exactly ``{input_per_mtok, output_per_mtok}``: USD per million tokens."""
    if not value:
        return {}
    if set(value) != set(PRICE_KEYS):
        raise ConfigError(
            f"{key}: expected {{input_per_mtok: <USD>, output_per_mtok: <USD>}} (prices per "
            f"million tokens) or {{}}, got keys {sorted(map(str, value))}"
        )
    prices: dict[str, float] = {}
    for name in PRICE_KEYS:
        price = value[name]
        if (
            isinstance(price, bool)
            or not isinstance(price, int | float)
            or not math.isfinite(price)
            or not 0 <= price <= MAX_PRICE_PER_MTOK
        ):
            raise ConfigError(
                f"{key}.{name}: {price!r} is not a price; allowed 0 to {MAX_PRICE_PER_MTOK:g} "
                "USD per million tokens"
            )
        prices[name] = float(price)
    return prices


@dataclass
class ServerConfig:
    host: str = setting(
        "127.0.0.1", "Address the daemon binds; non-loopback needs a token.", check=check_host
    )
    port: int = setting(18790, "TCP port of the daemon.", minimum=1, maximum=65535)
    log_level: str = setting("info", "Log level.", choices=("debug", "info", "warning", "error"))
    max_content_chars: int = setting(
        20000, "Longest memory content accepted (longer gets 413).", minimum=100, maximum=1_000_000
    )
    max_body_bytes: int = setting(
        8_000_000,
        "Largest HTTP request body accepted (larger gets 413).",
        minimum=10_000,
        maximum=200_000_000,
    )


@dataclass
class StorageConfig:
    path: str | None = setting(
        None, "Folder of the embedded store (default: <data_dir>/store).", nullable=True
    )
    qdrant_url: str | None = setting(
        None,
        "URL of a Qdrant server or cluster; unset = embedded store.",
        nullable=True,
        check=check_url,
    )
    qdrant_api_key: str | None = setting(
        None, "API key for qdrant_url (or set QDRANT_API_KEY).", nullable=True
    )
    collection: str = setting("tribal_memories", "Collection name on a Qdrant server.")
    min_free_mb: int = setting(
        100,
        "Free disk space (MB) kept for the data folder and store; writes beyond get 507.",
        minimum=16,
        maximum=1_000_000,
    )


@dataclass
class EmbeddingConfig:
    model: str = setting(
        "tribalmemory/all-MiniLM-L6-v2-int8",
        "fastembed model name; the default is bundled and works offline.",
    )
    cache_dir: str | None = setting(
        None, "Where fastembed caches downloaded (non-bundled) models.", nullable=True
    )


@dataclass
class MemoryConfig:
    dedup_threshold: float = setting(
        0.97,
        "Cosine at or above which remember() reports duplicate_of instead of storing.",
        minimum=0.5,
        maximum=1.0,
    )
    default_source_instance: str = setting(
        "default", "source_instance recorded when a client does not send one."
    )


@dataclass
class RecallConfig:
    rerank: str = setting(
        "none",
        "Order recall results by relevance alone (none) or by relevance × (rerank_floor + "
        "(1 − rerank_floor) × retrievability) (retrievability).",
        choices=("none", "retrievability"),
    )
    rerank_floor: float = setting(
        0.5,
        "Share of its relevance a memory keeps under re-ranking when its retrievability is 0.",
        minimum=0.0,
        maximum=1.0,
    )


@dataclass
class EpisodesConfig:
    enabled: bool = setting(True, "Turn the episode engine on.")
    detector_strategy: str = setting(
        "hybrid",
        "embedding: similarity only; llm: LLM only; hybrid: LLM for the doubtful cases.",
        choices=("embedding", "llm", "hybrid"),
    )
    join_threshold: float | None = setting(
        None,
        "P(joins), from the fitted join model, at or above which a memory joins an episode; "
        "unset = the threshold chosen with the model on validation streams (docs/detection.md).",
        minimum=0.0,
        maximum=1.0,
        nullable=True,
    )
    llm_doubt_share: float = setting(
        0.9,
        "hybrid: about this share of memories, the least confident decisions, are reviewed "
        "by the LLM (0 asks none); capped by classify_calls_per_memory.",
        minimum=0.0,
        maximum=1.0,
    )
    classify_calls_per_memory: float = setting(
        0.3,
        "hybrid/llm: at most this many classification calls per memory stored (a running "
        "budget); beyond it the embedding decision stands.",
        minimum=0.0,
        maximum=1.0,
    )
    classify_batch_size: int = setting(
        4,
        "hybrid/llm: doubtful memories are reviewed together, up to this many in one call.",
        minimum=1,
        maximum=8,
    )
    classify_batch_wait_paces: float = setting(
        32,
        "hybrid/llm: a doubtful memory waits for others to share its review call up to this "
        "many times the stream's own pace (the median gap between memories).",
        minimum=0.0,
        maximum=100,
    )
    classify_batch_wait_seconds: float = setting(
        86400,
        "hybrid/llm: ... and never longer than this (0: review at once).",
        minimum=0.0,
        maximum=604800,
    )
    merge_checks: bool = setting(
        True,
        "hybrid/llm: when the detector grows an episode to 4, 8, 16 and 32 memories, ask the LLM "
        "whether it is the same thread as one of its 4 most similar active episodes; a yes is "
        "asked again from the other episode's side, and two yeses merge them. The check rides "
        "along in the next review call; one that none carries is asked on its own, within "
        "classify_calls_per_memory: a confirmation after classify_batch_wait_seconds, a first "
        "check after active_window_days (after classify_batch_wait_seconds with reviews off).",
    )
    split_checks: bool = setting(
        True,
        "hybrid/llm: when the detector grows an episode to 8, 16, 32 and 64 memories, cut its "
        "members in two by their embeddings; when the parts look like two threads of the stream "
        "(as unlike each other as its background, each as tight as a thread), ask the LLM "
        "whether they are two threads, in a call of its own within classify_calls_per_memory. A "
        "yes is asked again in a later call, and two yeses split the episode: the larger part "
        "keeps its id.",
    )
    active_window_days: float = setting(
        14, "An episode with no new memory for this long is closed.", minimum=0.01, maximum=3650
    )
    max_active_episodes: int = setting(
        20,
        "At most this many active episodes per project; the least recently active is closed.",
        minimum=1,
        maximum=10000,
    )
    archive_after_days: float = setting(
        90, "Closed episodes older than this become archived.", minimum=0.01, maximum=36500
    )
    full_regen_interval: int = setting(
        10, "Full summary regeneration every N memories added.", minimum=1, maximum=1000
    )
    summarizer_provider: str = setting(
        "openai", "litellm provider: openai, anthropic, ollama or any litellm provider."
    )
    summarizer_model: str = setting("gpt-4o-mini", "Model used for classification and summaries.")
    summarizer_temperature: float = setting(0.2, "Sampling temperature.", minimum=0.0, maximum=2.0)
    api_base: str | None = setting(
        None, "Endpoint override (else OPENAI_BASE_URL / OLLAMA_BASE_URL ...).", nullable=True
    )
    llm_prices: dict[str, float] = setting(
        {},
        "Prices of summarizer_model in USD per million tokens, e.g. {input_per_mtok: 0.15, "
        "output_per_mtok: 0.6}; overrides litellm's price map. {}: litellm's price.",
        check=check_prices,
    )
    assume_price: dict[str, float] = setting(
        {},
        "Prices (same shape) assumed when litellm has no price for the model and llm_prices is "
        "{}; the recorded spend is then an estimate. {}: such a model is not called.",
        check=check_prices,
    )
    request_timeout_seconds: float = setting(
        30.0, "Timeout of one LLM request.", minimum=0.1, maximum=600
    )
    max_retries: int = setting(
        2, "Retries (with backoff) on 429, 5xx and timeouts.", minimum=0, maximum=10
    )
    max_output_tokens: int = setting(
        2100,
        "max_tokens of each LLM call (bounds its worst-case cost).",
        minimum=16,
        maximum=16000,
    )
    monthly_cost_ceiling: float = setting(
        5.0,
        "USD per calendar month (UTC); LLM work stops before passing it.",
        minimum=0.0,
        maximum=100000,
    )
    max_llm_calls_per_memory: int = setting(
        2, "Cap on the LLM calls one remember() triggers.", minimum=0, maximum=20
    )
    llm_update_every: int = setting(
        5,
        "LLM summary update after this many new memories (in between: summary + new ones).",
        minimum=1,
        maximum=100,
    )
    summary_debounce_seconds: float = setting(
        30.0,
        "Coalesce summary updates: wait this long after a memory joins an episode.",
        minimum=0.0,
        maximum=3600,
    )
    scheduler_interval_seconds: float = setting(
        300.0,
        "How often the daemon closes idle episodes and archives old ones.",
        minimum=1.0,
        maximum=86400,
    )
    chain_window_hours: float = setting(
        48.0,
        "A new episode may continue one that ended (went idle, was closed) at most this long "
        "before it began (memory time).",
        minimum=0.0,
        maximum=8760,
    )
    chain_similarity_threshold: float = setting(
        0.85,
        "Calibrated score needed to chain a new episode to a closed one.",
        minimum=0.0,
        maximum=1.0,
    )


@dataclass
class Config:
    data_dir: str = setting("~/.tribal-memory", "Where the store, queue, ledger and logs live.")
    server: ServerConfig = field(default_factory=ServerConfig)
    storage: StorageConfig = field(default_factory=StorageConfig)
    embedding: EmbeddingConfig = field(default_factory=EmbeddingConfig)
    memory: MemoryConfig = field(default_factory=MemoryConfig)
    recall: RecallConfig = field(default_factory=RecallConfig)
    episodes: EpisodesConfig = field(default_factory=EpisodesConfig)
    # Not a setting: one line per deprecated (0.9) key found in the file.
    deprecations: list[str] = field(
        default_factory=list, repr=False, compare=False, metadata={"internal": True}
    )

    @property
    def data_path(self) -> Path:
        return Path(self.data_dir).expanduser()

    @property
    def store_path(self) -> Path:
        if self.storage.path:
            return Path(self.storage.path).expanduser()
        return self.data_path / "store"


SECTIONS = {
    f.name: f
    for f in fields(Config)
    if f.metadata.get("doc") is None and not f.metadata.get("internal")
}

# Keys of version 0.9 (its ``TribalMemoryConfig``) and later keys this version no longer uses,
# and what to do instead. A section name stands for the whole section.
LEGACY_KEYS: dict[str, str] = {
    "instance_id": "use memory.default_source_instance instead (the value is carried over)",
    "auto_capture": "no longer used: agents decide what to remember through the MCP tools",
    "db": "no longer used: the store is storage.path (default <data_dir>/store) or "
    "storage.qdrant_url; the 0.9 LanceDB folder is not read",
    "search": "no longer used: recall combines meaning and keywords with built-in weights",
    "embedding.provider": "no longer used: embeddings are always computed locally (fastembed)",
    "embedding.dimensions": "no longer used: the dimension comes from embedding.model",
    "embedding.model": "the 0.9 model is not used: in an embedding section with provider or "
    "dimensions it described the 0.9 store; the bundled offline model applies (set "
    "embedding.model alone to choose another)",
    "server.session_retention_days": "no longer used: session transcripts are not indexed",
    "episodes.embedding_similarity_threshold": "0.9's cosine threshold no longer applies: "
    "memories join episodes by the fitted join model's probability, at the threshold chosen "
    "with the model (episodes.join_threshold, a probability, overrides it)",
}
# Keys of earlier 1.x versions that were replaced.
RETIRED_KEYS: dict[str, str] = {
    "episodes.ambiguous_band": "replaced by episodes.llm_doubt_share: the LLM gets the least "
    "confident share of decisions instead of a band of scores",
}


def home_dir() -> Path:
    """The data folder ``TRIBAL_MEMORY_HOME`` names (set but empty: not set), else the default."""
    return Path(os.environ.get(HOME_ENV) or str(DEFAULT_HOME)).expanduser()


def env_file() -> Path:
    """The ``.env`` file every entry point loads (:func:`load_env`): secrets such as the API
    token and the LLM's key."""
    return home_dir() / ".env"


def default_config_path() -> Path:
    return home_dir() / "config.yaml"


def load_env(path: Path | None = None) -> None:
    """Load ``~/.tribal-memory/.env`` without overriding variables that are already set (one
    set but empty counts as not set: ``TRIBAL_MEMORY_TOKEN=`` does not hide the file's)."""
    from dotenv import dotenv_values

    path = path or env_file()
    if path.is_file():
        try:
            for name, value in dotenv_values(path).items():
                if value is not None and not os.environ.get(name):
                    os.environ[name] = value
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(
                f"{path} cannot be read ({exc}); it must be UTF-8 text with NAME=value lines"
            ) from None


def _type_name(kind: Any) -> str:
    names = {int: "an integer", float: "a number", bool: "true or false", str: "a string"}
    return names.get(kind, "a mapping" if kind is dict else str(kind))


def _default(f: Any) -> Any:
    return f.default if f.default is not MISSING else f.default_factory()


def _value_type(annotation: Any) -> type:
    """The type a setting holds: ``float`` for ``float``, ``str`` for ``str | None``."""
    if isinstance(annotation, types.UnionType) or typing.get_origin(annotation) is typing.Union:
        annotation = next(a for a in typing.get_args(annotation) if a is not type(None))
    origin = typing.get_origin(annotation)  # dict[str, float] holds a dict
    if isinstance(origin, type):
        return origin
    return annotation if isinstance(annotation, type) else str


def _check_value(key: str, value: Any, f: Any, kind: type) -> Any:
    """``value`` for setting ``f`` of type ``kind`` (from the field's annotation)."""
    meta = f.metadata
    if value is None:
        if meta.get("nullable"):
            return None
        raise ConfigError(f"{key}: must not be empty ({meta['doc']})")
    if kind is float and isinstance(value, int) and not isinstance(value, bool):
        try:
            value = float(value)
        except OverflowError:
            raise ConfigError(f"{key}: a number of {len(str(value))} digits is too large") from None
    if kind is float and isinstance(value, float) and math.isnan(value):
        raise ConfigError(f"{key}: expected a number, got .nan")
    if (
        kind is bool
        and not isinstance(value, bool)
        or not isinstance(value, kind)
        or (kind is int and isinstance(value, bool))
    ):
        raise ConfigError(f"{key}: expected {_type_name(kind)}, got {value!r}")
    if meta.get("choices") and value not in meta["choices"]:
        allowed = ", ".join(map(str, meta["choices"]))
        raise ConfigError(f"{key}: {value!r} is not allowed; choose one of: {allowed}")
    low, high = meta.get("min"), meta.get("max")
    if low is not None and value < low or high is not None and value > high:
        raise ConfigError(f"{key}: {value!r} is out of range; allowed {low} to {high}")
    if meta.get("check") is not None:
        value = meta["check"](key, value)
    return value


def _section_type(f: Any) -> type:
    """The dataclass of a config section field (``server``, ``episodes`` ...)."""
    return type(f.default_factory())


def _build(cls: type, data: dict[str, Any], prefix: str) -> Any:
    known = {f.name: f for f in fields(cls) if not f.metadata.get("internal")}
    hints = typing.get_type_hints(cls)
    for key in data:
        if key not in known:
            allowed = ", ".join(sorted(known))
            raise ConfigError(f"{prefix}{key}: unknown key; allowed keys here: {allowed}")
    kwargs: dict[str, Any] = {}
    for name, f in known.items():
        if name not in data:
            continue
        value = data[name]
        if name in SECTIONS and cls is Config:
            if value is None:
                value = {}
            if not isinstance(value, dict):
                raise ConfigError(f"{prefix}{name}: expected a mapping of settings")
            kwargs[name] = _build(_section_type(f), value, f"{prefix}{name}.")
        else:
            kwargs[name] = _check_value(prefix + name, value, f, _value_type(hints[name]))
    return cls(**kwargs)


def without_legacy_keys(data: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """``data`` without the :data:`LEGACY_KEYS` (0.9's ``instance_id`` carried over) and
    :data:`RETIRED_KEYS`, and a deprecation message for each key removed."""
    data = dict(data)
    embedding = data.get("embedding")
    old_embedding = isinstance(embedding, dict) and bool(
        {"provider", "dimensions"} & set(embedding)
    )
    notes = []
    for key, advice in {**LEGACY_KEYS, **RETIRED_KEYS}.items():
        section, _, name = key.partition(".")
        if key == "embedding.model" and not old_embedding:
            continue
        if not name:
            if section not in data:
                continue
            value = data.pop(section)
            if key == "instance_id" and isinstance(value, str) and value:
                memory = data.get("memory") or {}
                if isinstance(memory, dict) and "default_source_instance" not in memory:
                    data["memory"] = {**memory, "default_source_instance": value}
        else:
            values = data.get(section)
            if not isinstance(values, dict) or name not in values:
                continue
            data[section] = {k: v for k, v in values.items() if k != name}
        since = "" if key in RETIRED_KEYS else " (version 0.9)"
        notes.append(f"deprecated setting {key}{since}: {advice}; remove it from the file")
    return data, notes


def config_from_dict(data: dict[str, Any] | None) -> Config:
    """Validate a parsed YAML document into a :class:`Config`."""
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError("the configuration file must be a YAML mapping of settings")
    data, notes = without_legacy_keys(data)
    config: Config = _build(Config, data, "")
    if not config.data_dir.strip():
        raise ConfigError(
            "data_dir is empty: leave it out for the default (~/.tribal-memory) or name a folder"
        )
    config.deprecations = notes
    return config


class _Loader(yaml.SafeLoader):
    """YAML as the configuration reads it: a key written twice in one mapping is an error (the
    last one won, silently), and ``1e3`` is a number, as in YAML 1.2 (YAML 1.1 reads a
    string)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)  # type: ignore[no-untyped-call]
            if key in seen:
                raise ConfigError(
                    f"{key} is set twice in one section (line {key_node.start_mark.line + 1}); "
                    "keep one"
                )
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


_Loader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^[-+]?(?:[0-9][0-9_]*)(?:\.[0-9_]*)?[eE][-+]?[0-9]+$"),
    list("-+0123456789"),
)


def read_yaml(text: str) -> Any:
    """The YAML document ``text`` as the configuration reads it (:class:`_Loader`)."""
    return yaml.load(text, Loader=_Loader)  # noqa: S506 - a SafeLoader


DATA_FOLDER_FIX = "set data_dir in the configuration (or TRIBAL_MEMORY_HOME) to a folder of its own"


def check_data_folder(path: Path) -> None:
    """ConfigError when ``path`` cannot be a data folder: a file, or the file system's root."""
    if path.exists() and not path.is_dir():
        raise ConfigError(f"the data folder {path} is a file, not a folder: {DATA_FOLDER_FIX}")
    resolved = path.resolve()
    if resolved == Path(resolved.anchor):
        raise ConfigError(
            f"the data folder {path} is the root folder: the store, databases and logs need a "
            f"folder of their own (the default is ~/.tribal-memory); {DATA_FOLDER_FIX}"
        )


def load_config(path: str | Path | None = None) -> Config:
    """Read and validate the configuration (see the module docstring for the search order)."""
    explicit = path or os.environ.get(CONFIG_ENV)
    config_path = Path(explicit).expanduser() if explicit else default_config_path()
    if not config_path.is_file():
        if explicit and config_path.is_dir():
            raise ConfigError(f"configuration file {config_path} is a folder, not a YAML file")
        if explicit:
            raise ConfigError(f"configuration file {config_path} does not exist")
        config = Config()
        if os.environ.get(HOME_ENV):
            config.data_dir = str(home_dir())
        check_data_folder(config.data_path)
        return config
    try:
        data = read_yaml(config_path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        raise ConfigError(f"{config_path} is not valid YAML: {exc}") from None
    except UnicodeDecodeError:
        raise ConfigError(f"{config_path} is not UTF-8 text; save it as UTF-8 YAML") from None
    except OSError as exc:
        raise ConfigError(f"{config_path} cannot be read ({exc.strerror or exc})") from None
    config = config_from_dict(data)
    if os.environ.get(HOME_ENV) and not (isinstance(data, dict) and "data_dir" in data):
        config.data_dir = str(home_dir())
    check_data_folder(config.data_path)
    return config


def data_dir_of(path: str | Path | None = None) -> Path:
    """The data folder, even from a configuration file that does not load (for the pid and log
    files): its ``data_dir`` when the file parses and sets one, else the home folder."""
    explicit = path or os.environ.get(CONFIG_ENV)
    config_path = Path(explicit).expanduser() if explicit else default_config_path()
    try:
        data = read_yaml(config_path.read_text(encoding="utf-8"))
    except (OSError, ValueError, yaml.YAMLError):
        data = None
    if isinstance(data, dict) and isinstance(data.get("data_dir"), str) and data["data_dir"]:
        return Path(data["data_dir"]).expanduser()
    return home_dir()


def example_yaml() -> str:
    """``config/config.example.yaml``: every key with its default and a one-line comment."""
    lines = [
        "# Tribal Memory configuration: every key, its default and what it does.",
        "# Copy to ~/.tribal-memory/config.yaml and change what you need.",
        "",
    ]

    def render(value: Any) -> str:
        return "null" if value is None else yaml.safe_dump(value).strip().removesuffix("\n...")

    for f in fields(Config):
        if f.metadata.get("internal"):
            continue
        if f.name in SECTIONS:
            lines.append(f"{f.name}:")
            for sub in fields(_section_type(f)):
                lines.append(f"  # {sub.metadata['doc']}{_allowed(sub)}")
                lines.append(f"  {sub.name}: {render(_default(sub))}")
            lines.append("")
        else:
            lines.append(f"# {f.metadata['doc']}{_allowed(f)}")
            lines.append(f"{f.name}: {render(f.default)}")
            lines.append("")
    return "\n".join(lines).rstrip() + "\n"


def _allowed(f: Any) -> str:
    meta = f.metadata
    if meta.get("choices"):
        return " (" + " | ".join(map(str, meta["choices"])) + ")"
    if meta.get("min") is not None:
        return f" ({meta['min']}–{meta['max']})"
    return ""
