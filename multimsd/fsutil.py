"""Atomic outputs: directories and JSON files written aside, then swapped into place; a write that fails for a
cause the user fixes is one line.

A full disk (ENOSPC), a quota (EDQUOT), a file-size limit (EFBIG) or a read-only remount (EROFS) is not a bug, nor
is a place that cannot be written (no permission, a file where a directory should be, ``/proc``): it is the user's
to fix, so it is a :class:`~multimsd.errors.MultimsdError` naming the output and its own cause (:func:`writing`,
around every writer of an output; :func:`write_error`, for what escapes them). The writers put their files aside
and rename them into place only when complete, so what such a failure leaves is the temporary file, which they
remove: a reader finds the earlier output or none, never half of one.
"""

from __future__ import annotations

import contextlib
import errno
import glob
import json
import os
import re
import resource
import shutil
import socket
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from multimsd import interrupts
from multimsd.errors import MultimsdError

# The write failures the user fixes, with what to do; errno's name for each is its cause in the error line.
DISK_ERRORS = {
    errno.ENOSPC: "free space",
    errno.EDQUOT: "free space within your quota",
    errno.EFBIG: "raise the file-size limit (ulimit -f)",
    errno.EROFS: "make the file system writable or choose another output directory",
}
# Libraries that write through their own code say the cause in words only: safetensors (Rust) "No space left
# on device (os error 28)", SQLite "database or disk is full" (ENOSPC; it reports EFBIG / EDQUOT / EROFS only
# as "disk I/O error" or "attempt to write a readonly database"), pyarrow "[errno 28] ...".
_CAUSE_TEXT = [(code, re.compile(re.escape(os.strerror(code)), re.I)) for code in DISK_ERRORS]
_CAUSE_TEXT.append((errno.ENOSPC, re.compile(r"database or disk is full", re.I)))
_CAUSE_TEXT += [(code, re.compile(rf"\b(?:os error|errno) {code}\b", re.I)) for code in DISK_ERRORS]
LOW_SPACE = 1 << 20  # less free than this after a failed write: the file system is full

# A place the output cannot be written to, no disk full: errno's words for each, the start of the error line.
# Only a failure of a call on the output's own path (the output, a directory above it, a file under it, its
# temporary sibling) is one: a writer that cannot *read* its input (ENOENT, EACCES) has another error.
PLACE_ERRORS = {
    errno.EACCES: "permission denied",
    errno.EPERM: "operation not permitted",
    errno.ENOTDIR: "not a directory",
    errno.ENOENT: "no such directory",
}


def _fs_cause(path: Path) -> int | None:
    """What the file system of ``path`` says about a write that just failed with no cause given (torch.save
    says only "file write failed"): mounted read-only, full, or a file under ``path`` at the process's
    file-size limit. None when it is none of these (then the failure was something else)."""
    d = Path(path)
    while not d.is_dir() and d.parent != d:
        d = d.parent
    try:
        st = os.statvfs(d)
    except OSError:
        return None
    if st.f_blocks == 0:  # /proc, /sys: no blocks to be full of (they answer 0 free)
        return None
    if st.f_flag & os.ST_RDONLY:
        return errno.EROFS
    free = (st.f_bfree if os.geteuid() == 0 else st.f_bavail) * st.f_frsize  # root may use the reserve
    if free < LOW_SPACE:
        return errno.ENOSPC
    limit = resource.getrlimit(resource.RLIMIT_FSIZE)[0]
    if limit != resource.RLIM_INFINITY:
        files = [Path(path)] if Path(path).is_file() else Path(path).rglob("*")
        with contextlib.suppress(OSError):
            if any(f.is_file() and f.stat().st_size >= limit for f in files):
                return errno.EFBIG
    return None


def _chain(e: BaseException) -> Iterator[BaseException]:
    """``e`` and its causes and contexts, each once."""
    seen: set[int] = set()
    x: BaseException | None = e
    while x is not None and id(x) not in seen:
        seen.add(id(x))
        yield x
        x = x.__cause__ or x.__context__


def disk_errno(e: BaseException, where: Path | str | None = None) -> int | None:
    """The errno of :data:`DISK_ERRORS` behind ``e``, or None: an ``OSError`` in its chain, the cause in the
    words of a library's message, or (``where`` given: the partial file or directory of the failed write) the
    file system's state, asked only when nothing in the chain says why (a place error says it: /proc's ENOENT
    is no full disk, though /proc answers 0 bytes free)."""
    stated = False
    for x in _chain(e):
        if isinstance(x, OSError) and x.errno in DISK_ERRORS:
            return x.errno
        for code, pattern in _CAUSE_TEXT:
            if pattern.search(str(x)):
                return code
        stated = stated or (isinstance(x, OSError) and x.errno in PLACE_ERRORS)
    return _fs_cause(Path(where)) if where is not None and not stated else None


def _existing(path: Path) -> Path:
    """``path``, or the nearest of its parents that exists."""
    while not path.exists() and path.parent != path:
        path = path.parent
    return path


def _place_error(e: BaseException, path: Path, where: Path | str | None) -> MultimsdError | None:
    """The line of :data:`PLACE_ERRORS` for a write of ``path`` (its partial file or directory: ``where``) that
    failed at ``path``'s own place; None when no ``OSError`` of the chain is one about that place."""
    out = path.absolute()
    partial = Path(where).absolute() if where is not None else out
    x = next(
        (
            x
            for x in _chain(e)
            if isinstance(x, OSError)
            and x.errno in PLACE_ERRORS
            and isinstance(x.filename, (str, bytes, os.PathLike))
        ),
        None,
    )
    if x is None:
        return None
    failed = Path(os.fsdecode(x.filename)).absolute()
    sibling = failed.parent == out.parent and failed.name.startswith(f".{out.name}.")  # temporary_prefix's
    if not (
        out.is_relative_to(failed) or failed.is_relative_to(out) or failed.is_relative_to(partial) or sibling
    ):
        return None
    there = _existing(failed)
    if there.is_relative_to(partial) and partial != out:  # a temporary name means nothing once it is removed
        there = out
    if x.errno == errno.ENOTDIR:
        why = f"{there} is a file"
    elif x.errno == errno.ENOENT:
        # The directory is there and still refused a new entry (/proc), or one went while the output was written.
        why = f"{there} takes no new files" if there == failed.parent else "a directory was removed meanwhile"
    else:
        why = f"{'no write permission on' if x.errno == errno.EACCES else 'not permitted on'} {there}"
    return MultimsdError(f"{PLACE_ERRORS[x.errno]} writing {path} ({why}: choose another output directory)")


def write_error(
    e: BaseException, path: Path | str | None = None, where: Path | str | None = None
) -> MultimsdError | None:
    """The one-line error, naming the output and the cause, for a write of the output ``path`` that failed for
    want of space (or a limit, or a read-only file system: :data:`DISK_ERRORS`) or, ``path`` given, at a place
    that cannot be written (:data:`PLACE_ERRORS`); None when ``e`` is another failure. ``path``: the output the
    user knows (a temporary file's name would mean nothing once it is removed); ``where``: the partial file or
    directory (default ``path``), for :func:`disk_errno`."""
    code = disk_errno(e, where if where is not None else path)
    if code is None:
        return _place_error(e, Path(path), where) if path is not None else None
    target = path if path is not None else getattr(e, "filename", None)
    return MultimsdError(
        f"{os.strerror(code).lower()} writing {target or 'an output'} "
        f"({DISK_ERRORS[code]} and run the same command to continue)"
    )


@contextlib.contextmanager
def writing(path: Path | str, where: Path | str | None = None) -> Iterator[None]:
    """Around the writing of the output ``path`` (its partial file or directory: ``where``): a failure for want
    of space, a file-size limit, a read-only file system or a place that cannot be written becomes
    :func:`write_error`'s one line; other failures pass unchanged. The block is inside the writer's clean-up, so
    the file system is asked while the partial file still fills it; the writer then removes it."""
    try:
        yield
    except MultimsdError:
        raise
    except Exception as e:
        err = write_error(e, path, where)
        if err is None:
            raise
        raise err from e


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


def _owner() -> str:
    """This process's host and PID namespace: where its process id means something."""
    try:
        namespace = os.stat("/proc/self/ns/pid").st_ino
    except OSError:  # no /proc: process ids of other processes are not judged
        namespace = 0
    return f"{socket.gethostname()}.{namespace}"


def temporary_prefix(name: str, kind: str = "tmp") -> str:
    """``.NAME.tmp-HOST.NS-PID-``: the name of a temporary sibling of ``NAME`` says which process writes it, so
    that one left by a killed process can be told from one in use (:func:`remove_dead_temporaries`)."""
    return f".{name}.{kind}-{_owner()}-{os.getpid()}-"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # EPERM: another user's process, alive
        return True
    return True


def remove_dead_temporaries(directory: Path, name: str) -> None:
    """Remove the temporary siblings of ``name`` (files or directories, :func:`temporary_prefix`) whose writer
    has died: a SIGKILL or an OOM kill leaves them, since no clean-up runs, and repeated kills would pile up
    partial outputs. Only those of this host and PID namespace are judged (its process ids are ours to check);
    a live writer's, another machine's on a shared file system, or another container's stay."""
    if _owner().endswith(".0"):
        return
    for kind in ("tmp", "old"):
        prefix = f".{name}.{kind}-{_owner()}-"
        for p in directory.glob(glob.escape(prefix) + "*"):
            pid = p.name[len(prefix) :].split("-", 1)[0]
            if pid.isdigit() and int(pid) != os.getpid() and not _alive(int(pid)):
                with contextlib.suppress(OSError):
                    if p.is_dir() and not p.is_symlink():
                        shutil.rmtree(p)
                    else:
                        p.unlink()


@contextlib.contextmanager
def atomic_directory(out: Path) -> Iterator[Path]:
    """Yield a temporary sibling of ``out`` to fill; on success it replaces ``out`` in two renames.

    On any failure (an interrupt too) the temporary directory is removed and an earlier ``out`` is left as it
    was, so a crash never leaves a half-written output where a reader expects a complete one. A full disk is
    :func:`writing`'s one line, naming ``out``. What a killed writer of ``out`` left is removed first.
    """
    with writing(out):
        out.parent.mkdir(parents=True, exist_ok=True)
        remove_dead_temporaries(out.parent, out.name)
        tmp = Path(tempfile.mkdtemp(prefix=temporary_prefix(out.name), dir=out.parent))
    try:
        with writing(out, tmp):
            yield tmp
            # mkdtemp's 0700 (and 0600 files saved through temp files) would follow it into place
            share_modes(tmp)
            # The swap is two renames: an interrupt (Ctrl-C, SIGTERM) waits until both are done.
            with interrupts.deferred():
                old = None
                if out.exists():
                    old = out.parent / f"{temporary_prefix(out.name, 'old')}0"
                    os.replace(out, old)
                os.replace(tmp, out)
                if old is not None:
                    shutil.rmtree(old, ignore_errors=True)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


def check_writable_dir(path: Path | str, what: str, aside: bool = False) -> None:
    """Fail now, in one line, if the directory ``path`` could not be created or written later.

    Called at the start of a stage so that an impossible output location (``/proc/...``, a path under a regular
    file, a read-only mount) is reported before minutes of work, not as a traceback at the end. Nothing is
    created: the nearest existing ancestor is probed with a temporary file that is removed at once. (Permission
    bits alone would not do: root passes every mode check and still cannot write ``/proc`` or a read-only mount.)
    ``aside``: ``path`` is written beside itself and renamed into place (:func:`atomic_directory`), so its parent
    is what must take new entries, whether ``path`` exists or not.
    """
    path = Path(path).absolute()
    probe = path.parent if aside else path
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
    power cut once this returns (the studio's gold file, rebuilt after every acknowledged action). A full
    disk is :func:`writing`'s one line, naming ``path``; the temporary file is removed."""
    with writing(path):
        path.parent.mkdir(parents=True, exist_ok=True)
        remove_dead_temporaries(path.parent, path.name)  # a killed writer's
        fd, tmp = tempfile.mkstemp(prefix=temporary_prefix(path.name), dir=path.parent)
    try:
        with writing(path, tmp):
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(text)
                if durable:
                    f.flush()
                    os.fsync(f.fileno())
            # mkstemp's 0600 would hide results from the rest of a group
            os.chmod(tmp, 0o666 & ~current_umask())
            os.replace(tmp, path)
            if durable:
                fsync_dir(path.parent)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_json_atomic(path: Path, data: Any) -> None:
    """Write JSON to a temporary sibling, fsync it, then rename: a reader sees the old file or the whole new one."""
    write_text_atomic(path, json.dumps(data, indent=1, ensure_ascii=False, default=str), durable=True)
