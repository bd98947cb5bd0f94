"""The evaluation stage: score simplification systems against a reference set, per language.

Read top to bottom, :func:`run` is the whole stage:

1. check the options (metric names, ``select_by``, tokenizer overrides, system names) before reading anything;
2. load the reference set and every system's predictions, aligned with the reference rows
   (:mod:`multimsd.evaluation.inputs`);
3. per language, with that language's tokenizer (``default_tokenizer(lang)`` unless ``tokenizer.<lang>``
   overrides it), every metric of ``metrics.include`` from the metric registry (:mod:`multimsd.metrics.registry`;
   built in: SARI (+ add / keep / delete), BLEU, TER, chrF, METEOR (+ its mode), FKGL of the outputs (and of the
   sources and references, for comparison), EASSE quality features), and distinct medical-term types of
   sources, references and every system; then pool the languages ("all") where that is meaningful and rank
   the systems by ``select_by`` (:mod:`multimsd.evaluation.scoring`, whose docstring gives the rules; a system
   flagged for degenerate outputs, see below, is ranked after the others: :mod:`multimsd.metrics.best`);
   per language, bootstrap confidence intervals of the metrics that registered per-sentence statistics (SARI,
   BLEU, FKGL, ...) and paired comparisons of the systems (``bootstrap.*``, :mod:`multimsd.evaluation.intervals`);
   per system and language, the shares of empty outputs, of outputs cut at ``max_new_tokens`` and of outputs
   identical to the input, flagged above ``degenerate.max_share`` (:mod:`multimsd.metrics.degenerate`);
4. write ``results.json`` (with ``metrics``: the registry's facts of the metrics computed, which the run
   report reads), ``table.md`` and ``scores.png`` into ``output.dir`` atomically, print the table
   (:mod:`multimsd.evaluation.report`).

Translation of user mistakes into :class:`MultimsdError` (one line, no traceback, nothing written): missing
or empty files, non-UTF-8 bytes (file and line), prediction / reference row counts that differ (file and
both counts), unknown languages, tokenizers, metrics or baselines.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from multimsd import LANGUAGES, __version__, interrupts, runlock
from multimsd.config import EvaluateConfig
from multimsd.errors import MultimsdError
from multimsd.evaluation.inputs import BASELINES, ReferenceSet, load_predictions, load_references
from multimsd.evaluation.intervals import bootstrap_settings, check_bootstrap, language_intervals
from multimsd.evaluation.report import markdown_report, write_outputs
from multimsd.evaluation.scoring import evaluate_language, parse_select_by, pool_languages, rank_systems
from multimsd.fsutil import check_replaceable, check_writable_dir
from multimsd.metrics.degenerate import (
    check_degenerate,
    check_max_safety,
    degenerate_summary,
    demotions,
    load_cut_flags,
    mark_unsafe,
    output_shares,
)

log = logging.getLogger(__name__)

RESERVED_NAMES = ("source", "reference", "all")
MARKER = "results.json"


# ---------------------------------------------------------------------------------------------- configuration
def to_config(cfg: EvaluateConfig | DictConfig | dict) -> EvaluateConfig:
    """Accept a Hydra DictConfig, a plain dict or an EvaluateConfig; return a validated EvaluateConfig."""
    if isinstance(cfg, EvaluateConfig):
        return cfg
    from omegaconf.errors import OmegaConfBaseException

    base = OmegaConf.structured(EvaluateConfig)
    try:
        user = cfg if isinstance(cfg, DictConfig) else OmegaConf.create(cfg)
        merged = OmegaConf.merge(base, user)
        # The name -> value maps given replace the defaults instead of being merged into them, so that
        # `~systems.identity` (Hydra) or run({"systems": {...}}) leaves out the identity baseline.
        for key in ("systems", "tokenizer"):
            if key in user:
                merged[key] = user[key]
    except OmegaConfBaseException as e:  # a misspelt key or a value of the wrong type
        raise MultimsdError(f"bad evaluation option: {str(e).splitlines()[0]}") from None
    return OmegaConf.to_object(merged)


def resolve_tokenizers(langs: list[str], overrides: dict[str, str]) -> dict[str, str]:
    """The tokenizer of each language: ``tokenizer.<lang>`` if given, else the language's default."""
    from multimsd.metrics import default_tokenizer, get_tokenizer

    for lang, name in overrides.items():
        if lang not in LANGUAGES:
            raise MultimsdError(f"tokenizer.{lang}: unknown language (supported: {', '.join(LANGUAGES)})")
        get_tokenizer(name)  # one line naming the known tokenizers
    return {lang: overrides.get(lang) or default_tokenizer(lang) for lang in langs}


def check_config(cfg: EvaluateConfig) -> None:
    from multimsd.metrics import METRICS  # importing it registers ja-mecab / zh-char and the metrics
    from multimsd.metrics.bleu import BLEU
    from multimsd.metrics.meteor import METEOR_MODES

    include = list(cfg.metrics.include)
    bad = [m for m in include if m not in METRICS]
    if bad or not include:
        raise MultimsdError(
            f"metrics.include: unknown metric(s) {', '.join(bad) or '(none given)'} "
            f"(known: {', '.join(METRICS)})"
        )
    missing = [m for m in parse_select_by(cfg.select_by) if m not in include]
    if missing:
        raise MultimsdError(f"select_by={cfg.select_by!r} needs {', '.join(missing)} in metrics.include")
    if cfg.metrics.meteor_mode not in ("auto", *METEOR_MODES):
        raise MultimsdError(
            f"metrics.meteor_mode={cfg.metrics.meteor_mode!r}: choose auto, {', '.join(METEOR_MODES)}"
        )
    if cfg.metrics.bleu_smooth not in BLEU.SMOOTH_DEFAULTS:
        raise MultimsdError(
            f"metrics.bleu_smooth={cfg.metrics.bleu_smooth!r}: choose {', '.join(BLEU.SMOOTH_DEFAULTS)}"
        )
    resolve_tokenizers([], dict(cfg.tokenizer))
    if not cfg.systems:
        raise MultimsdError("no systems to evaluate: add systems.<name>=<predictions path or @identity>")
    for name, spec in cfg.systems.items():
        if name in RESERVED_NAMES:
            raise MultimsdError(f"systems.{name}: {name!r} is reserved ({', '.join(RESERVED_NAMES)})")
        if not spec or not str(spec).strip():
            raise MultimsdError(f"systems.{name}: empty predictions path")
        if str(spec).startswith("@") and str(spec)[1:] not in BASELINES:
            raise MultimsdError(
                f"systems.{name}={spec}: unknown baseline (known: {', '.join('@' + b for b in BASELINES)})"
            )
    check_bootstrap(cfg)
    check_degenerate(cfg)
    check_max_safety(cfg)
    from multimsd.metrics.safety import SAFETY_CHECKS

    if bad := sorted(set(cfg.metrics.safety_checks) - set(SAFETY_CHECKS)):
        raise MultimsdError(
            f"metrics.safety_checks: unknown {', '.join(bad)}; choose from {', '.join(SAFETY_CHECKS)} "
            "(the term check is not counted: it depends on the dictionary)"
        )
    r = cfg.refs
    if r.source or r.references:
        if r.path:
            raise MultimsdError("give either refs.path or refs.source + refs.references, not both")
        if not (r.source and r.references and r.lang):
            raise MultimsdError("plain-text references need refs.source, refs.references=[...] and refs.lang")
    elif r.lang:
        raise MultimsdError(
            "refs.lang is for plain-text references (refs.source); select languages with refs.languages"
        )
    for lang in [*(r.languages or []), *([r.lang] if r.lang else [])]:
        if lang not in LANGUAGES:
            raise MultimsdError(f"unknown language {lang!r} (supported: {', '.join(LANGUAGES)})")
    if r.languages is not None and not r.languages:
        raise MultimsdError("refs.languages is empty (null = every language of the reference set)")


# ---------------------------------------------------------------------------------------------- the stage
def run(cfg: EvaluateConfig | DictConfig | dict) -> dict:
    """Run the evaluation stage; return the results (also written to ``output.dir/results.json``)."""
    cfg = to_config(cfg)
    check_config(cfg)
    out_dir = Path(cfg.output.dir)
    with runlock.hold(out_dir, "evaluate"):  # one writer per output directory (multimsd.runlock)
        check_replaceable(out_dir, MARKER, "a multimsd evaluation output")
        check_writable_dir(out_dir, "output.dir")
        started = time.time()
        # An interrupt (Ctrl-C, SIGTERM) prints one line: the output is written whole at the end, or not at all.
        with interrupts.note(state=lambda: interrupts.output_state(out_dir, started)):
            return _evaluate(cfg, out_dir)


def _evaluate(cfg: EvaluateConfig, out_dir: Path) -> dict:
    import sacrebleu

    from multimsd.metrics import describe_metrics

    # 1. references and predictions
    refs = load_references(cfg)
    langs = _languages(cfg, refs)
    tokenizers = resolve_tokenizers(langs, dict(cfg.tokenizer))
    systems, system_info = {}, {}
    for name, spec in cfg.systems.items():
        systems[name], system_info[name] = load_predictions(name, str(spec), refs, langs, cfg.refs.split)
        system_info[name]["spec"] = str(spec)
    log.info("%d reference rows in %s; %d system(s)", len(refs), ", ".join(langs), len(systems))

    # 2. scores per language, then pooled
    per_language, per_lang_scores = {}, {}
    for lang in langs:
        per_language[lang], per_lang_scores[lang] = evaluate_language(
            lang, tokenizers[lang], _rows(refs, lang), refs, systems, cfg
        )
    results_systems = {name: {lang: per_lang_scores[lang][name] for lang in langs} for name in systems}
    pooled_report: dict[str, Any] = {"languages": [], "computed": [], "skipped": {}}
    if len(langs) > 1:
        pooled, report = pool_languages(langs, per_language, per_lang_scores, refs, systems, cfg)
        pooled_report = {"languages": ["all"], **report}
        for name in systems:
            results_systems[name]["all"] = pooled[name]

    # 3. confidence intervals and paired comparisons, per language (after pooling: "ci" is no score)
    comparisons = _add_intervals(cfg, refs, langs, tokenizers, systems, per_lang_scores, results_systems)

    # 4. degenerate outputs: empty, cut at the length cap, identical to the input (per language)
    _add_output_shares(cfg, refs, langs, systems, per_language, results_systems)
    # the one rule for "best" (multimsd.metrics.best): flagged systems are ranked after the others
    scored = {"languages": langs, "systems": results_systems}
    flagged = {col: {s: demotions(scored, s, col) for s in systems} for col in [*langs, "overall"]}

    results = {
        "multimsd_version": __version__,
        "sacrebleu_version": sacrebleu.__version__,
        "settings": {
            **OmegaConf.to_container(OmegaConf.structured(cfg)),
            "tokenizers": tokenizers,
        },
        "references": {
            "name": refs.name,
            "n_sentences": sum(per_language[g]["n_sentences"] for g in langs),
            "languages": langs,
        },
        "languages": langs,
        "tokenizers": tokenizers,
        "per_language": per_language,
        "systems_info": system_info,
        "systems": results_systems,
        "pooled": pooled_report,
        "ranking": rank_systems(langs, per_lang_scores, cfg.select_by, flagged),
        "bootstrap": bootstrap_settings(cfg),
        "comparisons": comparisons,
        "degenerate": degenerate_summary(results_systems, langs, cfg.degenerate.max_share),
        "metrics": describe_metrics(list(cfg.metrics.include)),
    }
    markdown = markdown_report(results)

    # 5. output, atomically
    _write(out_dir, results, markdown, cfg)
    results["output_dir"] = str(out_dir.resolve())
    return results


def _languages(cfg: EvaluateConfig, refs: ReferenceSet) -> list[str]:
    """The languages to score: the reference set's, in LANGUAGES order, limited to ``refs.languages``."""
    present = [g for g in LANGUAGES if g in set(refs.lang)]
    langs = [g for g in present if g in cfg.refs.languages] if cfg.refs.languages else present
    if not langs:
        raise MultimsdError(
            f"{refs.name}: no rows in refs.languages={list(cfg.refs.languages or [])} "
            f"(it has {', '.join(present)})"
        )
    return langs


def _rows(refs: ReferenceSet, lang: str) -> list[int]:
    """The reference rows in ``lang``."""
    return [i for i, x in enumerate(refs.lang) if x == lang]


def _add_intervals(
    cfg: EvaluateConfig,
    refs: ReferenceSet,
    langs: list[str],
    tokenizers: dict[str, str],
    systems: dict,
    per_lang_scores: dict,
    results_systems: dict,
) -> list[dict]:
    """Each system's bootstrap intervals (``ci``) into ``results_systems``; returns the paired comparisons."""
    comparisons: list[dict] = []
    if cfg.bootstrap.samples:
        for lang in langs:
            cis, comps = language_intervals(
                lang, tokenizers[lang], _rows(refs, lang), refs, systems, per_lang_scores[lang], cfg
            )
            for name in systems:
                results_systems[name][lang]["ci"] = cis[name]
            comparisons += comps
    return comparisons


def _add_output_shares(
    cfg: EvaluateConfig,
    refs: ReferenceSet,
    langs: list[str],
    systems: dict,
    per_language: dict,
    results_systems: dict,
) -> None:
    """Per system and language, the shares of degenerate outputs (``outputs``) into ``results_systems``, and
    the unsafe flag where its share of failed safety checks is above ``select.max_safety``."""
    for name, spec in cfg.systems.items():
        cut = load_cut_flags(str(spec), refs.lang, langs)
        for lang in langs:
            rows = _rows(refs, lang)
            results_systems[name][lang]["outputs"] = output_shares(
                [refs.complex[i] for i in rows],
                [systems[name][i] for i in rows],
                [cut[i] for i in rows],
                cfg.degenerate.max_share,
                copies_by_design=str(spec) == "@identity",
            )
            res = results_systems[name][lang]
            mark_unsafe(
                res["outputs"],
                res.get("safety"),
                (res.get("ci") or {}).get("safety"),
                per_language[lang].get("safety_reference"),
                cfg.select.max_safety,
            )


def _write(out_dir: Path, results: dict, markdown: str, cfg: EvaluateConfig) -> None:
    """results.json, table.md (and scores.png) into ``out_dir``; the table printed when asked."""
    write_outputs(out_dir, results, markdown, cfg)
    if cfg.output.print_table:
        print(markdown)
        print(
            f"results written to {out_dir.resolve()}  (results.json, table.md"
            + (", scores.png)" if cfg.output.plot else ")")
        )


__all__ = [
    "BASELINES",
    "check_config",
    "load_predictions",
    "load_references",
    "parse_select_by",
    "run",
    "to_config",
]
