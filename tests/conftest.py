"""Shared fixtures: the fake LLM server, the HTTP and runtime helpers, and the reaper that ends
what a session started (see each module's docstring)."""

import os

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from fakellm import fake_llm, fake_llm_env  # noqa: E402,F401

pytest_plugins = ["helpers_http", "helpers_runtime", "helpers_reaper"]
