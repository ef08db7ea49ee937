"""Duplicate check: updated facts must be stored, restatements must not.

    python benchmarks/dedup.py [--no-write]

Builds its own set (nothing is read from disk): base facts from templates, each with one-token
updates (a number, version, date, name, identifier or negation changed) and true duplicates
(the same fact re-cased, re-punctuated or re-spaced). Through the real memory service (bundled
MiniLM, embedded store, episodes off), for each variant of each fact on a store holding the
base facts: the variant is remembered, and whether it was dropped as a duplicate is counted
(then it is forgotten, so variants do not see each other). "Near" counts the variants whose
cosine to their base fact reaches ``memory.dedup_threshold``: those the cosine alone drops.
Prints the table and writes the "dedup" section of docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "benchmarks")]
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np  # noqa: E402
from report import write_section  # noqa: E402

from tribalmemory.config import config_from_dict  # noqa: E402
from tribalmemory.runtime import start_runtime  # noqa: E402
from tribalmemory.shapes import RememberRequest  # noqa: E402

# (template, old value, new value): each template states one fact around one token.
UPDATES = [
    ("The API rate limit is {} requests per minute", "100", "1000"),
    ("The build image uses Python {}", "3.11", "3.12"),
    ("Code freeze for the spring release starts {}", "2026-03-14", "2026-03-21"),
    ("Staging Postgres listens on port {}", "5433", "5432"),
    ("The payments service is owned by {} from the platform team", "Alice", "Bob"),
    ("Nightly backups are kept for {} days", "30", "90"),
    ("The worker pool runs {} processes per node", "8", "16"),
    ("Feature flags are read from {} at start", "flags_prod.yaml", "flags_stage.yaml"),
    ("The mobile app requires iOS {} or later", "16", "17"),
    ("Invoices are generated on the {} of each month", "1st", "3rd"),
    ("Session tokens expire after {} minutes of inactivity", "15", "30"),
    ("The CDN cache TTL for images is {} seconds", "3600", "86400"),
    ("Our Kubernetes clusters run version {}", "1.28", "1.29"),
    ("The on-call rotation hands over every {} at 10:00", "Monday", "Tuesday"),
    ("Error reports go to the {} Slack channel", "#incidents", "#alerts"),
    ("The search index is rebuilt by {} every night", "reindex_job.py", "rebuild_index.py"),
    ("Customer data is stored in the {} region", "eu-west-1", "eu-central-1"),
    ("The release train leaves every {} weeks", "2", "3"),
    ("Load tests run against {} before each release", "Locust", "k6"),
    ("Log retention in Loki is {} days", "14", "7"),
]
# (fact, the fact with a negation added or removed)
NEGATIONS = [
    ("We deploy to production on Fridays", "We do not deploy to production on Fridays"),
    ("The admin API is exposed to the internet", "The admin API is not exposed to the internet"),
    ("We cache the session tokens in Redis", "We don't cache the session tokens in Redis"),
    ("Migrations run automatically on deploy", "Migrations never run automatically on deploy"),
    ("The import job retries failed rows", "The import job does not retry failed rows"),
    (
        "The nightly export does not include deleted users",
        "The nightly export includes deleted users",
    ),
    (
        "Reviewers can't merge their own pull requests",
        "Reviewers can merge their own pull requests",
    ),
]


def restatements(text: str) -> list[str]:
    """The same fact, written differently but not changed."""
    return [
        text.lower(),
        text + ".",
        "  " + text.replace(" ", "  ") + "  ",
        text + "!",
        text.upper()[:1] + text[1:] + " .",
    ]


@dataclass
class Case:
    base: str
    variant: str
    is_update: bool
    kind: str


def cases() -> list[Case]:
    out: list[Case] = []
    for template, old, new in UPDATES:
        base = template.format(old)
        out.append(Case(base, template.format(new), True, "value"))
        out += [Case(base, r, False, "restatement") for r in restatements(base)]
    for base, changed in NEGATIONS:
        out.append(Case(base, changed, True, "negation"))
        out += [Case(base, r, False, "restatement") for r in restatements(base)]
    return out


async def run() -> dict[str, int]:
    counts = {k: 0 for k in ("updates", "updates_near", "updates_dropped")}
    counts |= {k: 0 for k in ("dups", "dups_near", "dups_dropped", "dups_stored")}
    with tempfile.TemporaryDirectory() as tmp:
        config = config_from_dict({"data_dir": tmp, "episodes": {"enabled": False}})
        runtime = await start_runtime(config)
        service = runtime.service
        threshold = config.memory.dedup_threshold
        try:
            all_cases = cases()
            bases = sorted({c.base for c in all_cases})
            await service.remember_batch([{"content": b, "skip_dedup": True} for b in bases])
            for case in all_cases:
                vectors = await service.embed([case.base, case.variant])
                near = float(np.dot(vectors[0], vectors[1])) >= threshold
                result = await service.remember(RememberRequest(content=case.variant))
                prefix = "updates" if case.is_update else "dups"
                counts[prefix] += 1
                counts[f"{prefix}_near"] += near
                counts[f"{prefix}_dropped"] += not result.success
                if case.is_update and not result.success:
                    print(f"update dropped: {case.variant!r} (fact: {case.base!r})")
                if not case.is_update:
                    counts["dups_stored"] += result.success
                if result.success:
                    await service.forget(result.memory_id)
        finally:
            await runtime.stop()
    return counts


def report(counts: dict[str, int], threshold: float) -> str:
    return "\n".join(
        [
            "## Duplicate check",
            "",
            "`python benchmarks/dedup.py`: a constructed set of facts, each remembered again "
            "as a one-token update (number, version, date, name, identifier or negation "
            "changed) and as true duplicates (re-cased, re-punctuated, re-spaced), through the "
            f"memory service with the bundled model (`memory.dedup_threshold` {threshold}). "
            "*Near*: the variant's cosine to its fact reaches the threshold (the cosine alone "
            "would drop it).",
            "",
            "| variants | count | near (cosine ≥ threshold) | dropped as duplicates | stored |",
            "|---|---:|---:|---:|---:|",
            f"| one-token updates | {counts['updates']} | {counts['updates_near']} | "
            f"{counts['updates_dropped']} (target 0) | "
            f"{counts['updates'] - counts['updates_dropped']} |",
            f"| true duplicates | {counts['dups']} | {counts['dups_near']} | "
            f"{counts['dups_dropped']} | {counts['dups_stored']} |",
        ]
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-write", action="store_true", help="do not update the docs")
    args = parser.parse_args()
    counts = asyncio.run(run())
    text = report(counts, config_from_dict({}).memory.dedup_threshold)
    print(text)
    if not args.no_write:
        write_section("dedup", text)


if __name__ == "__main__":
    main()
