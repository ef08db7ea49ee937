"""Copying the store's files as they are on disk: holes stay holes.

The embedded store maps files of tens of MB that hold a few KB of data (sparse files):
``shutil.copy2`` writes their holes out as zeros, so the backup of a folder of a few hundred
KB took 270 MB. :func:`copy_sparse` copies only the data (found with ``SEEK_DATA`` /
``SEEK_HOLE`` where the filesystem tells them, else all of it), skips blocks of zeros within
it, and gives the copy the original's size.
"""

from __future__ import annotations

import errno
import os
import shutil

CHUNK = 1 << 20


def _data_ranges(fd: int, size: int) -> list[tuple[int, int]]:
    """The (start, end) byte ranges of ``fd`` that hold data: all of it when the filesystem
    cannot tell holes apart."""
    if not hasattr(os, "SEEK_DATA"):
        return [(0, size)]
    ranges, offset = [], 0
    try:
        while offset < size:
            try:
                start = os.lseek(fd, offset, os.SEEK_DATA)
            except OSError as exc:
                if exc.errno == errno.ENXIO:  # only a hole is left
                    break
                raise
            end = os.lseek(fd, start, os.SEEK_HOLE)
            ranges.append((start, end))
            offset = end
    except OSError:
        return [(0, size)]
    return ranges


def copy_sparse(src: str | os.PathLike[str], dst: str | os.PathLike[str]) -> str:
    """Copy ``src`` to ``dst`` with its metadata as ``shutil.copy2`` does, writing only its
    data: holes, and blocks of zeros, are left as holes. Returns ``dst``."""
    with open(src, "rb") as source, open(dst, "wb") as target:
        size = os.fstat(source.fileno()).st_size
        zeros = memoryview(bytes(CHUNK))  # sliced without copying
        for start, end in _data_ranges(source.fileno(), size):
            source.seek(start)
            offset = start
            while offset < end:
                chunk = source.read(min(CHUNK, end - offset))
                if not chunk:
                    break
                if chunk != zeros[: len(chunk)]:
                    target.seek(offset)
                    target.write(chunk)
                offset += len(chunk)
        target.truncate(size)
    shutil.copystat(src, dst)
    return str(dst)
