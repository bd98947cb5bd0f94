"""The metric registry: every metric ``metrics.include`` may name, and what the evaluation stage needs to
know about it to score, pool, rank and tabulate it.

A :class:`Metric` is a scorer plus four facts:

* **its scorer** ``score(sources, outputs, references, *, lang, tokenizer, settings)`` -> a number (stored
  under the metric's name) or a dict of result keys. ``references`` are reference *streams*
  (``references[k][i]`` = k-th reference of sentence i), ``tokenizer`` a registered tokenizer name,
  ``settings`` the :class:`~multimsd.config.MetricsConfig` (``lowercase``, ``meteor_mode``, ...);
* **its direction**: ``higher_is_better`` (bold in the tables) and ``rankable`` (``select_by`` may name it;
  only higher-is-better metrics are);
* **how it pools over languages** (the "all" column), one of :data:`POOLING`;
* **its table columns** (:class:`Column`), and optionally a summary table of its own (``summary_table``).

The built-in metrics (sari, bleu, ter, chrf, meteor, fkgl, quality) are registered by
:mod:`multimsd.metrics.scoring`; a plugin adds one with :func:`register_metric` (see the README, "Extending
multimsd").
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from multimsd.errors import MultimsdError

__all__ = ["METRICS", "POOLING", "Column", "Metric", "get_metric", "rankable_metrics", "register_metric"]

POOLING: dict[str, str] = {
    "corpus": "rescored over the rows of all languages together, only when every language uses the same "
    "tokenizer and the same number of references (the metric counts tokens)",
    "characters": "rescored over the rows of all languages together whenever the number of references agrees "
    "(the metric works on characters, the tokenizer does not matter)",
    "weighted-mean": "sentence-weighted mean of the per-language values, only when every language uses the "
    "same tokenizer (and agrees on the metric's `agree` facts)",
    "sum": "sum over the languages that have a value",
    "never": "reported per language only",
}
"""How a metric's "all" value (several languages) is made; the key is :attr:`Metric.pooling`."""


@dataclass(frozen=True)
class Column:
    """One column of the per-language table.

    ``key`` is the result key (``a.b`` reads ``result["a"]["b"]``); ``reference`` is the per-language fact
    shown in the *source* / *reference* rows, ``{side}`` being ``source`` or ``reference`` (e.g.
    ``fkgl_{side}``); None leaves those cells empty.
    """

    header: str
    key: str
    digits: int = 2
    reference: str | None = None


Scorer = Callable[..., "float | dict[str, Any]"]


@dataclass(frozen=True)
class Metric:
    name: str
    score: Scorer
    higher_is_better: bool = True
    rankable: bool = False
    pooling: str = "never"
    # Why a "never"-pooled metric has no "all" value (results.json pooled.skipped).
    never_pooled_because: str = "not pooled over languages"
    # Per-language facts (keys of results.json per_language.<lang>) that must agree for "weighted-mean"
    # pooling, each with the reason written when they do not (METEOR: its matching mode).
    agree: tuple[tuple[str, str], ...] = ()
    # Result keys averaged by "weighted-mean" pooling (a dict value is averaged key by key; a string is
    # copied, it agrees by `agree`); () = just the metric's name.
    keys: tuple[str, ...] = ()
    columns: tuple[Column, ...] = ()
    summary_table: str | None = None  # title of a table of this metric alone (per language, avg, all)
    # Columns of "features" metrics come after the medical-term counts, "score" metrics before them.
    group: str = "score"
    # Per-language facts: describe(sources, references, *, lang, tokenizer, settings) -> dict.
    describe: Callable[..., dict[str, Any]] | None = None
    # sacrebleu-style signature: signature(n_refs, *, tokenizer, settings) -> str.
    signature: Callable[..., str] | None = None
    description: str = ""

    @property
    def result_keys(self) -> tuple[str, ...]:
        return self.keys or (self.name,)


METRICS: dict[str, Metric] = {}
"""Registered metrics by name, in registration order (the order of results and table columns)."""


def register_metric(
    name: str, score: Scorer | None = None, *, overwrite: bool = False, **options: Any
) -> Metric | Callable[[Scorer], Metric]:
    """Register a metric under ``name`` for ``metrics.include`` (options: the fields of :class:`Metric`).

    ``register_metric("toy", fn, rankable=True)``, or as a decorator ``@register_metric("toy")``. A single
    column headed by the name is the default. Returns the :class:`Metric`.
    """
    if score is None:
        return lambda fn: register_metric(name, fn, overwrite=overwrite, **options)
    if not name or not isinstance(name, str) or not name.replace("_", "").isalnum() or name != name.lower():
        raise MultimsdError(f"metric name {name!r}: use lowercase letters, digits and _")
    if name in METRICS and not overwrite:
        raise MultimsdError(f"metric {name!r} is already registered (pass overwrite=True to replace it)")
    options.setdefault("columns", (Column(name, name),))
    try:
        metric = Metric(name=name, score=score, **options)
    except TypeError as e:
        raise MultimsdError(f"register_metric({name!r}): {e}") from None
    if metric.pooling not in POOLING:
        raise MultimsdError(f"metric {name!r}: pooling={metric.pooling!r}; choose {', '.join(POOLING)}")
    if metric.rankable and not metric.higher_is_better:
        raise MultimsdError(f"metric {name!r}: only higher-is-better metrics can be rankable")
    METRICS[name] = metric
    return metric


def get_metric(name: str) -> Metric:
    try:
        return METRICS[name]
    except KeyError:
        raise MultimsdError(f"unknown metric {name!r} (known: {', '.join(METRICS)})") from None


def rankable_metrics() -> list[str]:
    """Names ``select_by`` may use (higher-is-better, one number per system)."""
    return [name for name, m in METRICS.items() if m.rankable]
