"""Document-level train/validation/test split (MultiMSD section 5.1): one rule, one config, every stage.

The nine language versions of an article are translations of each other, so a sentence-level random split
would put translations of one test sentence into the training data of the multilingual model. The split is
therefore made once over *document ids* (article ids), and every language uses the same assignment.

The rule is configured by :class:`SplitConfig` wherever pairs are split by document, with the same keys and
defaults: align.py's ``split.*``, ``multimsd run``'s ``pairs.split.*`` (an already aligned corpus) and
train.py's ``data.split.*`` (a pair file without a split column). The same ids, settings and seed give the
same assignment on every path.
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from multimsd.errors import MultimsdError

SPLITS = ("train", "validation", "test")
FIELDS = ("validation", "test", "max_fraction", "seed")  # SplitConfig's, the same keys on every path


@dataclass
class SplitConfig:
    """How pairs are split by document (an article of align.py, a document id of a pair corpus)."""

    # Documents (article ids) held out for validation and for test: the paper's 128 + 128 article pairs.
    validation: int = 128
    test: int = 128
    # ... each at most this fraction of the documents (rounded, at least one each), so a small corpus keeps
    # most of its documents for training. Fewer than 3 documents: all of them are training data.
    max_fraction: float = 0.1
    # Which documents: the ids are shuffled with this seed (the assignment ignores the order of the input).
    seed: int = 42


def check_split_config(cfg: Any, key: str = "split") -> None:
    """One ``MultimsdError`` line naming the key (``pairs.split.max_fraction=1.5: …``) for a bad setting."""
    for name in ("validation", "test"):
        n = getattr(cfg, name)
        if isinstance(n, bool) or not isinstance(n, int) or n < 0:
            raise MultimsdError(f"{key}.{name}={n}: a number of documents, must be an integer >= 0")
    f = cfg.max_fraction
    if isinstance(f, bool) or not isinstance(f, (int, float)) or not (math.isfinite(f) and 0 < f <= 1):
        raise MultimsdError(
            f"{key}.max_fraction={f}: the share of the documents each held-out split may take, must be in (0, 1]"
        )
    if isinstance(cfg.seed, bool) or not isinstance(cfg.seed, int):
        raise MultimsdError(f"{key}.seed={cfg.seed}: must be an integer")


def split_article_ids(
    article_ids: Iterable[str],
    config: SplitConfig | Mapping | Any | None = None,
    *,
    key: str = "split",
    **fields: Any,
) -> dict[str, str]:
    """Map each document id to "train", "validation" or "test" by ``config`` (a :class:`SplitConfig`, or a
    config node with its fields; None = the defaults). Keyword ``fields`` override single settings
    (``split_article_ids(ids, validation=4, test=4, max_fraction=0.5, seed=7)``); ``key`` names the setting in
    an error message.

    Validation and test get ``validation``/``test`` ids each (the paper's 128), capped at ``max_fraction`` of
    the ids (at least one each) so a small corpus keeps most of its documents for training. Fewer than 3 ids:
    everything is training data. Deterministic for a given id set and seed, independent of input order.
    """
    base = config if config is not None else SplitConfig()
    settings = {name: fields.pop(name, _get(base, name)) for name in FIELDS}
    if fields:
        raise TypeError(f"split_article_ids: unknown setting(s) {', '.join(sorted(fields))}")
    cfg = SplitConfig(**settings)
    check_split_config(cfg, key)
    ids = sorted(set(article_ids))
    n = len(ids)
    if n < 3:
        return dict.fromkeys(ids, "train")
    cap = max(1, round(n * cfg.max_fraction))
    n_valid, n_test = min(cfg.validation, cap), min(cfg.test, cap)
    random.Random(cfg.seed).shuffle(ids)
    assignment = {}
    for k, article_id in enumerate(ids):
        if k < n_valid:
            assignment[article_id] = "validation"
        elif k < n_valid + n_test:
            assignment[article_id] = "test"
        else:
            assignment[article_id] = "train"
    return assignment


def _get(cfg: Any, name: str) -> Any:
    return cfg[name] if isinstance(cfg, Mapping) else getattr(cfg, name)
