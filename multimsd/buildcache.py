"""Cached, atomic builds of derived model directories (offline models rebuilt from wheels).

A build fills a temporary sibling directory, writes a marker (:data:`MARKER`, recording what it was built
from) last, and is renamed into place only when complete, so a crash never leaves a directory that would
load; a directory counts as built only when its marker matches the current sources. Builders on one machine
are serialised by a lock file (best effort: the rename protocol alone keeps builds intact).
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import importlib.util
import json
import logging
import os
import shutil
import time
import uuid
from collections.abc import Callable, Iterator
from importlib import metadata
from pathlib import Path
from typing import Any

from multimsd.errors import MultimsdError
from multimsd.fsutil import writing

logger = logging.getLogger(__name__)

MARKER = "multimsd_build.json"
STALE_TMP_SECONDS = 3600  # builds take about a minute at most; older temporary dirs are crash leftovers


def package_dir(name: str) -> Path | None:
    """Directory of an installed top-level package, found without importing it."""
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None
    if spec is None:
        return None
    if spec.submodule_search_locations:
        return Path(next(iter(spec.submodule_search_locations)))
    if spec.origin:
        return Path(spec.origin).parent
    return None


def is_valid_build(path: Path, fingerprint: dict[str, Any], required: tuple[str, ...]) -> bool:
    """A directory counts as built only if its marker matches the sources and its key files exist."""
    try:
        marker = json.loads((path / MARKER).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    if not isinstance(marker, dict) or marker.get("source") != fingerprint:
        return False
    if not all((path / f).is_file() for f in required):
        return False
    problem = _size_problem(path, marker.get("files"))
    if problem is not None:
        if problem not in _reported:  # is_valid_build runs up to three times per build: say it once
            _reported.add(problem)
            logger.warning("cached build %s is damaged (%s): building it again", path, problem)
        return False
    return True


_reported: set[str] = set()


def _file_sizes(directory: Path) -> dict[str, int]:
    return {
        p.relative_to(directory).as_posix(): p.stat().st_size
        for p in sorted(directory.rglob("*"))
        if p.is_file() and p.name != MARKER
    }


def _size_problem(path: Path, sizes: object) -> str | None:
    """A file of the marker's list that is missing or of another size: a stat per file, cheap on every load
    (unlike a hash of gigabytes of weights). Markers from before the list was kept are not checked."""
    if sizes is None:
        return None
    if not isinstance(sizes, dict):
        return f"{path / MARKER} has no valid file list"
    for rel, size in sizes.items():
        f = path / rel
        if not f.is_file():
            return f"{f} is missing"
        if f.stat().st_size != size:
            return f"{f} has {f.stat().st_size} bytes, the marker says {size}"
    return None


@contextlib.contextmanager
def build_lock(root: Path, name: str) -> Iterator[bool]:
    """Serialise builders of ``name`` on this machine (best effort); yields whether the lock is held."""
    try:
        import fcntl
    except ImportError:  # not POSIX: rely on the rename protocol only
        yield False
        return
    try:
        fh = open(root / f".{name}.lock", "a+b")  # noqa: SIM115 - held for the whole context
    except OSError:
        yield False
        return
    with fh:  # closing the file releases the lock
        try:
            try:
                fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                logger.info("waiting for another process building %s", name)
                fcntl.flock(fh, fcntl.LOCK_EX)
        except OSError:
            locked = False
        else:
            locked = True
        yield locked


def remove_stale_tmp(root: Path, name: str, min_age_s: float) -> None:
    """Delete temporary build dirs left by crashed builds (old enough that no live builder owns them)."""
    now = time.time()
    for p in root.glob(f".{name}.*"):
        if p.is_dir() and (".tmp-" in p.name or ".stale-" in p.name):
            with contextlib.suppress(OSError):
                if now - p.stat().st_mtime >= min_age_s:
                    logger.info("removing leftover %s", p)
                    shutil.rmtree(p, ignore_errors=True)


def install(
    tmp: Path, target: Path, fingerprint: dict[str, Any], required: tuple[str, ...], force: bool
) -> None:
    """Rename a finished build into place; keep a concurrent builder's valid result instead of ours."""
    for _ in range(5):
        try:
            os.replace(tmp, target)  # atomic; fails if target is a non-empty directory
            return
        except OSError:
            if not target.exists() and not target.is_symlink():
                raise
        if not force and is_valid_build(target, fingerprint, required):
            logger.info("another process finished building %s first; discarding this build", target)
            shutil.rmtree(tmp, ignore_errors=True)
            return
        force = False  # replace the old build once, but never a newer concurrent one
        trash = target.with_name(f".{target.name}.stale-{uuid.uuid4().hex[:8]}")
        with contextlib.suppress(FileNotFoundError):
            os.replace(target, trash)
        if trash.is_symlink() or trash.is_file():
            trash.unlink()
        else:
            shutil.rmtree(trash, ignore_errors=True)
    raise MultimsdError(f"could not move the built model into place at {target}")


def normalise_modes(out: Path) -> None:
    """transformers writes weights via a 0600 temp file; give every file the umask-derived mode of the rest."""
    probe = out / ".mode-probe"
    probe.touch()
    mode = probe.stat().st_mode & 0o777
    probe.unlink()
    for f in out.rglob("*"):
        if f.is_file() and f.stat().st_mode & 0o777 != mode:
            with contextlib.suppress(OSError):
                f.chmod(mode)


def versions(*dists: str) -> dict[str, str]:
    found: dict[str, str] = {}
    for dist in dists:
        with contextlib.suppress(metadata.PackageNotFoundError):
            found[dist] = metadata.version(dist)
    return found


def cached_build(
    root: Path,
    name: str,
    fingerprint: dict[str, Any],
    required: tuple[str, ...],
    write: Callable[[Path], dict[str, Any]],
    force: bool,
) -> Path:
    """Return ``root/name``, building it with ``write(tmp_dir)`` unless a build with this fingerprint exists.

    ``write`` fills the temporary directory and returns extra marker fields; the marker is written last and
    the directory renamed into place only when complete, so a crash never leaves a build that would load.
    """
    target = root / name
    if not force and is_valid_build(target, fingerprint, required):
        return target
    root.mkdir(parents=True, exist_ok=True)
    with build_lock(root, name) as exclusive:
        if not force and is_valid_build(target, fingerprint, required):  # built while we waited
            return target
        remove_stale_tmp(root, name, 0 if exclusive else STALE_TMP_SECONDS)
        logger.info("building %s once; cached at %s", name, target)
        t0 = time.perf_counter()
        tmp = root / f".{name}.tmp-{os.getpid()}-{uuid.uuid4().hex[:8]}"
        with writing(target):
            tmp.mkdir()
        try:
            # a full disk (or a file-size limit) is one line naming the build; the partial build goes
            with writing(target, tmp):
                extra = write(tmp)
                normalise_modes(tmp)
                marker = {
                    "name": name,
                    "source": fingerprint,
                    **extra,
                    # sizes, checked by is_valid_build: a truncated file forces a rebuild
                    "files": _file_sizes(tmp),
                    "built_at": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
                }
                (tmp / MARKER).write_text(json.dumps(marker, indent=2) + "\n", encoding="utf-8")
                install(tmp, target, fingerprint, required, force)
            logger.info("built %s in %.1fs", target, time.perf_counter() - t0)
        finally:
            if tmp.exists():
                shutil.rmtree(tmp, ignore_errors=True)
    return target
