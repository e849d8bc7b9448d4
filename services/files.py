"""Who may have written a file the server trusts: the credentials file, the ``.env`` file, the
key files and the writer's head file are read only when this process's user or root owns them
and neither the group nor others may write them (as ssh's StrictModes). For the credentials
file and the key files, their folder too: owned by this user or root, and writable by group or
others only with the sticky bit (``/tmp``), so that nobody else can swap the file.

``read_env_file`` reads a ``.env`` file in the format docker compose and python-dotenv share
(``KEY=VALUE``, ``export``, quotes, ``#`` comments at a line's start or after a blank,
``${VAR}`` expanded), by python-dotenv, after the checks above.

A file another user made is what a local user who wants to be admin plants: a credentials file
naming their token, a ``.env`` naming their credentials file. The errors are one line naming
the file and the fix (``chown``, ``chmod go-w``).
"""

from __future__ import annotations

import io
import os
import pwd
import stat
from pathlib import Path

from dotenv import dotenv_values
from dotenv.parser import parse_stream


class FileTrustError(ValueError):
    """A file (or its folder) that someone other than this user or root may have written; the
    message is one line naming it and the fix."""


def _name(uid: int) -> str:
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return str(uid)


def _user(uid: int) -> str:
    name = _name(uid)
    return f"uid {uid}" if name == str(uid) else f"{name} (uid {uid})"


def check_trusted(path: Path | str, *, folder: bool = False, what: str = "the file") -> None:
    """FileTrustError unless ``path`` is owned by this process's user or root and not writable
    by group or others; with ``folder``, its folder likewise (others may write it only with the
    sticky bit). A missing file passes (the caller decides what a missing file means); a
    symbolic link is judged by the file it names, and so is its own folder."""
    path = Path(path)
    me = os.geteuid()
    places: list[tuple[Path, str]] = [(path, what)]
    if folder:
        places.append((path.resolve().parent, "its directory"))
    for where, name in places:
        try:
            st = where.stat()
        except FileNotFoundError:
            continue
        except OSError as exc:
            raise FileTrustError(f"{path}: cannot check {name}: {exc.strerror}") from None
        if st.st_uid not in (me, 0):
            raise FileTrustError(
                f"{path}: {name} is owned by {_user(st.st_uid)}, not by this user "
                f"({_user(me)}) or root; check it, then chown {_name(me)} {where}")
        sticky = name != what and st.st_mode & stat.S_ISVTX
        if st.st_mode & 0o022 and not sticky:
            raise FileTrustError(
                f"{path}: {name} may be written by others (mode {st.st_mode & 0o777:o}); "
                f"chmod go-w {where}")


def read_env_file(path: Path | str) -> dict[str, str]:
    """The ``KEY=VALUE`` settings of a ``.env`` file (a missing file: none). FileTrustError for
    a file ``check_trusted`` refuses; ValueError naming the file and the line of a line that is
    not ``KEY=VALUE`` (never what it holds: it may be a secret mistyped)."""
    path = Path(path)
    check_trusted(path, what="the .env file")
    try:
        if not path.is_file():
            return {}
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) else "not UTF-8 text"
        raise ValueError(f"{path}: cannot read it: {reason}") from None
    for binding in parse_stream(io.StringIO(text)):
        if binding.error:
            raise ValueError(f"{path}: line {binding.original.line}: not KEY=VALUE (the format "
                             "of docker compose and python-dotenv)")
    values = dotenv_values(stream=io.StringIO(text), interpolate=True)
    return {key: value for key, value in values.items() if value is not None}


__all__ = ["FileTrustError", "check_trusted", "read_env_file"]
