"""``tribalmemory doctor [--repair]``: check the data files; repair by moving damaged ones aside.

The checks are those start-up makes; the repairs are described in ``storage/repair.py`` and
docs/cli.md. The daemon must be stopped (the command opens the store).
"""

from __future__ import annotations

import argparse

from ..config import Config

MAX_ROUNDS = 10  # one repair per round, then everything is checked again


def _model(config: Config) -> tuple[str, int]:
    from ..embeddings.embedder import BUNDLED_DIM, BUNDLED_MODEL, load_embedder

    if config.embedding.model == BUNDLED_MODEL:
        return BUNDLED_MODEL, BUNDLED_DIM
    embedder = load_embedder(config.embedding.model, config.embedding.cache_dir)
    return embedder.model_name, embedder.dim


def _show(findings: list) -> None:
    for finding in findings:
        if finding.problem is None:
            note = f": {finding.note}" if finding.note else ""
            print(f"ok       {finding.path}{note}")
        else:
            print(f"DAMAGED  {finding.path} {finding.problem}")
            print(f"         repair: {finding.repair or 'none automatic'}")


def doctor(args: argparse.Namespace, config: Config) -> int:
    from ..storage.repair import Aside, Doctor, RepairError
    from .service import refuse_running_daemon

    refuse_running_daemon(config, args.config, "run doctor again")
    if nothing_stored(config):
        print(
            f"Nothing stored in {config.data_path} yet: no store to check (the first `serve`, "
            "`remember` or `import` creates it)."
        )
        return 0
    name, dim = _model(config)
    checker = Doctor(config, name, dim)
    try:
        findings = checker.diagnose()
        _show(findings)
        damaged = [f for f in findings if f.problem]
        if not damaged:
            print("No damage found.")
            return 0
        if not args.repair:
            print(
                "Run `tribalmemory doctor --repair` to repair: damaged files are moved aside, "
                "nothing is deleted."
            )
            return 1
        aside = Aside(config.data_path)
        for _ in range(MAX_ROUNDS):
            fixable = [f for f in damaged if f.fix is not None]
            if not fixable:
                break
            try:
                done = fixable[0].fix(aside)  # type: ignore[misc]
            except RepairError as exc:
                print(f"cannot repair {fixable[0].path}: {exc}")
                break
            for line in done:
                print(f"repaired: {line}")
            damaged = [f for f in checker.diagnose() if f.problem]
            if not damaged:
                break
        print()
        findings = checker.diagnose()
        _show(findings)
        if any(f.problem for f in findings):
            return 1
        checker.rewrite_manifest()
        where = f" Damaged files are in {aside.folder}." if aside.folder.exists() else ""
        print(f"Repaired.{where}")
        return 0
    finally:
        checker.close()


def nothing_stored(config: Config) -> bool:
    """Whether the data folder holds none of the files Tribal Memory stores (a new path):
    opening the embedded store to check it would create one."""
    from ..storage import integrity

    data = config.data_path
    sqlite = [data / f.name for f in integrity.SQLITE_FILES]
    files = [config.store_path, data / integrity.MANIFEST, *sqlite]
    return not config.storage.qdrant_url and not any(f.exists() for f in files)
