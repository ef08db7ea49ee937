"""``tribalmemory token generate | rotate | show``."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from ..config import Config, env_file
from ..interfaces.auth import (
    SHORT,
    TOKEN_ENV,
    generate_token,
    hash_token,
    mask,
    read_env_value,
    set_env_value,
    token_store,
)
from .output import CliError


def token(args: argparse.Namespace, config: Config) -> int:
    store = token_store(config)
    secrets = env_file()
    if args.action == "show":
        return show(store.current_hash(), secrets, args.reveal)
    if args.action == "generate" and store.active:
        raise CliError("a token already exists; `tribalmemory token rotate` replaces it")
    old, new = read_env_value(secrets, TOKEN_ENV), generate_token()
    set_env_value(secrets, TOKEN_ENV, new)  # first: a token nobody can read must not be live
    store.save(new)
    print(
        f"{'Rotated' if args.action == 'rotate' else 'Generated'} the API token "
        f"{new if args.reveal else mask(new)}"
    )
    print(
        f"Saved as {TOKEN_ENV} in {secrets} (mode 0600); the daemon checks its hash in "
        f"{store.path} from its next request on."
    )
    if args.action == "rotate":
        print("The old token no longer works: give the new one to clients on other machines.")
    if os.environ.get(TOKEN_ENV) not in (None, old, new):  # set in the shell, not by .env
        print(
            f"Note: {TOKEN_ENV} is also set in this shell's environment, which wins over "
            f"{secrets}; update or unset it."
        )
    return 0


def show(expected: str | None, secrets: Path, reveal: bool) -> int:
    """The token the CLI and ``tribalmemory mcp`` send: the shell's ``TRIBAL_MEMORY_TOKEN``
    when set (it wins over the file), else the file's; exit 1 when it is not the daemon's."""
    in_file = read_env_value(secrets, TOKEN_ENV)
    in_shell = os.environ.get(TOKEN_ENV) or None
    from_shell = in_shell is not None and in_shell != in_file
    value = in_shell if from_shell else in_file
    if not value:
        if expected is None:
            raise CliError(
                "no API token yet: the daemon serves loopback clients without one. "
                "`tribalmemory token generate` creates one."
            )
        raise CliError(
            f"the daemon has a token but {secrets} does not hold it; "
            "`tribalmemory token rotate` makes a new one"
        )
    if reveal:
        print(value)
    elif len(value) > SHORT:
        print(mask(value))
    else:  # a mask of a short token would show most of it: say what it is instead
        print(
            f"a token of {len(value)} characters, too short to show a part of it (--reveal "
            "prints it; `tribalmemory token rotate` makes a long one)"
        )
    if from_shell:
        print(f"(from this shell's {TOKEN_ENV}, which wins over {secrets})")
    if expected is not None and hash_token(value) != expected:
        where, fix = (
            (
                f"this shell's {TOKEN_ENV}",
                f"unset it to use the one in {secrets}, or set it to the daemon's",
            )
            if from_shell
            else (str(secrets), "`tribalmemory token rotate` makes them agree")
        )
        raise CliError(f"the token in {where} is not the daemon's current token; {fix}")
    if expected is None:
        print("(the daemon does not require it: its auth.json is missing)")
    return 0
