"""Atomic outputs: directories and JSON files written aside, then swapped into place."""

from __future__ import annotations

import contextlib
import errno
import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from multimsd import interrupts
from multimsd.errors import MultimsdError


def current_umask() -> int:
    """The process's umask (read from /proc where there is one: setting it to read it is not thread-safe)."""
    with contextlib.suppress(OSError, ValueError):
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    mask = os.umask(0)
    os.umask(mask)
    return mask


def share_modes(root: Path) -> None:
    """Give ``root`` and everything under it the modes the user's umask gives a new file / directory.

    Temporary files and directories are created 0600 / 0700 (``tempfile``, and libraries that save through
    one); renamed into place they would hide a run from the rest of a group that reads the user's other files.
    With umask 077 everything stays private, as the user asked.
    """
    umask = current_umask()
    file_mode, dir_mode = 0o666 & ~umask, 0o777 & ~umask
    for p in [root, *root.rglob("*")]:
        if p.is_symlink():
            continue
        with contextlib.suppress(FileNotFoundError):
            p.chmod(dir_mode if p.is_dir() else file_mode)


def check_replaceable(out: Path, marker: str, what: str) -> None:
    """Refuse to replace ``out`` unless it is absent, empty, or an earlier output of ours (has ``marker``)."""
    if out.exists() and (not out.is_dir() or (any(out.iterdir()) and not (out / marker).exists())):
        raise MultimsdError(f"{out} exists and is not {what}; refusing to overwrite it")


@contextlib.contextmanager
def atomic_directory(out: Path) -> Iterator[Path]:
    """Yield a temporary sibling of ``out`` to fill; on success it replaces ``out`` in two renames.

    On any failure (an interrupt too) the temporary directory is removed and an earlier ``out`` is left as it
    was, so a crash never leaves a half-written output where a reader expects a complete one.
    """
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.tmp-", dir=out.parent))
    try:
        yield tmp
        # mkdtemp's 0700 (and 0600 files saved through temp files) would follow it into place
        share_modes(tmp)
        # The swap is two renames: an interrupt (Ctrl-C, SIGTERM) waits until both are done.
        with interrupts.deferred():
            old = None
            if out.exists():
                old = out.with_name(f".{out.name}.old-{os.getpid()}")
                os.replace(out, old)
            os.replace(tmp, out)
            if old is not None:
                shutil.rmtree(old, ignore_errors=True)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


def check_writable_dir(path: Path | str, what: str) -> None:
    """Fail now, in one line, if the directory ``path`` could not be created or written later.

    Called at the start of a stage so that an impossible output location (``/proc/...``, a path under a regular
    file, a read-only mount) is reported before minutes of work, not as a traceback at the end. Nothing is
    created: the nearest existing ancestor is probed with a temporary file that is removed at once. (Permission
    bits alone would not do: root passes every mode check and still cannot write ``/proc`` or a read-only mount.)
    """
    path = Path(path).absolute()
    probe = path
    while not probe.exists():
        if probe.parent == probe:  # pragma: no cover - "/" always exists
            break
        if probe.is_symlink():  # a dangling link: mkdir would fail on it
            raise MultimsdError(f"{what} {path}: {probe} is a dangling symbolic link")
        probe = probe.parent
    if not probe.is_dir():
        where = "is" if probe == path else f"is under {probe}, which is"
        raise MultimsdError(f"{what} {path} {where} not a directory")
    try:
        fd, name = tempfile.mkstemp(prefix=".multimsd-write-test-", dir=probe)
    except OSError as e:
        # /proc answers ENOENT to a new file in an existing directory: say what it means.
        reason = "it does not accept new files" if e.errno == errno.ENOENT else e.strerror or type(e).__name__
        where = "" if probe == path else f" (its nearest existing parent {probe})"
        raise MultimsdError(f"{what} {path} cannot be written{where}: {reason}") from None
    os.close(fd)
    os.unlink(name)


def fsync_dir(path: Path) -> None:
    """Make a new or renamed entry of directory ``path`` durable (a file's own fsync does not cover its name)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_text_atomic(path: Path, text: str, durable: bool = False) -> None:
    """Write ``text`` to a temporary sibling, then rename: a reader sees the old file or the whole new one.

    ``durable``: also fsync the file before the rename and the directory after it, so the new file survives a
    power cut once this returns (the studio's gold file, rebuilt after every acknowledged action)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            if durable:
                f.flush()
                os.fsync(f.fileno())
        os.chmod(tmp, 0o666 & ~current_umask())  # mkstemp's 0600 would hide results from the rest of a group
        os.replace(tmp, path)
        if durable:
            fsync_dir(path.parent)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_json_atomic(path: Path, data: Any) -> None:
    """Write JSON to a temporary sibling, fsync it, then rename: a reader sees the old file or the whole new one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(data, f, indent=1, ensure_ascii=False, default=str)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o666 & ~current_umask())  # mkstemp's 0600 would hide results from the rest of a group
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
