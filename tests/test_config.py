"""Configuration: validation messages name the key, .env loading, the example file, CLI exit."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from helpers_http import subprocess_env

from tribalmemory.cli.main import main
from tribalmemory.config import Config, ConfigError, example_yaml, load_config, load_env

EXAMPLE = Path(__file__).resolve().parents[1] / "config" / "config.example.yaml"
CONFIG_DOC = Path(__file__).resolve().parents[1] / "docs" / "configuration.md"


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("text", "fragments"),
    [
        ("server:\n  port: abc\n", ["server.port", "expected an integer", "'abc'"]),
        ("server:\n  port: 70000\n", ["server.port", "out of range", "65535"]),
        ("server:\n  port: true\n", ["server.port", "integer"]),
        ("server:\n  bogus: 1\n", ["server.bogus", "unknown key", "max_body_bytes"]),
        ("colour: blue\n", ["colour", "unknown key"]),
        ("server: 5\n", ["server", "mapping"]),
        ("server:\n  log_level: loud\n", ["server.log_level", "loud", "debug, info"]),
        ("episodes:\n  enabled: 'yes'\n", ["episodes.enabled", "true or false"]),
        ("episodes:\n  llm_doubt_share: 1.5\n", ["episodes.llm_doubt_share", "out of range"]),
        ("memory:\n  dedup_threshold: null\n", ["memory.dedup_threshold", "must not be empty"]),
        ("- a list\n", ["mapping"]),
        ("server: [unclosed\n", ["not valid YAML"]),
        ("episodes:\n  monthly_cost_ceiling: .nan\n", ["monthly_cost_ceiling", "got .nan"]),
        (f"episodes:\n  monthly_cost_ceiling: {10**400}\n", ["401 digits is too large"]),
        ("storage:\n  qdrant_url: not a url\n", ["storage.qdrant_url", "http(s)://host"]),
        ("storage:\n  qdrant_url: http://:6333\n", ["storage.qdrant_url", "not a URL"]),
        ("server:\n  host: ''\n", ["server.host", "not a host name or an IP address"]),
        ("server:\n  host: not a host!\n", ["server.host", "'not a host!'"]),
        ("data_dir: ''\n", ["data_dir is empty"]),
        ("server:\n  port: 18000\n  port: 18001\n", ["port is set twice", "line 3"]),
    ],
)
def test_bad_config_names_the_key(tmp_path: Path, text: str, fragments: list[str]) -> None:
    with pytest.raises(ConfigError) as caught:
        load_config(write(tmp_path / "config.yaml", text))
    for fragment in fragments:
        assert fragment in str(caught.value)


def test_missing_explicit_file_is_an_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ConfigError, match="does not exist"):
        load_config(tmp_path / "nope.yaml")
    monkeypatch.setenv("TRIBAL_MEMORY_CONFIG", str(tmp_path / "gone.yaml"))
    with pytest.raises(ConfigError, match="gone.yaml does not exist"):
        load_config()


def test_hosts_and_urls_that_bind_and_connect_load(tmp_path: Path) -> None:
    for host in ("0.0.0.0", "::1", "localhost", "tm-01.lab.example"):
        assert load_config(write(tmp_path / "c.yaml", f"server:\n  host: '{host}'\n")).server.host
    text = "storage:\n  qdrant_url: https://qdrant.example:6333\n"
    assert load_config(write(tmp_path / "c.yaml", text)).storage.qdrant_url


def test_a_config_file_that_is_no_utf8_text_or_a_folder_is_named(tmp_path: Path) -> None:
    latin = tmp_path / "latin.yaml"
    latin.write_bytes("server:\n  host: caf\xe9\n".encode("latin-1"))
    with pytest.raises(ConfigError, match="latin.yaml is not UTF-8 text"):
        load_config(latin)
    with pytest.raises(ConfigError, match="is a folder, not a YAML file"):
        load_config(tmp_path)


def test_an_empty_home_variable_means_the_default(
    tm_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TRIBAL_MEMORY_HOME", "")
    monkeypatch.setenv("HOME", str(tm_home))
    assert load_config().data_path == tm_home / ".tribal-memory"


def test_a_number_in_exponent_notation_is_a_number(tmp_path: Path) -> None:
    config = load_config(write(tmp_path / "c.yaml", "episodes:\n  monthly_cost_ceiling: 1e1\n"))
    assert config.episodes.monthly_cost_ceiling == 10.0  # YAML 1.1 would read the string "1e1"


def test_missing_default_file_means_defaults(tm_home: Path) -> None:
    config = load_config()
    assert config.server.port == 18790 and config.data_path == tm_home


def test_values_and_env_config_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = write(tmp_path / "c.yaml", "server:\n  port: 19000\nepisodes:\n  llm_doubt_share: 0\n")
    monkeypatch.setenv("TRIBAL_MEMORY_CONFIG", str(path))
    config = load_config()
    assert config.server.port == 19000 and config.episodes.llm_doubt_share == 0.0
    assert isinstance(config.episodes.llm_doubt_share, float)


def test_retired_ambiguous_band_loads_with_a_deprecation(tmp_path: Path) -> None:
    config = load_config(write(tmp_path / "c.yaml", "episodes:\n  ambiguous_band: 0.25\n"))
    assert config.deprecations == [
        "deprecated setting episodes.ambiguous_band: replaced by episodes.llm_doubt_share: the "
        "LLM gets the least confident share of decisions instead of a band of scores; remove "
        "it from the file"
    ]
    assert not hasattr(config.episodes, "ambiguous_band")


def test_env_file_does_not_override(tm_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write(tm_home / ".env", "TM_TEST_SET=from-file\nTM_TEST_NEW=from-file\n")
    monkeypatch.setenv("TM_TEST_SET", "from-shell")
    monkeypatch.setenv("TM_TEST_NEW", "")
    monkeypatch.delenv("TM_TEST_NEW")  # teardown removes what load_env sets
    monkeypatch.setenv("TM_TEST_EMPTY", "")  # set but empty: as not set
    write(tm_home / ".env", "TM_TEST_SET=from-file\nTM_TEST_NEW=from-file\nTM_TEST_EMPTY=f\n")
    load_env()
    assert os.environ["TM_TEST_SET"] == "from-shell"
    assert os.environ["TM_TEST_NEW"] == "from-file"
    assert os.environ["TM_TEST_EMPTY"] == "f"


def test_example_file_is_generated_from_the_schema() -> None:
    assert EXAMPLE.read_text(encoding="utf-8") == example_yaml()
    parsed = yaml.safe_load(example_yaml())
    default = Config()
    assert parsed["server"]["port"] == default.server.port
    assert load_config(EXAMPLE).episodes == default.episodes


def test_configuration_doc_embeds_the_example() -> None:
    assert example_yaml() in CONFIG_DOC.read_text(encoding="utf-8")


def test_cli_config_error_exits_2_with_message(
    tm_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tm_home / "bad.yaml", "server:\n  port: -1\n")
    assert main(["stats", "--config", str(path)]) == 2
    assert "configuration error: server.port" in capsys.readouterr().err


def test_serve_config_error_exits_2_without_traceback(tm_home: Path, tmp_path: Path) -> None:
    path = write(tm_home / "bad.yaml", "storage:\n  colection: x\n")
    done = subprocess.run(
        [sys.executable, "-m", "tribalmemory", "serve", "--config", str(path)],
        env=subprocess_env(tm_home, tmp_path),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert "storage.colection: unknown key" in done.stderr
    assert "Traceback" not in done.stderr


def test_the_09_cosine_threshold_is_ignored_with_a_deprecation(tmp_path: Path) -> None:
    """0.9 wrote a cosine (0.75) there; read as today's probability it would keep almost every
    memory out of episodes."""
    path = write(tmp_path / "c.yaml", "episodes:\n  embedding_similarity_threshold: 0.75\n")
    config = load_config(path)
    assert config.episodes.join_threshold is None  # the model's own threshold
    [note] = config.deprecations
    assert "episodes.embedding_similarity_threshold (version 0.9)" in note
    assert "episodes.join_threshold" in note
