"""``export``, ``import``, ``backup`` and ``restore``: through the daemon when one answers,
else on the data folder directly. Progress bars go to stderr (see :mod:`..portability.progress`).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import sys
import tempfile
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

from .. import validation as check
from ..config import Config, env_file
from ..errors import InvalidInput
from ..interfaces.auth import TOKEN_ENV, read_env_value
from ..plural import counted
from ..portability import backup as backups
from ..portability import exporter, importer, legacy09
from ..portability.progress import bar, wanted
from ..shapes import ExportQuery
from . import fields
from .output import CliError, print_json
from .reach import our_daemon, own_runtime

CHUNK = 1 << 16


def _since(args: argparse.Namespace) -> Any:
    return check.timestamp("--since", args.since)


def export(args: argparse.Namespace, config: Config) -> int:
    since = _since(args)
    return asyncio.run(_export(args, config, since))


async def _export(args: argparse.Namespace, config: Config, since: Any) -> int:
    try:
        return await _write_export(args, config, since, sys.stdout.buffer)
    except BrokenPipeError:
        raise  # the reader went away (`| head`): the CLI ends quietly
    except OSError as exc:  # a full disk, /dev/full
        raise CliError(f"cannot write the export ({exc.strerror or exc})", 1) from None


async def _write_export(args: argparse.Namespace, config: Config, since: Any, out: Any) -> int:
    show = wanted(False)
    client = our_daemon(config, args.config)
    if client is not None:
        try:
            total = (await client.stats())["total_memories"]
            with bar("export", total, show) as advance:
                scopes = fields.given(args)
                stream = client.export_stream(args.since, args.vectors, args.project, **scopes)
                async with contextlib.aclosing(stream):  # closed here when a write fails
                    async for chunk in stream:
                        out.write(chunk)
                        advance(chunk.count(b"\n"))
        finally:
            await client.aclose()
        out.flush()
        return 0
    scopes = check.scopes(ExportQuery.model_construct(**fields.given(args)))
    runtime = await own_runtime(config)
    try:
        total = await asyncio.to_thread(runtime.service.store.count)
        with bar("export", total, show) as advance:
            lines = exporter.export_lines(
                runtime.api, since, args.vectors, advance, project=args.project, scopes=scopes
            )
            async with contextlib.aclosing(lines):
                async for line in lines:
                    out.write(line.encode("utf-8"))
    finally:
        await runtime.stop()
    out.flush()
    return 0


async def _file_chunks(path: Path, advance: Any) -> AsyncIterator[bytes]:
    with path.open("rb") as handle:
        while chunk := await asyncio.to_thread(handle.read, CHUNK):
            advance(len(chunk))
            yield chunk


def import_(args: argparse.Namespace, config: Config) -> int:
    path = Path(args.file)
    if getattr(args, "source", "export") == legacy09.SOURCE:
        return _import_09(args, config, path)
    if not path.exists():
        raise CliError(f"{path}: no such file", 1)
    if not path.is_file():
        raise CliError(f"{path} is not a file", 1)
    with _resumable():
        report = asyncio.run(_import(args, config, path))
    if args.json:
        print_json(report)
    else:
        print(describe(report))
    return 0


@contextlib.contextmanager
def _resumable() -> Iterator[None]:
    """Ctrl-C during an import: say that what it stored stays and how to import the rest."""
    try:
        yield
    except KeyboardInterrupt:
        print(
            "tribalmemory: import interrupted; what it stored is kept. Run the same command "
            "again to import the rest: what is stored already is skipped",
            file=sys.stderr,
        )
        raise


def _import_09(args: argparse.Namespace, config: Config, path: Path) -> int:
    """A 0.9 data folder: converted into a temporary export file, which is imported."""
    fd, name = tempfile.mkstemp(prefix="tribalmemory-0.9-", suffix=".jsonl")
    os.close(fd)
    converted = Path(name)
    try:
        try:
            counts = legacy09.write_export(path, converted, legacy09.SOURCE, 0)
        except InvalidInput as exc:
            raise CliError(exc.message, 1) from None
        with _resumable():
            report = asyncio.run(_import(args, config, converted))
    finally:
        converted.unlink(missing_ok=True)
    report["from"] = legacy09.SOURCE
    report["deleted_in_0_9"] = counts.deleted
    report["memberships_dropped"] = counts.memberships_dropped
    if args.json:
        print_json(report)
    else:
        print(describe(report))
        print(
            f"From tribalmemory 0.9 at {path}: left out {counted(counts.deleted, 'memory')} it "
            f"had deleted; dropped {counted(counts.memberships_dropped, 'second membership')} "
            "of a memory"
        )
    return 0


def describe(report: dict[str, Any]) -> str:
    """One line for people: what was (or would be) imported."""
    if report["dry_run"]:
        head = f"Would import {counted(report['new'], 'new memory')}"
        episodes = f"{counted(report['episodes_new'], 'episode')} to recreate"
    else:
        head = f"Imported {counted(report['stored'], 'new memory')}"
        episodes = f"{counted(report['episodes_created'], 'episode')} recreated"
    added = report["new"] if report["dry_run"] else report["stored"]
    vectors = (
        "" if not added else ", their vectors" if report["vectors_used"] else ", embedding them"
    )
    repeated = report.get("repeated") or 0  # an older daemon counts them as stored
    twice = f", {repeated} repeated" if repeated else ""
    return (
        f"{head} ({report['existing']} already stored{twice}, {report['memories']} in the file"
        f"{vectors}); {episodes} ({report['episodes_existing']} already stored, "
        f"{report['episodes']} in the file){_causes(report)}"
    )


def _causes(report: dict[str, Any]) -> str:
    """The user's causal links of the file, when it has any (an older daemon counts none)."""
    links = report.get("causes") or 0
    if not links:
        return ""
    if report["dry_run"]:
        return f"; {counted(links, 'causal link')} in the file"
    skipped = "".join(
        f", {n} skipped: {reason}" for reason, n in (report.get("causes_skipped") or {}).items()
    )
    return (
        f"; {counted(report['causes_created'], 'causal link')} restored "
        f"({report['causes_existing']} already stored{skipped}, {links} in the file)"
    )


async def _import(args: argparse.Namespace, config: Config, path: Path) -> dict[str, Any]:
    show = wanted(args.json)
    client = our_daemon(config, args.config)
    if client is not None:
        try:
            with bar("upload", path.stat().st_size, show) as advance:
                return await client.import_file(_file_chunks(path, advance), args.dry_run)
        finally:
            await client.aclose()
    runtime = await own_runtime(config)
    try:
        if args.dry_run:
            return (await importer.plan(runtime.api, path)).to_json()
        planned = await importer.plan(runtime.api, path)
        with bar("import", planned.memories, show) as advance:
            return (await importer.apply(runtime.api, path, advance, planned)).to_json()
    finally:
        await runtime.stop()


def backup(args: argparse.Namespace, config: Config) -> int:
    dest = Path(args.dir).expanduser().resolve()
    result = asyncio.run(_backup(args, config, dest))
    if args.json:
        print_json(result)
    else:
        print(f"Backed up {counted(result['memories'], 'memory')} to {result['path']}")
    return 0


async def _backup(args: argparse.Namespace, config: Config, dest: Path) -> dict[str, Any]:
    client = our_daemon(config, args.config)
    if client is not None:
        try:
            return await client.backup(str(dest))
        finally:
            await client.aclose()
    runtime = await own_runtime(config)
    try:
        return await backups.backup(config, runtime.service, dest)
    finally:
        await runtime.stop()


def restore(args: argparse.Namespace, config: Config) -> int:
    from .service import refuse_running_daemon

    refuse_running_daemon(config, args.config, "restore")
    source = Path(args.dir).expanduser().resolve()
    try:
        manifest = backups.read_manifest(source)
        with bar("restore", len(backups.restored(manifest)), wanted(args.json)) as advance:
            result = backups.restore(source, config, args.force, advance, manifest)
    except InvalidInput as exc:
        raise CliError(exc.message, 1) from None
    if args.json:
        print_json(result)
    else:
        print(f"Restored {counted(result['memories'], 'memory')} into {result['path']}")
    secrets = env_file()
    if "auth.json" in result["restored"] and not (
        os.environ.get(TOKEN_ENV) or read_env_value(secrets, TOKEN_ENV)
    ):
        print(
            f"note: the daemon will ask for the API token whose hash the backup holds "
            f"(auth.json), and {secrets} has none: put it there as {TOKEN_ENV}=…, or run "
            "`tribalmemory token rotate` for a new one",
            file=sys.stderr,
        )
    return 0
