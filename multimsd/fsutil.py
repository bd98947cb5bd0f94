"""Atomic output directories: write everything aside, then swap it into place."""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

from multimsd.errors import MultimsdError


def check_replaceable(out: Path, marker: str, what: str) -> None:
    """Refuse to replace ``out`` unless it is absent, empty, or an earlier output of ours (has ``marker``)."""
    if out.exists() and (not out.is_dir() or (any(out.iterdir()) and not (out / marker).exists())):
        raise MultimsdError(f"{out} exists and is not {what}; refusing to overwrite it")


@contextlib.contextmanager
def atomic_directory(out: Path) -> Iterator[Path]:
    """Yield a temporary sibling of ``out`` to fill; on success it replaces ``out`` in two renames.

    On any failure the temporary directory is removed and an earlier ``out`` is left as it was, so a
    crash never leaves a half-written output where a reader expects a complete one.
    """
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.tmp-", dir=out.parent))
    try:
        yield tmp
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
