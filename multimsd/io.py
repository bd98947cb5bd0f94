"""Reading article pairs: JSONL files, datasets saved with ``save_to_disk``, or Hub datasets.

Every record is validated on the way in, and a problem is reported as one :class:`MultimsdError` line that
says where it is (file and line), because a half-read corpus that aligns silently is worse than no corpus.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass, field
from pathlib import Path

from multimsd import LANGUAGES
from multimsd.errors import MultimsdError
from multimsd.paths import sample_data_dir

REQUIRED_KEYS = ("article_id", "lang", "complex", "simple")


@dataclass
class ArticlePair:
    """One professional ("complex") / consumer ("simple") article pair in one language.

    Each side is raw text (to be segmented) or a list of sentences (used as given).
    """

    article_id: str
    lang: str
    complex: str | list[str]
    simple: str | list[str]
    extra: dict = field(default_factory=dict)


def sample_articles_path() -> Path:
    return sample_data_dir() / "articles.jsonl"


def _check_side(value, where: str, side: str) -> str | list[str]:
    if isinstance(value, str):
        if not value.strip():
            raise MultimsdError(f"{where}: empty {side} side")
        return value
    if isinstance(value, list | tuple):
        if not all(isinstance(s, str) for s in value):
            raise MultimsdError(f"{where}: {side} must be a string or a list of strings")
        if not any(s.strip() for s in value):
            raise MultimsdError(f"{where}: empty {side} side")
        return list(value)
    raise MultimsdError(f"{where}: {side} must be a string or a list of strings, got {type(value).__name__}")


def record_to_pair(rec: dict, where: str) -> ArticlePair:
    """Validate one record (a dict with article_id, lang, complex, simple) into an :class:`ArticlePair`."""
    if not isinstance(rec, dict):
        raise MultimsdError(f"{where}: expected a JSON object, got {type(rec).__name__}")
    missing = [k for k in REQUIRED_KEYS if k not in rec or rec[k] is None]
    if missing:
        raise MultimsdError(f"{where}: missing field(s) {', '.join(missing)}")
    lang = str(rec["lang"])
    if lang not in LANGUAGES:
        raise MultimsdError(f"{where}: unknown language code {lang!r} (supported: {', '.join(LANGUAGES)})")
    article_id = str(rec["article_id"])
    if not article_id.strip():
        raise MultimsdError(f"{where}: empty article_id")
    where = f"{where} (article {article_id!r}, {lang})"
    extra = {k: v for k, v in rec.items() if k not in REQUIRED_KEYS}
    return ArticlePair(
        article_id=article_id,
        lang=lang,
        complex=_check_side(rec["complex"], where, "complex"),
        simple=_check_side(rec["simple"], where, "simple"),
        extra=extra,
    )


def read_jsonl(path: str | Path) -> list[dict]:
    """Read a JSONL file strictly: UTF-8 only, one JSON object a line, blank lines skipped."""
    path = Path(path)
    if not path.is_file():
        raise MultimsdError(f"input file not found: {path}")
    raw = path.read_bytes()
    records = []
    for lineno, line in enumerate(raw.split(b"\n"), start=1):
        try:
            text = line.decode("utf-8")
        except UnicodeDecodeError as e:
            raise MultimsdError(f"{path}:{lineno}: not valid UTF-8 (byte {e.start} of the line)") from None
        if not text.strip():
            continue
        try:
            records.append((lineno, json.loads(text)))
        except json.JSONDecodeError as e:
            raise MultimsdError(f"{path}:{lineno}: malformed JSON ({e.msg}, column {e.colno})") from None
    if not records:
        raise MultimsdError(f"{path}: no records")
    return records


def load_article_pairs(path: str | Path | None = None, hub_split: str = "train") -> list[ArticlePair]:
    """Load article pairs from a JSONL file, a saved dataset directory, a Hub id, or (None) the sample."""
    if path is None:
        path = sample_articles_path()
    p = Path(str(path)).expanduser()
    if p.is_file():
        return [record_to_pair(rec, f"{p}:{lineno}") for lineno, rec in read_jsonl(p)]
    if p.is_dir():
        return _pairs_from_dataset(load_saved_split(p, hub_split, "; set data.hub_split"), str(p))
    if str(path).endswith((".jsonl", ".json")) or str(path).startswith((".", "/", "~")) or p.suffix:
        raise MultimsdError(f"input file not found: {path}")
    return _pairs_from_dataset(_load_hub(str(path), hub_split), str(path))


def load_saved(p: Path):
    """A Dataset or DatasetDict saved with ``save_to_disk``; anything else is one error line."""
    import datasets

    datasets.disable_progress_bars()
    try:
        return datasets.load_from_disk(str(p))
    except Exception as e:  # datasets raises several types for "not a dataset directory"
        raise MultimsdError(f"{p}: not a dataset saved with save_to_disk ({type(e).__name__})") from None


def load_saved_split(p: Path, split: str, hint: str = ""):
    """One split of a dataset saved with ``save_to_disk`` (a plain Dataset is returned as it is).

    ``hint`` is appended to the missing-split error (e.g. which option chooses the split).
    """
    import datasets

    ds = load_saved(p)
    if isinstance(ds, datasets.DatasetDict):
        if split not in ds:
            raise MultimsdError(f"{p}: no split {split!r} (has {', '.join(ds)}){hint}")
        ds = ds[split]
    return ds


def _load_hub(repo_id: str, split: str):
    """The Hub dataset ``repo_id``; a name that is no local path is tried there only when the Hub can answer or
    the dataset is in the local cache, so a mistyped path is one line in seconds, not minutes of retries."""
    import datasets

    if not in_hub_cache(repo_id, "dataset"):
        if hub_offline_requested():
            why = "HF_HUB_OFFLINE=1 is set"
        elif not hub_reachable():
            why = f"the Hugging Face Hub ({hub_address()[0]}) is unreachable"
        else:
            why = None
        if why:
            raise MultimsdError(
                f"cannot load dataset {repo_id!r}: no such file or directory here, not in the Hugging Face "
                f"cache, and {why}"
            )
    try:
        return datasets.load_dataset(repo_id, split=split)
    except Exception as e:
        raise MultimsdError(
            f"cannot load dataset {repo_id!r} ({type(e).__name__}): not a local file or directory, and the "
            f"Hugging Face Hub is unreachable or has no such dataset"
        ) from None


def _pairs_from_dataset(ds, name: str) -> list[ArticlePair]:
    missing = [k for k in REQUIRED_KEYS if k not in ds.column_names]
    if missing:
        raise MultimsdError(f"{name}: dataset lacks column(s) {', '.join(missing)}")
    if len(ds) == 0:
        raise MultimsdError(f"{name}: dataset has no rows")
    return [record_to_pair(rec, f"{name} row {i}") for i, rec in enumerate(ds)]


def check_languages(langs: list[str]) -> list[str]:
    bad = [lang for lang in langs if lang not in LANGUAGES]
    if bad:
        raise MultimsdError(f"unknown language code(s) {', '.join(bad)} (supported: {', '.join(LANGUAGES)})")
    if not langs:
        raise MultimsdError("data.languages is empty")
    return list(langs)


HUB_PROBE_SECONDS = 3.0
"""The most :func:`hub_reachable` waits for the Hub (name lookup and connection together)."""


def hub_offline_requested() -> bool:
    """``HF_HUB_OFFLINE`` (or transformers' older ``TRANSFORMERS_OFFLINE``) is set to a true value."""
    import os

    values = (os.environ.get(v, "") for v in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"))
    return any(v.strip().upper() in ("1", "ON", "YES", "TRUE") for v in values)


def hub_address() -> tuple[str, int]:
    """Where a connection to the Hub goes: the ``HF_ENDPOINT`` host (default huggingface.co), or the HTTPS
    proxy of the environment (``https_proxy``, unless ``no_proxy`` exempts the host)."""
    import os
    from urllib.parse import urlparse
    from urllib.request import getproxies, proxy_bypass

    url = urlparse(os.environ.get("HF_ENDPOINT") or "https://huggingface.co")
    scheme = url.scheme or "https"
    host, port = url.hostname or "huggingface.co", url.port or (443 if scheme == "https" else 80)
    proxy = getproxies().get(scheme)
    if proxy and not proxy_bypass(host):
        p = urlparse(proxy if "://" in proxy else f"http://{proxy}")
        if p.hostname:
            host, port = p.hostname, p.port or (443 if p.scheme == "https" else 80)
    return host, port


def hub_reachable(timeout: float = HUB_PROBE_SECONDS) -> bool:
    """Whether the Hugging Face Hub can be reached, so an offline machine fails in seconds, not after minutes
    of retries: False at once under ``HF_HUB_OFFLINE=1``; otherwise one TCP connection to the endpoint (or the
    proxy), the name lookup included, bounded by ``timeout`` seconds and remembered for the process."""
    if hub_offline_requested():
        return False
    return _connects(*hub_address(), timeout)


@functools.cache
def _connects(host: str, port: int, timeout: float) -> bool:
    import socket
    import threading

    answer: list[bool] = []

    def probe() -> None:
        try:
            socket.create_connection((host, port), timeout=timeout).close()
            answer.append(True)
        except (OSError, UnicodeError):
            answer.append(False)

    # In a thread: a name lookup that hangs is not bounded by the socket timeout.
    thread = threading.Thread(target=probe, name="multimsd-hub-probe", daemon=True)
    thread.start()
    thread.join(timeout)
    return bool(answer and answer[0])


def looks_like_path(name: str) -> bool:
    """A filesystem path rather than a Hub id: absolute, starting with ``.`` or ``~``, more than one ``/``."""
    return name.startswith(("/", ".", "~")) or name.count("/") > 1 or "\\" in name


def in_hub_cache(repo_id: str, repo_type: str = "model") -> bool:
    """Whether a snapshot of the model (or dataset) ``repo_id`` was downloaded into the local Hugging Face
    cache."""
    try:
        from huggingface_hub import constants
        from huggingface_hub.file_download import repo_folder_name

        snapshots = Path(constants.HF_HUB_CACHE) / repo_folder_name(repo_id=repo_id, repo_type=repo_type)
        snapshots = snapshots / "snapshots"
        return snapshots.is_dir() and any(snapshots.iterdir())
    except (ImportError, OSError, ValueError):
        return False


def model_unavailable(model: str, offline_choice: str) -> str | None:
    """Why the model ``model`` (a local directory or a Hub id) cannot be loaded here, or None when it can be
    tried: an existing path, a Hub id already in the local Hugging Face cache, or a Hub that answers.

    Decided before any download is attempted (so without huggingface_hub's retries): a path that does not
    exist, or a Hub id that is neither cached nor reachable (``HF_HUB_OFFLINE=1``, no network). The reason
    ends with what to do instead, ``offline_choice`` being the setting that works offline.
    """
    if Path(model).expanduser().exists():
        return None
    if looks_like_path(model):
        return "no such file or directory"
    if in_hub_cache(model):
        return None
    if hub_offline_requested():
        why = "HF_HUB_OFFLINE=1 is set"
    elif not hub_reachable():
        why = f"the Hugging Face Hub ({hub_address()[0]}) is unreachable"
    else:
        return None
    return (
        f"neither a local directory nor in the Hugging Face cache, and {why}. Download it where the Hub is "
        f"reachable (hf download {model}), or use {offline_choice}"
    )


# ---------------------------------------------------------------------------------------------- sentence pairs
def looks_like_hub_id(path: str) -> bool:
    """``owner/name``: exactly one slash, no file suffix, not a relative or absolute path."""
    parts = path.split("/")
    return len(parts) == 2 and all(parts) and not path.startswith((".", "~")) and not Path(path).suffix


def read_tsv(path: str | Path, bad_lines: list[int] | None = None) -> list[tuple[int, dict]]:
    """A UTF-8 TSV file with a header row, strictly: ``(line number, {column: value})`` per data row.

    Quotes are ordinary characters (sentences contain them). A row whose field count differs from the
    header's (a stray tab inside a sentence, a truncated line) is an error that names its line, because
    shifting the columns of one row would silently pair a sentence with the wrong text -- unless the caller
    passes a ``bad_lines`` list: such rows are then left out and their line numbers appended to it.
    """
    path = Path(path)
    if not path.is_file():
        raise MultimsdError(f"input file not found: {path}")
    try:
        text = path.read_bytes().decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as e:
        raise MultimsdError(f"{path}: not valid UTF-8 (byte {e.start})") from None
    lines = [(k, line.removesuffix("\r")) for k, line in enumerate(text.split("\n"), start=1)]
    lines = [(k, line) for k, line in lines if line.strip()]
    if not lines:
        raise MultimsdError(f"{path}: empty file")
    header = lines[0][1].split("\t")
    rows = []
    for lineno, line in lines[1:]:
        fields = line.split("\t")
        if len(fields) != len(header):
            if bad_lines is not None:
                bad_lines.append(lineno)
                continue
            raise MultimsdError(
                f"{path}:{lineno}: {len(fields)} tab-separated fields, the header has {len(header)}"
            )
        rows.append((lineno, dict(zip(header, fields))))
    if not rows:
        raise MultimsdError(f"{path}: no records")
    return rows


def load_pair_records(path: str | Path, what: str = "sentence pairs") -> dict[str | None, list[dict]]:
    """Sentence-pair records from any of the formats every stage accepts, as ``{split: rows}``.

    * a JSONL file (one object a line) or a TSV file with a header row -> ``{None: rows}``;
    * a directory saved with ``save_to_disk``: a DatasetDict -> one entry per split; a Dataset -> ``{None: …}``;
    * a Hub dataset id ``owner/name`` (what ``align.py output.push_to_hub=true`` writes) -> one entry per split.

    Rows are plain dicts with whatever columns the source has; each stage checks the columns it needs.
    """
    p = Path(str(path)).expanduser()
    if p.is_dir():
        import datasets

        ds = load_saved(p)
        if isinstance(ds, datasets.DatasetDict):
            return {split: d.to_list() for split, d in ds.items()}
        return {None: ds.to_list()}
    if p.is_file():
        if p.suffix == ".tsv":
            return {None: [r for _, r in read_tsv(p)]}
        return {None: [r for _, r in read_jsonl(p)]}
    if looks_like_hub_id(str(path)):
        import datasets

        try:
            dsd = datasets.load_dataset(str(path))
        except Exception as e:  # offline, no such repo, gated: report the type, never a token
            hint = (
                "the Hugging Face Hub is unreachable" if not hub_reachable() else "no such dataset on the Hub"
            )
            raise MultimsdError(
                f"{what} {str(path)!r} is not a local file or directory, and {hint} ({type(e).__name__})"
            ) from None
        return {split: d.to_list() for split, d in dsd.items()}
    raise MultimsdError(f"{what} not found: {p}")
