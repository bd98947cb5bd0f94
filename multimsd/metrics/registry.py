"""The metric registry: every metric ``metrics.include`` may name, and what the evaluation stage needs to
know about it to score, pool, rank and tabulate it.

A :class:`Metric` is a scorer and the facts about it:

* **its scorer** ``score(sources, outputs, references, *, lang, tokenizer, settings)`` -> a number (stored
  under the metric's name) or a dict of result keys. ``references`` are reference *streams*
  (``references[k][i]`` = k-th reference of sentence i), ``tokenizer`` a registered tokenizer name,
  ``settings`` the :class:`~multimsd.config.MetricsConfig` (``lowercase``, ``meteor_mode``, ...);
* **its direction**: ``higher_is_better`` (bold in the tables; None: neither, a description such as the
  novel-token share) and ``rankable`` (``select_by`` may name it; only higher-is-better metrics are);
* **how it pools over languages** (the "all" column), one of :data:`POOLING`;
* **its table columns** (:class:`Column`), and optionally a summary table of its own (``summary_table``);
  ``report`` says whether its columns get tables in the run report (``multimsd run``'s report.html);
* **its bootstrap intervals** (optional): ``statistics(sources, outputs, references, *, lang, tokenizer,
  settings)`` -> per-sentence sufficient statistics ``[n, k]`` whose column sums determine the corpus score
  (None where the metric is undefined, e.g. FKGL for ja), and ``from_totals``, one vectorised function
  ``from_totals(totals [..., k], *, lang, tokenizer, settings)`` -> scores ``[...]`` per result key with an
  interval (SARI: ``sari``, ``sari_add``, ``sari_keep``, ``sari_delete`` from the same statistics). The
  evaluation stage then resamples the sentences (:mod:`multimsd.metrics.bootstrap`): intervals, paired
  comparisons, and the interval in the run report. A metric without them is shown without an interval.

The evaluation writes these facts into results.json (``metrics``, :func:`describe_metrics`), so the run report
reads them from there.

The built-in metrics (sari, bleu, ter, chrf, meteor, fkgl, quality, novelty, safety, meaning) are registered by
:mod:`multimsd.metrics.scoring`; a plugin adds one with :func:`register_metric` (see the README, "Extending
multimsd").
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from multimsd.errors import MultimsdError

if TYPE_CHECKING:
    import numpy as np

__all__ = [
    "METRICS",
    "POOLING",
    "Column",
    "Metric",
    "describe_metrics",
    "get_metric",
    "interval_keys",
    "rankable_metrics",
    "register_metric",
]

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

    In the run report (``multimsd run``) the column is a table of its own, captioned ``title`` (default the
    header), with the per-language facts of the sides in ``scale`` (of ``reference``) as rows under the
    systems, for scale.
    """

    header: str
    key: str
    digits: int = 2
    reference: str | None = None
    title: str | None = None
    scale: tuple[str, ...] = ("source", "reference")


Scorer = Callable[..., "float | dict[str, Any]"]
Statistics = Callable[..., "np.ndarray | None"]
"""``statistics(sources, outputs, references, *, lang, tokenizer, settings)`` -> ``[n_sentences, k]`` or None."""
FromTotals = Callable[..., "np.ndarray"]
"""``from_totals(totals [..., k], *, lang, tokenizer, settings)`` -> scores ``[...]`` (vectorised)."""


@dataclass(frozen=True)
class Metric:
    name: str
    score: Scorer
    higher_is_better: bool | None = True  # None: neither direction is better (no bold)
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
    # Whether its columns get tables (with their intervals) in the run report.
    report: bool = True
    # Bootstrap intervals (module docstring): per-sentence sufficient statistics, and per result key with an
    # interval the function of their column sums that gives the score. Both or neither.
    statistics: Statistics | None = None
    from_totals: Mapping[str, FromTotals] = field(default_factory=dict)

    @property
    def result_keys(self) -> tuple[str, ...]:
        return self.keys or (self.name,)

    @property
    def interval_keys(self) -> tuple[str, ...]:
        """Result keys with bootstrap intervals (``bootstrap.metrics`` may name them); () = none."""
        return tuple(self.from_totals)


METRICS: dict[str, Metric] = {}
"""Registered metrics by name, in registration order (the order of results and table columns)."""


def register_metric(
    name: str, score: Scorer | None = None, *, overwrite: bool = False, **options: Any
) -> Metric | Callable[[Scorer], Metric]:
    """Register a metric under ``name`` for ``metrics.include`` (options: the fields of :class:`Metric`).

    ``register_metric("toy", fn, rankable=True)``, or as a decorator ``@register_metric("toy")``. A single
    column headed by the name is the default. Returns the :class:`Metric`.

    Bootstrap intervals: ``statistics=stats_fn, from_totals=totals_fn`` (the interval of the result key
    ``name``), or ``from_totals={key: fn, ...}`` for several result keys from the same statistics.
    """
    if score is None:
        return lambda fn: register_metric(name, fn, overwrite=overwrite, **options)
    if not _is_name(name):
        raise MultimsdError(f"metric name {name!r}: use lowercase letters, digits and _")
    if name in METRICS and not overwrite:
        raise MultimsdError(f"metric {name!r} is already registered (pass overwrite=True to replace it)")
    options.setdefault("columns", (Column(name, name),))
    totals = options.get("from_totals")
    if callable(totals):
        options["from_totals"] = {name: totals}
    elif totals is not None:
        if not isinstance(totals, Mapping) or not all(callable(f) for f in totals.values()):
            raise MultimsdError(
                f"metric {name!r}: from_totals must be a function or a mapping of result keys to functions"
            )
        options["from_totals"] = dict(totals)
    else:
        options.pop("from_totals", None)
    try:
        metric = Metric(name=name, score=score, **options)
    except TypeError as e:
        raise MultimsdError(f"register_metric({name!r}): {e}") from None
    if metric.pooling not in POOLING:
        raise MultimsdError(f"metric {name!r}: pooling={metric.pooling!r}; choose {', '.join(POOLING)}")
    if metric.rankable and not metric.higher_is_better:
        raise MultimsdError(f"metric {name!r}: only higher-is-better metrics can be rankable")
    if (metric.statistics is None) != (not metric.from_totals):
        raise MultimsdError(
            f"metric {name!r}: bootstrap intervals need both statistics= and from_totals= (or neither)"
        )
    if metric.statistics is not None and not callable(metric.statistics):
        raise MultimsdError(f"metric {name!r}: statistics must be a function")
    for key in metric.interval_keys:
        owner = interval_keys().get(key)
        if not _is_name(key):
            raise MultimsdError(f"metric {name!r}: interval key {key!r}: use lowercase letters, digits and _")
        if owner is not None and owner.name != name:
            raise MultimsdError(f"metric {name!r}: metric {owner.name!r} already has an interval for {key!r}")
    METRICS[name] = metric
    return metric


def _is_name(name: Any) -> bool:
    return bool(name) and isinstance(name, str) and name.replace("_", "").isalnum() and name == name.lower()


def get_metric(name: str) -> Metric:
    try:
        return METRICS[name]
    except KeyError:
        raise MultimsdError(f"unknown metric {name!r} (known: {', '.join(METRICS)})") from None


def rankable_metrics() -> list[str]:
    """Names ``select_by`` may use (higher-is-better, one number per system)."""
    return [name for name, m in METRICS.items() if m.rankable]


def interval_keys() -> dict[str, Metric]:
    """Result keys with bootstrap intervals (what ``bootstrap.metrics`` may name) -> their metric, in
    registry order."""
    return {key: m for m in METRICS.values() for key in m.interval_keys}


def describe_metrics(names: list[str] | None = None) -> dict[str, dict[str, Any]]:
    """The facts of the metrics ``names`` (default all registered), as JSON: results.json's ``metrics``.

    Readers of results.json (the run report, ``multimsd run``'s results.json) take what to show from here:
    per metric its direction, the result keys with intervals and its columns.
    """
    return {
        name: {
            "description": m.description,
            "higher_is_better": m.higher_is_better,
            "rankable": m.rankable,
            "pooling": m.pooling,
            "intervals": list(m.interval_keys),
            "report": m.report,
            "columns": [
                {
                    "key": c.key,
                    "header": c.header,
                    "title": c.title or c.header,
                    "digits": c.digits,
                    "reference": c.reference,
                    "scale": list(c.scale),
                }
                for c in m.columns
            ],
        }
        for name, m in METRICS.items()
        if names is None or name in names
    }
