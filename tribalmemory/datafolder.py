"""The data folder's own protection: private permissions and an identity the daemon can prove.

Everything in the data folder (store, databases, logs, token hash) is readable by its owner only:
the folder is ``0700`` and its files ``0600``. :func:`make_private` creates it that way and
tightens what an older version left readable: the folder and the entries Tribal Memory writes
there (:func:`own_entry`), never anything else a mistyped ``data_dir`` points at. A data folder
that is a file, the file system's root or a folder that cannot be written is refused with a
:class:`~tribalmemory.config.ConfigError` naming it.

``identity.json`` (created once, ``0600``) holds a public id and a secret. The daemon shows the
id in ``/v1/health`` and answers a client's random challenge with ``HMAC(secret, challenge)``;
a client on the same machine reads the secret from its own data folder and checks the answer
before it sends a token or memory text (:mod:`tribalmemory.client`). Another user's process
holding the port cannot read the secret, so it cannot pass for the daemon of this folder.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import os
import re
import secrets
import stat
from dataclasses import dataclass
from pathlib import Path

from .config import DATA_FOLDER_FIX as FIX
from .config import ConfigError, check_data_folder
from .timeutil import to_iso, utc_now

log = logging.getLogger("tribalmemory.datafolder")

IDENTITY_FILE = "identity.json"
FOLDER_MODE = 0o700
FILE_MODE = 0o600
CHALLENGE = re.compile(r"[0-9a-f]{32,128}")
ID_PATTERN = re.compile(r"df-[0-9a-f]{16}")


OWN_NAMES = frozenset(
    {
        "store",
        "logs",
        "ingested",
        "identity.json",
        "auth.json",
        "datafiles.json",
        "daemon.lock",
        "daemon.pid",
        "config.yaml",
        ".env",
        "lancedb",  # version 0.9's memories and episodes, in the same default folder
        "episodes.db",
    }
)
"""The entries Tribal Memory writes at the top of its data folder (with the databases and the
folders :func:`own_entry` also recognises), and those version 0.9 wrote there."""


def own_entry(name: str) -> bool:
    """Whether the data folder's entry ``name`` is one Tribal Memory writes: :data:`OWN_NAMES`,
    its SQLite databases and their side files (``episodes.sqlite3-wal``), the folders ``doctor``
    sets damaged files aside in (``damaged-…``) and the temporary files of its writes (an
    identity being written, an import's upload, a restore's copies and the files it
    replaces)."""
    return (
        name in OWN_NAMES
        or ".sqlite3" in name
        or name.startswith(("damaged-", f".{IDENTITY_FILE}.", ".import-", ".restore-"))
        or name.startswith(".replaced-")
    )


def make_private(path: Path) -> Path:
    """Create ``path`` (``0700``) if needed; take group/other access from it and from what
    Tribal Memory wrote inside (:func:`own_entry`, all the way down); leave anything else in it
    alone (``data_dir: ~`` leaves the home folder's files as they were). ConfigError: ``path``
    is a file or the file system's root, or it cannot be created or written.

    Entries that cannot be changed (another owner) are logged and left alone.
    """
    check_data_folder(path)
    try:
        path.mkdir(mode=FOLDER_MODE, parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError(
            f"cannot create the data folder {path} ({exc.strerror or exc}): {FIX}"
        ) from None
    if not os.access(path, os.W_OK | os.X_OK):
        raise ConfigError(f"the data folder {path} cannot be written: {FIX}")
    _restrict(path, FOLDER_MODE)
    for entry in os.scandir(path):
        if not own_entry(entry.name):
            continue
        own = Path(entry.path)
        if not entry.is_dir(follow_symlinks=False):
            _restrict(own, FILE_MODE)
            continue
        _restrict(own, FOLDER_MODE)
        for root, dirs, files in os.walk(own):
            for name in dirs:
                _restrict(Path(root, name), FOLDER_MODE)
            for name in files:
                _restrict(Path(root, name), FILE_MODE)
    return path


def _restrict(path: Path, mode: int) -> None:
    try:
        info = path.lstat()
        if stat.S_ISLNK(info.st_mode) or not stat.S_IMODE(info.st_mode) & 0o077:
            return
        os.chmod(path, stat.S_IMODE(info.st_mode) & mode)
    except FileNotFoundError:
        pass
    except OSError as exc:
        log.warning("cannot make %s private (%s); others may be able to read it", path, exc)


def write_private(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` with mode ``0600`` (whatever the umask)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, FILE_MODE)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        os.fchmod(handle.fileno(), FILE_MODE)
        handle.write(text)


def open_private_append(path: Path) -> int:
    """A file descriptor appending to ``path`` (created ``0600``)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, FILE_MODE)
    os.fchmod(fd, FILE_MODE)
    return fd


# -- identity -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Identity:
    """The data folder's public ``id`` and the ``secret`` that proves it."""

    id: str
    secret: str

    def prove(self, challenge: str) -> str:
        message = b"tribal-memory-identity:" + challenge.encode("ascii")
        return hmac.new(bytes.fromhex(self.secret), message, hashlib.sha256).hexdigest()

    def verify(self, challenge: str, proof: str) -> bool:
        return hmac.compare_digest(self.prove(challenge), proof)


def new_challenge() -> str:
    return secrets.token_hex(16)


def read_identity(folder: Path) -> Identity | None:
    """The identity of ``folder``, or None when it has none (or it is unreadable)."""
    try:
        data = json.loads((folder / IDENTITY_FILE).read_text(encoding="utf-8"))
        identity = Identity(id=data["id"], secret=data["secret"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    valid = ID_PATTERN.fullmatch(str(identity.id)) and re.fullmatch(
        r"[0-9a-f]{64}", str(identity.secret)
    )
    return identity if valid else None


def ensure_identity(folder: Path) -> Identity:
    """The identity of ``folder``, created on first use (two processes agree on one)."""
    found = read_identity(folder)
    if found is not None:
        return found
    make_private(folder)
    path = folder / IDENTITY_FILE
    created = Identity(id="df-" + secrets.token_hex(8), secret=secrets.token_hex(32))
    text = json.dumps(
        {"id": created.id, "secret": created.secret, "created_at": to_iso(utc_now())}, indent=2
    )
    tmp = folder / f".{IDENTITY_FILE}.{os.getpid()}.tmp"
    write_private(tmp, text + "\n")
    try:
        if path.exists():  # damaged: replace it (clients re-read it on their next check)
            log.warning("%s was unreadable; writing a new data-folder identity", path)
            os.replace(tmp, path)
            return created
        os.link(tmp, path)  # fails if another process created it first
    except FileExistsError:
        pass
    finally:
        tmp.unlink(missing_ok=True)
    found = read_identity(folder)
    if found is None:
        raise OSError(f"cannot read the data-folder identity {path}")
    return found
