"""The Elasticsearch credentials of `esbench race` and `esbench run --es-url`, from the environment.

Never from options, so that they stay off command lines. The password comes from ES_PASSWORD, or
from the file ES_PASSWORD_FILE names: the Rally Job mounts its Secret there, because a file is
read by this process alone, while an environment variable is inherited by every child process
and shown wherever a process's environment is dumped.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

import click

USERNAME = "ES_USERNAME"
PASSWORD = "ES_PASSWORD"
PASSWORD_FILE = "ES_PASSWORD_FILE"


def from_env(env: Mapping[str, str] = os.environ) -> tuple[str | None, str | None]:
    """(username, password); a usage error if the password is given twice or its file is unreadable."""
    path = env.get(PASSWORD_FILE)
    if not path:
        return env.get(USERNAME), env.get(PASSWORD)
    if env.get(PASSWORD):
        raise click.UsageError(f"set {PASSWORD} or {PASSWORD_FILE}, not both")
    try:
        text = Path(path).read_text()
    except OSError as error:
        raise click.UsageError(f"{PASSWORD_FILE}: cannot read {path}: {error.strerror}") from None
    # A file written by an editor or `echo` ends with a line break, which is not part of the password.
    return env.get(USERNAME), text.rstrip("\r\n")
