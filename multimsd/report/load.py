"""Reading a run directory: ``run.json`` and the result files it names (paths relative to the run).

Everything the report needs is read here, before anything is rendered, so a missing or broken input is
reported in one line (:class:`~multimsd.errors.MultimsdError`) and never surfaces as a half-built report.
A path that ``run.json`` sets to null is an absent section; a path that is set but unreadable is an error.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from multimsd.errors import MultimsdError
from multimsd.io import read_jsonl


@dataclass
class SystemInfo:
    name: str
    kind: str
    label: str
    theta: float | None
    predictions: Path | None
    train_results: dict | None
    # the swept key and the value this system ran with ({parameter, value}); None = not swept, or a run.json
    # written before these records (its sweeps were over θ: ``theta`` holds the value)
    sweep: dict | None = None
    start: str | None = None  # kind optimise: the system it started from
    objective: str | None = None  # kind optimise: dpo | grpo


@dataclass
class Run:
    dir: Path
    meta: dict
    stats: dict | None
    gold: dict | None
    evaluation: dict
    references: list[dict] | None
    systems: dict[str, SystemInfo] = field(default_factory=dict)

    @property
    def sweep(self) -> dict | None:
        return self.meta.get("sweep") or None

    def label(self, system: str) -> str:
        info = self.systems.get(system)
        return info.label if info and info.label else system


def read_json(path: Path, what: str) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise MultimsdError(f"{what} not found: {path}") from None
    except (OSError, UnicodeDecodeError) as e:
        raise MultimsdError(f"cannot read {what} {path}: {e}") from None
    except json.JSONDecodeError as e:
        raise MultimsdError(f"{what} {path} is not valid JSON: {e}") from None


def _path(run_dir: Path, value: Any, key: str) -> Path | None:
    if value is None:
        return None
    if not isinstance(value, str) or not value:
        raise MultimsdError(f"{run_dir / 'run.json'}: {key} must be a path or null, got {value!r}")
    return run_dir / value


def _optional_json(run_dir: Path, value: Any, key: str) -> Any:
    p = _path(run_dir, value, key)
    return None if p is None else read_json(p, key)


def _sweep_record(run_dir: Path, value: Any, name: str) -> dict | None:
    if value is None:
        return None
    if not isinstance(value, dict) or not isinstance(value.get("parameter"), str) or "value" not in value:
        raise MultimsdError(
            f"{run_dir / 'run.json'}: systems.{name}.sweep must be {{parameter, value}} or null"
        )
    return value


def load_run(run_dir: Path) -> Run:
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise MultimsdError(f"run directory not found: {run_dir}")
    meta = read_json(run_dir / "run.json", "run.json")
    if not isinstance(meta, dict):
        raise MultimsdError(f"{run_dir / 'run.json'} must hold a JSON object")
    if not meta.get("evaluation"):
        raise MultimsdError(f"{run_dir / 'run.json'} names no evaluation results (key 'evaluation')")
    evaluation = _optional_json(run_dir, meta["evaluation"], "evaluation")
    if not isinstance(evaluation, dict) or not isinstance(evaluation.get("systems"), dict):
        raise MultimsdError(
            f"{run_dir / meta['evaluation']} is not an evaluation results.json (no 'systems')"
        )
    align = meta.get("align") or {}
    refs_path = _path(run_dir, meta.get("references"), "references")
    try:
        # read_jsonl reports a missing file or a bad line itself, as one line
        references = [rec for _, rec in read_jsonl(refs_path)] if refs_path else None
    except OSError as e:
        raise MultimsdError(f"cannot read references {refs_path}: {e}") from None
    systems = {}
    for name, s in (meta.get("systems") or {}).items():
        if not isinstance(s, dict):
            raise MultimsdError(f"{run_dir / 'run.json'}: systems.{name} must be an object")
        systems[name] = SystemInfo(
            name=name,
            kind=str(s.get("kind") or ""),
            label=str(s.get("label") or name),
            theta=s.get("theta"),
            predictions=_path(run_dir, s.get("predictions"), f"systems.{name}.predictions"),
            train_results=_optional_json(run_dir, s.get("train_results"), f"systems.{name}.train_results"),
            sweep=_sweep_record(run_dir, s.get("sweep"), name),
            start=s.get("start"),
            objective=s.get("objective"),
        )
    return Run(
        dir=run_dir,
        meta=meta,
        stats=_optional_json(run_dir, align.get("stats"), "align.stats"),
        gold=_optional_json(run_dir, align.get("gold"), "align.gold"),
        evaluation=evaluation,
        references=references,
        systems=systems,
    )


def read_predictions(path: Path, lang: str, expected: int) -> list[str]:
    """The ``expected`` output lines of one language; a missing file or a wrong line count is an error."""
    f = path / f"{lang}.txt"
    try:
        lines = f.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        raise MultimsdError(f"predictions not found: {f}") from None
    except (OSError, UnicodeDecodeError) as e:
        raise MultimsdError(f"cannot read predictions {f}: {e}") from None
    if len(lines) != expected:
        raise MultimsdError(f"{f} has {len(lines)} lines but the references hold {expected} {lang} rows")
    return lines
