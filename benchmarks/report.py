"""Write one named section of docs/benchmarks.md, keeping the other sections as they are."""

from __future__ import annotations

import re
from pathlib import Path

DOC = Path(__file__).resolve().parent.parent / "docs" / "benchmarks.md"
HEADER = (
    "# Benchmarks\n\nNumbers written by the scripts in `benchmarks/` (each section says "
    "which command produced it). Re-run a script to refresh its section.\n"
)


def write_section(name: str, markdown: str, doc: Path = DOC) -> None:
    """Replace (or append) the section between ``<!-- name -->`` and ``<!-- /name -->``."""
    text = doc.read_text(encoding="utf-8") if doc.exists() else HEADER
    block = f"<!-- {name} -->\n{markdown.strip()}\n<!-- /{name} -->"
    pattern = re.compile(rf"<!-- {re.escape(name)} -->.*?<!-- /{re.escape(name)} -->", re.S)
    if pattern.search(text):
        text = pattern.sub(lambda _: block, text)
    else:
        text = text.rstrip() + "\n\n" + block + "\n"
    doc.parent.mkdir(parents=True, exist_ok=True)
    doc.write_text(text, encoding="utf-8")
