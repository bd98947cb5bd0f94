"""Reading the evaluation stage's inputs: the reference set, every system's predictions, the baselines.

References: a directory saved with ``save_to_disk`` (``python align.py``'s output; split ``refs.split``), a
JSONL file (``complex``, ``simple`` = a string or a list of strings, ``lang``) or plain text files
(``refs.source`` + ``refs.references`` + ``refs.lang``); ``refs.path: null`` means align.py's default output
directory (composed from ``conf/align.yaml``). Predictions: see :func:`load_predictions`.

User mistakes become one-line :class:`MultimsdError` messages: missing or empty files, non-UTF-8 bytes (file and
line), prediction / reference row counts that differ (file and both counts), unknown languages or baselines.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from multimsd import LANGUAGES
from multimsd.config import EvaluateConfig
from multimsd.errors import MultimsdError
from multimsd.io import load_saved_split
from multimsd.paths import conf_dir

__all__ = ["BASELINES", "ReferenceSet", "load_predictions", "load_references", "read_lines"]

BASELINES = {"identity": "copy of the source sentence"}
"""Built-in systems, used as ``systems.<name>=@<baseline>``."""


# ---------------------------------------------------------------------------------------------- reading files
def read_lines(path: str | Path, what: str) -> list[str]:
    """Lines of a UTF-8 text file (one sentence a line; ``\\r\\n`` accepted, a final newline optional)."""
    p = Path(path).expanduser()
    if not p.exists():
        raise MultimsdError(f"{what} not found: {p}")
    if not p.is_file():
        raise MultimsdError(f"{what} is not a file: {p}")
    data = p.read_bytes()
    # Zero bytes is no rows; blank lines are rows (a model may well output nothing for a sentence).
    if not data:
        raise MultimsdError(f"{p}: empty file ({what})")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        col = e.start - (data.rfind(b"\n", 0, e.start) + 1)
        raise MultimsdError(f"{p}:{line}: not valid UTF-8 (byte {col} of the line)") from None
    lines = text.removeprefix("\ufeff").split("\n")
    if lines[-1] == "":
        lines.pop()
    return [line.removesuffix("\r") for line in lines]


def _read_jsonl(path: Path) -> list[tuple[int, Any]]:
    from multimsd.io import read_jsonl

    if path.is_file() and not path.read_bytes().strip():
        raise MultimsdError(f"{path}: empty file")
    return read_jsonl(path)


def _is_saved_dataset(p: Path) -> bool:
    return any((p / f).is_file() for f in ("dataset_dict.json", "dataset_info.json", "state.json"))


# ---------------------------------------------------------------------------------------------- references
@dataclass
class ReferenceSet:
    """The rows to evaluate: ``complex[i]`` (source), ``refs[i]`` (its references), ``lang[i]``."""

    name: str  # where it came from (for messages and results.json)
    complex: list[str]
    refs: list[list[str]]
    lang: list[str]

    def __len__(self) -> int:
        return len(self.complex)


def _check_row(where: str, complex_, simple, lang) -> tuple[str, list[str], str]:
    if not isinstance(complex_, str) or not complex_.strip():
        raise MultimsdError(f"{where}: `complex` must be a non-empty string")
    refs = [simple] if isinstance(simple, str) else simple
    if not isinstance(refs, list | tuple) or not refs or not all(isinstance(s, str) for s in refs):
        raise MultimsdError(f"{where}: `simple` must be a string or a non-empty list of strings")
    if not all(s.strip() for s in refs):
        raise MultimsdError(f"{where}: empty reference in `simple`")
    if not isinstance(lang, str) or lang not in LANGUAGES:
        raise MultimsdError(f"{where}: unknown language {lang!r} (supported: {', '.join(LANGUAGES)})")
    return complex_, list(refs), lang


def default_refs_path() -> Path:
    """align.py's default output directory, composed from ``conf/align.yaml`` (relative to the cwd)."""
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    from multimsd.config import register_configs

    register_configs()
    try:
        if GlobalHydra.instance().is_initialized():  # inside evaluate.py: conf/ is on the search path
            cfg = compose(config_name="align")
        else:
            conf = conf_dir()  # the packaged configs (the repository's conf/ in a checkout)
            if not (conf / "align.yaml").is_file():
                raise FileNotFoundError(conf / "align.yaml")
            with initialize_config_dir(str(conf), version_base="1.3"):
                cfg = compose(config_name="align")
        return Path(str(cfg.output.dir))
    except Exception as e:
        raise MultimsdError(
            f"refs.path is not set and multimsd align's default output directory cannot be determined "
            f"({type(e).__name__}); pass refs.path=<aligned dataset dir or JSONL>"
        ) from None


def load_references(cfg: EvaluateConfig) -> ReferenceSet:
    r = cfg.refs
    if r.source:
        src = read_lines(r.source, "refs.source")
        streams = [read_lines(f, "reference file") for f in r.references]
        for f, stream in zip(r.references, streams):
            if len(stream) != len(src):
                raise MultimsdError(
                    f"{f}: {len(stream)} lines but refs.source {r.source} has {len(src)} lines"
                )
        refs = [list(row) for row in zip(*streams)]
        for i, (c, rs) in enumerate(zip(src, refs), start=1):
            _check_row(f"{r.source}:{i}", c, rs, r.lang)
        return ReferenceSet(f"{r.source} (+{len(streams)} reference file(s))", src, refs, [r.lang] * len(src))

    if r.path:
        p = Path(r.path).expanduser()
    else:
        p = default_refs_path()
        if not p.exists():
            raise MultimsdError(
                f"no reference set: refs.path is not set and multimsd align's default output {p.resolve()} does not "
                "exist; "
                "run `multimsd align` first, or pass refs.path=<aligned dataset dir or JSONL>"
            )
    if p.is_dir():
        ds = load_saved_split(p, r.split, "; set refs.split")
        missing = [c for c in ("complex", "simple", "lang") if c not in ds.column_names]
        if missing:
            raise MultimsdError(f"{p}: dataset lacks column(s) {', '.join(missing)}")
        cols = ds.select_columns(["complex", "simple", "lang"]).to_dict()
        rows = [
            _check_row(f"{p} ({r.split}) row {i}", c, s, lang)
            for i, (c, s, lang) in enumerate(zip(cols["complex"], cols["simple"], cols["lang"]))
        ]
        name = f"{p} ({r.split})" if (p / "dataset_dict.json").is_file() else str(p)
    elif p.is_file():
        if p.suffix in (".txt", ".tsv"):
            raise MultimsdError(
                f"{p}: refs.path takes a saved dataset or JSONL; for plain text use "
                "refs.source=<file> refs.references=[<file>,...] refs.lang=<lang>"
            )
        rows = []
        for lineno, rec in _read_jsonl(p):
            where = f"{p}:{lineno}"
            if not isinstance(rec, dict):
                raise MultimsdError(f"{where}: expected a JSON object, got {type(rec).__name__}")
            missing = [k for k in ("complex", "simple", "lang") if k not in rec]
            if missing:
                raise MultimsdError(f"{where}: missing field(s) {', '.join(missing)}")
            rows.append(_check_row(where, rec["complex"], rec["simple"], rec["lang"]))
        name = str(p)
    else:
        raise MultimsdError(f"reference set not found: {p}")
    if not rows:
        raise MultimsdError(
            f"{p}: the reference set has no rows" + (f" in split {r.split!r}" if p.is_dir() else "")
        )
    return ReferenceSet(name, [x[0] for x in rows], [x[1] for x in rows], [x[2] for x in rows])


# ---------------------------------------------------------------------------------------------- predictions
def _count_error(name: str, where: Path | str, n_pred: int, n_ref: int, what: str = "reference rows") -> None:
    if n_pred != n_ref:
        raise MultimsdError(
            f"system {name!r}: {where} has {n_pred} predictions but there are {n_ref} {what}; "
            "predictions must be one per reference row, in the reference order"
        )


def load_predictions(
    name: str, spec: str, refs: ReferenceSet, langs: list[str], split: str = "test"
) -> tuple[list, dict]:
    """Predictions of one system, aligned with the reference rows, and a description for results.json.

    ``spec`` is ``@identity``; a text file (one line per reference row, in reference order); a directory of
    ``<lang>.txt`` files (the rows of that language, in reference order; only the evaluated languages are
    read); a JSONL file or a saved dataset (split ``split`` of a DatasetDict) with a ``prediction`` column
    (a ``lang`` column, when present, must agree with the references). Rows of languages not evaluated may
    be None.
    """
    if spec.startswith("@"):
        baseline = spec[1:]
        if baseline == "identity":
            return list(refs.complex), {"baseline": baseline, "description": BASELINES[baseline]}
        raise MultimsdError(f"systems.{name}={spec}: unknown baseline")  # caught in check_config already
    p = Path(spec).expanduser()
    if not p.exists():
        raise MultimsdError(f"system {name!r}: predictions not found: {p}")
    if p.is_dir() and not _is_saved_dataset(p):
        preds: list[str | None] = [None] * len(refs)
        for lang in langs:
            f = p / f"{lang}.txt"
            if not f.is_file():
                raise MultimsdError(
                    f"system {name!r}: {f} not found (a predictions directory holds one <lang>.txt per "
                    "evaluated language)"
                )
            lines = read_lines(f, f"predictions of system {name!r}")
            rows = [i for i, x in enumerate(refs.lang) if x == lang]
            _count_error(name, f, len(lines), len(rows), f"{lang} reference rows")
            for i, line in zip(rows, lines):
                preds[i] = line
        return preds, {"path": str(p.resolve()), "format": "directory of <lang>.txt"}
    if p.is_dir():
        ds = load_saved_split(p, split, "; set refs.split")
        if "prediction" not in ds.column_names:
            raise MultimsdError(f"system {name!r}: {p} has no `prediction` column")
        cols = ds.to_dict()
        preds = cols["prediction"]
        langs_col = cols.get("lang")
        fmt, where = "saved dataset", lambda i: f"{p} row {i}"
    elif p.suffix in (".jsonl", ".json"):
        preds, langs_col = [], []
        lines = {}
        for lineno, rec in _read_jsonl(p):
            if not isinstance(rec, dict) or "prediction" not in rec:
                raise MultimsdError(f"{p}:{lineno}: expected a JSON object with a `prediction` field")
            lines[len(preds)] = lineno
            preds.append(rec["prediction"])
            langs_col.append(rec.get("lang"))
        fmt, where = "jsonl", lambda i: f"{p}:{lines[i]}"
    else:
        preds = read_lines(p, f"predictions of system {name!r}")
        _count_error(name, p, len(preds), len(refs))
        return preds, {"path": str(p.resolve()), "format": "text"}
    _count_error(name, p, len(preds), len(refs))
    for i, (pred, ref_lang) in enumerate(zip(preds, refs.lang)):
        if not isinstance(pred, str):
            raise MultimsdError(f"{where(i)}: `prediction` must be a string, got {type(pred).__name__}")
        if langs_col and langs_col[i] is not None and langs_col[i] != ref_lang:
            raise MultimsdError(
                f"{where(i)}: lang {langs_col[i]!r} but reference row {i} is {ref_lang!r} "
                "(predictions must follow the reference order)"
            )
    return list(preds), {"path": str(p.resolve()), "format": fmt}
