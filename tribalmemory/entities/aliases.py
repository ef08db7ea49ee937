"""One name for the ways a memory writes an entity (:func:`canonical`)."""

from __future__ import annotations

import re

_SEPARATORS = re.compile(r"[\s_-]+")
_SUFFIXES = {"svc": "service", "srv": "service", "api": "api"}
PRE_RELEASE = r"-(?:rc|beta|alpha|pre|preview|dev)(?:\.?\d+)?"
"""A release's pre-release part: ``-rc3`` of ``2.4.0-rc3``, ``-beta.2``."""
RELEASE = re.compile(r"v?(\d+(?:\.\d+){1,3}(?:" + PRE_RELEASE + r")?)")
"""A release, with its ``v`` or without (group 1: without); in small letters."""


def canonical(name: str) -> str:
    """Lower-case, one ``-`` for any run of spaces, ``_`` or ``-``, ``svc``/``srv`` spelled
    ``service``; a trailing ``()``, a leading ``@``, a route's or a link's query string
    (``/v1/spend`` of ``/v1/spend?day=``) and a trailing ``/``, ``\\`` or ``/...`` dropped; a
    version always with its ``v`` (a pre-release too: ``v2.4.0-rc3``). ``orders-svc``,
    ``Orders Service`` and ``orders_service`` meet; ``orders`` and ``orders-service`` stay
    apart."""
    text = name.strip().strip("'\"`")
    if "/" in text and "?" in text:
        text = text.partition("?")[0]
    if text.endswith("()"):
        text = text[:-2]
    text = text.removeprefix("@")
    if text.endswith("/...") and len(text) > 4:
        text = text[:-4]
    if len(text) > 1 and text.endswith(("/", "\\")):
        text = text[:-1]
    version = RELEASE.fullmatch(text)
    if version:
        return "v" + version.group(1)
    if "/" in text or "\\" in text or "." in text:  # paths and dotted names keep their separators
        return text.lower()
    words = [w for w in _SEPARATORS.split(text.lower()) if w]
    return "-".join(_SUFFIXES.get(w, w) if i else w for i, w in enumerate(words))
