"""What a run remembers about its stages: a fingerprint of each stage's resolved config, and the files it wrote.

``<run>/.stages/<stage>.json`` is written (atomically) when a stage finishes: its fingerprint (a hash of the
stage's resolved config and of the fingerprints of the stages it reads from, so a change upstream re-runs
everything downstream), its seconds, and a manifest of its output files (size + sha256). A re-run skips a
stage only when the fingerprint is unchanged **and** every listed file is still there with the same bytes:
a truncated or edited output is reported and the stage runs again; nothing is trusted on its name alone.

``<run>/.stages/<stage>.started.json`` holds the fingerprint of a stage that began and did not finish. The
same fingerprint on the next run means: continue (the training stage resumes from its last checkpoint);
another one means the partial outputs belong to another config and are removed first.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
from pathlib import Path
from typing import Any

from multimsd.fsutil import write_json_atomic  # noqa: F401  (re-exported: the pipeline writes its records with it)

logger = logging.getLogger(__name__)

STAGES_DIR = ".stages"


def inside(config: Any, root: Path) -> Any:
    """``config`` with every path inside ``root`` written from it (``<run>/align``), so that a run directory
    moved or copied elsewhere keeps its stages' fingerprints (its stage configs hold absolute paths)."""
    prefix = str(root)
    if isinstance(config, str) and (config == prefix or config.startswith(prefix + os.sep)):
        return "<run>" + config[len(prefix) :]
    if isinstance(config, dict):
        return {k: inside(v, root) for k, v in config.items()}
    if isinstance(config, (list, tuple)):
        return [inside(v, root) for v in config]
    return config


def fingerprint(config: Any, *upstream: str, root: Path | None = None) -> str:
    """sha256 of a stage's resolved config (JSON, sorted keys; paths inside ``root``, the run directory, written
    from it) and its upstream stages' fingerprints."""
    if root is not None:
        config = inside(config, root)
    h = hashlib.sha256(json.dumps(config, sort_keys=True, default=str).encode())
    for up in upstream:
        h.update(up.encode())
    return h.hexdigest()


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def manifest(root: Path, skip: tuple[str, ...] = ()) -> dict[str, list]:
    """Every regular file under ``root`` (relative path -> [size, sha256]), minus the top-level names in ``skip``."""
    out = {}
    for p in sorted(root.rglob("*")):
        rel = p.relative_to(root)
        if p.is_file() and not p.is_symlink() and rel.parts[0] not in skip:
            out[rel.as_posix()] = [p.stat().st_size, sha256_file(p)]
    return out


def read_json(path: Path) -> Any | None:
    """The JSON in ``path``, or None when it is missing or not valid JSON (a torn write of an older version)."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


class StageRecords:
    """The ``.stages/`` directory of one run."""

    def __init__(self, run_dir: Path) -> None:
        self.dir = run_dir / STAGES_DIR

    def _path(self, stage: str, suffix: str = "") -> Path:
        return self.dir / f"{stage.replace('/', '__')}{suffix}.json"

    def done(self, stage: str, fp: str, outputs: Path, skip: tuple[str, ...] = ()) -> bool:
        """True when ``stage`` finished with fingerprint ``fp`` and its outputs are intact."""
        rec = read_json(self._path(stage))
        if not rec or rec.get("fingerprint") != fp:
            return False
        for rel, (size, digest) in rec.get("files", {}).items():
            p = outputs / rel
            if not p.is_file() or p.stat().st_size != size or sha256_file(p) != digest:
                logger.warning(
                    "%s: %s is missing or changed since the stage finished: running it again", stage, p
                )
                return False
        return True

    def started(self, stage: str) -> str | None:
        rec = read_json(self._path(stage, ".started"))
        return rec.get("fingerprint") if rec else None

    def mark_started(self, stage: str, fp: str) -> None:
        self._path(stage).unlink(missing_ok=True)  # no longer finished: its outputs are about to change
        write_json_atomic(self._path(stage, ".started"), {"fingerprint": fp})

    def mark_done(
        self, stage: str, fp: str, outputs: Path, seconds: float, skip: tuple[str, ...] = ()
    ) -> None:
        files = manifest(outputs, skip) if outputs.is_dir() else {}
        write_json_atomic(self._path(stage), {"fingerprint": fp, "seconds": seconds, "files": files})
        self._path(stage, ".started").unlink(missing_ok=True)

    def finished(self) -> list[str]:
        """The stages recorded as finished, by name (``train/NAME`` for a system)."""
        if not self.dir.is_dir():
            return []
        names = (p.name[: -len(".json")] for p in self.dir.glob("*.json"))
        return sorted(n.replace("__", "/") for n in names if not n.endswith(".started"))

    def after_a_failure(self, interrupted: bool) -> None:
        """A run directory the failed command created: removed when no stage finished (bad input found by a
        stage leaves nothing behind, as the stage's own command does); kept, and said so, when some did (the
        same command continues from them). An interrupt's own line already says what is kept."""
        run_dir = self.dir.parent
        finished = self.finished()
        if not finished:
            shutil.rmtree(run_dir, ignore_errors=True)
        elif not interrupted:
            logger.warning(
                "kept %s: the finished stage(s) %s; the same command skips them", run_dir, ", ".join(finished)
            )

    def seconds(self, stage: str) -> float | None:
        rec = read_json(self._path(stage))
        return rec.get("seconds") if rec else None
