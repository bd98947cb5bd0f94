"""``multimsd run seeds=[…]``: every trained system once per seed, and what the seeds say together.

* :func:`check_seeds` — one-line errors for a bad ``seeds`` (empty, duplicates, not integers ≥ 0);
* :func:`expand_seeds` — every system of kind ``train`` (each sweep value too), ``optimise`` and ``decode``
  (from the same seed's start) becomes one system per seed,
  ``<name>_seed<s>`` with train.py's ``seed=<s>``: its own stage, output directory (``systems/<name>_seed<s>/``)
  and fingerprint, so the run's caching skips what is done; ``icl`` and ``copy`` systems run once;
* :func:`expand_compare` — a comparison ``a:b`` of seeded systems is made per seed (``a_seed1:b_seed1``, …);
* :func:`select_on_seed_mean` — the sweep's selection (best validation mean of SARI and BLEU) on the mean over
  seeds;
* :func:`seed_summary` — per seeded system and language: each seed's score, their mean ± sd, and an interval
  that includes the seed variance (:func:`seed_interval`).

**The interval over seeds and sentences** (:func:`seed_interval`): a two-way bootstrap of the per-sentence
statistics of the metric registry (:class:`~multimsd.metrics.Metric` ``statistics`` / ``from_totals``, so SARI
and BLEU are corpus scores of summed statistics, never means of sentence scores). Each of ``B`` resamples
draws the test sentences with replacement (the evaluation's own index matrix, ``bootstrap.seed``: every seed
was scored on the same sentences, so they are resampled together) and, independently, ``K`` of the ``K``
seeds with replacement; its score is the mean over the drawn seeds of each one's corpus score on the drawn
sentences. The percentile interval of those ``B`` means covers both the test-set and the seed variance; with
one seed (or seeds that predict alike) it is the evaluation's sentence interval.
"""

from __future__ import annotations

import logging
import statistics as stats_
from pathlib import Path
from typing import Any

import numpy as np

from multimsd.errors import MultimsdError

logger = logging.getLogger("multimsd.pipeline")

METHOD = (
    "percentile; test sentences resampled (as the evaluation does) and, independently, the seeds; "
    "each resample's score is the mean over the drawn seeds of their corpus scores"
)


def check_seeds(seeds: Any) -> list[int] | None:
    """The run's ``seeds`` as a list of ints, or None; a bad value is one ``MultimsdError`` line."""
    if seeds is None:
        return None
    values = list(seeds)
    if not values:
        raise MultimsdError("seeds=[]: name at least one seed (e.g. seeds=[1,2,3]), or leave seeds out")
    bad = [v for v in values if isinstance(v, bool) or not isinstance(v, int) or v < 0]
    if bad:
        raise MultimsdError(f"seeds: {bad[0]!r} is not an integer >= 0 (e.g. seeds=[1,2,3])")
    dup = sorted({v for v in values if values.count(v) > 1})
    if dup:
        raise MultimsdError(f"seeds: {dup[0]} appears more than once; each seed trains once")
    return [int(v) for v in values]


def expand_seeds(systems: dict[str, dict], seeds: list[int] | None) -> dict[str, dict]:
    """Each system of kind train once per seed (``<name>_seed<s>``, train.py ``seed=<s>``); the others as they
    are. No seeds: ``systems`` unchanged."""
    if seeds is None:
        return systems
    out: dict[str, dict] = {}
    for name, sc in systems.items():
        if sc["kind"] not in ("train", "optimise", "decode"):
            out[name] = sc
            continue
        for s in seeds:
            if f"{name}_seed{s}" in systems or f"{name}_seed{s}" in out:
                raise MultimsdError(
                    f"seeds: {name}_seed{s} (seed {s} of {name}) is also the name of another system; rename one"
                )
            out[f"{name}_seed{s}"] = {
                **sc,
                "train": [*sc["train"], f"seed={s}"],
                "suffix": f"{sc['suffix']}, seed {s}",
                "seed": s,
                "seed_of": name,
            }
            if sc.get("start") is not None:  # a started system: each seed from the same seed's system
                out[f"{name}_seed{s}"]["start"] = f"{sc['start']}_seed{s}"
    return out


def seed_groups(systems: dict[str, dict]) -> dict[str, dict[int, str]]:
    """``{base name: {seed: system name}}`` of the seeded systems, in the run's order, seeds ascending."""
    groups: dict[str, dict[int, str]] = {}
    for name, sc in systems.items():
        if sc.get("seed_of"):
            groups.setdefault(sc["seed_of"], {})[sc["seed"]] = name
    return {base: dict(sorted(members.items())) for base, members in groups.items()}


def expand_compare(compare: list[str], systems: dict[str, dict]) -> list[str]:
    """``a:b`` naming a seeded system (its name without ``_seed<s>``) becomes one pair per seed (the same seed
    on both sides when both are seeded); other pairs are kept as they are."""
    groups = seed_groups(systems)
    if not groups:
        return list(compare)
    out: list[str] = []
    for pair in compare:
        a, _, b = str(pair).partition(":")
        if a in groups or b in groups:
            seeds = list((groups.get(a) or groups.get(b)).keys())
            for s in seeds:
                out.append(f"{groups[a][s] if a in groups else a}:{groups[b][s] if b in groups else b}")
        else:
            out.append(str(pair))
    return out


def mean_sd(values: list[float]) -> tuple[float, float | None]:
    """The mean and the sample standard deviation (n − 1; None for one value)."""
    return stats_.fmean(values), (stats_.stdev(values) if len(values) > 1 else None)


def select_on_seed_mean(validation: dict[str, dict[int, dict]]) -> dict:
    """The sweep's selection on the mean over seeds: ``validation`` is ``{base: {seed: {sari, bleu,
    mean_sari_bleu}}}`` (a base missing a seed's validation scores is not a candidate); the best mean of
    ``mean_sari_bleu`` wins, ties to the first."""
    summary: dict[str, dict] = {}
    for base, per_seed in validation.items():
        if not per_seed or any(v is None for v in per_seed.values()):
            continue
        entry: dict[str, Any] = {}
        for key in ("sari", "bleu", "mean_sari_bleu"):
            m, sd = mean_sd([float(v[key]) for v in per_seed.values()])
            entry[key] = m
            entry[f"{key}_sd"] = sd
        entry["per_seed"] = {str(s): v for s, v in per_seed.items()}
        summary[base] = entry
    selected = max(summary, key=lambda n: summary[n]["mean_sari_bleu"]) if summary else None
    return {
        "selected_by": "mean over seeds of mean(sari,bleu) on validation",
        "selected": selected,
        "validation": summary,
    }


def sweep_on_seed_mean(run_dir: Path, parameter: str, groups: dict[str, dict[int, str]], swept: list[str]):
    """run.json's ``sweep`` entry of a seeded run: the swept systems by their base name, each seed's system
    and validation scores, and the selection on the mean over seeds."""
    from multimsd.pipeline.records import read_json

    bases = [b for b in groups if any(name in swept for name in groups[b].values())]
    validation: dict[str, dict[int, dict]] = {}
    for base in bases:
        validation[base] = {}
        for s, name in groups[base].items():
            v = (read_json(run_dir / "systems" / name / "all_results.json") or {}).get("validation") or {}
            ok = "mean_sari_bleu" in v
            validation[base][s] = {k: v[k] for k in ("sari", "bleu", "mean_sari_bleu")} if ok else None
    return {
        "parameter": parameter,
        "systems": bases,
        "seed_systems": {b: [groups[b][s] for s in groups[b]] for b in bases},
        **select_on_seed_mean(validation),
    }


# ------------------------------------------------------------------------------------------- intervals
def seed_interval(
    per_seed_stats: list[np.ndarray],
    score,
    counts: np.ndarray,
    *,
    confidence: float,
    seed: int,
) -> tuple[float, float]:
    """Percentile interval of the mean over seeds, resampling sentences (``counts [B, n]``, shared by all
    seeds: they were scored on the same sentences) and, independently, the seeds (``K`` of ``K``, with
    replacement, drawn from ``seed``). ``per_seed_stats``: each seed's per-sentence statistics ``[n, k]``;
    ``score``: totals ``[..., k]`` -> scores ``[...]`` (a registry ``from_totals``)."""
    from multimsd.metrics.bootstrap import percentile_interval

    k, b = len(per_seed_stats), counts.shape[0]
    resampled = np.stack(
        [score(counts @ np.asarray(st, dtype=np.float64)) for st in per_seed_stats]
    )  # [K, B]
    draws = np.random.Generator(np.random.PCG64(seed)).integers(0, k, size=(b, k))  # [B, K] seed indices
    means = resampled[draws, np.arange(b)[:, None]].mean(axis=1)
    return percentile_interval(means, confidence)


def _statistics(eval_cfg, groups: dict[str, dict[int, str]], langs: list[str]) -> dict:
    """``{lang: {system: {metric name: stats [n, k] or None}}}`` of the seeded systems, from the evaluation
    stage's own inputs (its references and prediction files, tokenizers and metric settings)."""
    from multimsd.evaluation.intervals import bootstrap_metrics
    from multimsd.evaluation.stage import load_predictions, load_references, resolve_tokenizers, to_config
    from multimsd.metrics import interval_keys, reference_streams

    cfg = to_config(eval_cfg)
    refs = load_references(cfg)
    tokenizers = resolve_tokenizers(langs, dict(cfg.tokenizer))
    owners = interval_keys()
    metrics = bootstrap_metrics(cfg)
    names = [n for g in groups.values() for n in g.values()]
    preds = {n: load_predictions(n, str(cfg.systems[n]), refs, langs, cfg.refs.split)[0] for n in names}
    out: dict[str, dict] = {}
    for lang in langs:
        rows = [i for i, x in enumerate(refs.lang) if x == lang]
        sources = [refs.complex[i] for i in rows]
        streams = reference_streams([refs.refs[i] for i in rows], f"{refs.name} ({lang})")
        facts = {"lang": lang, "tokenizer": tokenizers[lang], "settings": cfg.metrics}
        out[lang] = {"facts": facts, "n": len(rows), "systems": {}}
        for name in names:
            outputs = [preds[name][i] for i in rows]
            per_metric: dict[str, Any] = {}
            for m in metrics:
                metric = owners[m]
                if metric.name not in per_metric:
                    st = metric.statistics(sources, outputs, streams, **facts)
                    per_metric[metric.name] = None if st is None else np.asarray(st)
            out[lang]["systems"][name] = per_metric
    return {"cfg": cfg, "metrics": metrics, "langs": out}


def seed_summary(eval_stage, groups: dict[str, dict[int, str]], evaluation: dict, labels: dict) -> dict:
    """results.json's ``seeds``: per seeded system and language, each reported score per seed, their mean ± sd
    and, for the metrics with bootstrap intervals, the interval over seeds and sentences."""
    from functools import partial

    from multimsd.metrics import interval_keys
    from multimsd.metrics.bootstrap import resample_counts, resample_indices

    langs = [g for g in evaluation.get("languages") or [] if g != "all"]
    scores = evaluation.get("systems", {})
    seeds = sorted({s for g in groups.values() for s in g})
    samples = (evaluation.get("bootstrap") or {}).get("samples")
    computed = _statistics(eval_stage.config, groups, langs) if samples else None
    owners = interval_keys()
    summary: dict[str, Any] = {}
    for base, members in groups.items():
        entry: dict[str, Any] = {
            "label": labels.get(base, base),
            "systems": {str(s): n for s, n in members.items()},
        }
        for lang in [*langs, *(["all"] if len(langs) > 1 else [])]:
            per_seed = {s: (scores.get(n) or {}).get(lang) or {} for s, n in members.items()}
            keys = [
                k
                for k, v in next(iter(per_seed.values())).items()
                if isinstance(v, (int, float)) and not isinstance(v, bool) and k != "n_sentences"
            ]
            cell: dict[str, Any] = {}
            for key in keys:
                values = [per_seed[s].get(key) for s in members]
                if any(not isinstance(v, (int, float)) for v in values):
                    continue
                m, sd = mean_sd([float(v) for v in values])
                cell[key] = {"per_seed": {str(s): v for s, v in zip(members, values)}, "mean": m, "sd": sd}
            if computed is not None and lang in computed["langs"]:
                c = computed["langs"][lang]
                b = computed["cfg"].bootstrap
                counts = resample_counts(resample_indices(c["n"], b.samples, b.seed), c["n"])
                for key in computed["metrics"]:
                    metric = owners[key]
                    sts = [c["systems"][n].get(metric.name) for n in members.values()]
                    if key not in cell or any(st is None for st in sts):
                        continue
                    fn = partial(metric.from_totals[key], **c["facts"])
                    reported = [cell[key]["per_seed"][str(s)] for s in members]
                    if any(
                        abs(float(fn(st.sum(0))) - r) > 1e-9 * max(1.0, abs(r))
                        for st, r in zip(sts, reported)
                    ):
                        logger.warning(
                            "seeds: %s %s %s: statistics disagree with the score; no interval",
                            base,
                            lang,
                            key,
                        )
                        continue
                    cell[key]["ci"] = list(
                        seed_interval(sts, fn, counts, confidence=b.confidence, seed=b.seed + 1)
                    )
            entry[lang] = cell
        summary[base] = entry
    boot = evaluation.get("bootstrap") or {}
    return {
        "seeds": seeds,
        "method": METHOD if boot.get("samples") else "off",
        "confidence": boot.get("confidence"),
        "sd": "sample standard deviation over seeds (n - 1)",
        "systems": summary,
    }


def summary_lines(seeds: dict) -> list[str]:
    """What ``multimsd run`` prints for a seeded run: per trained system and language, SARI / BLEU mean ± sd
    over the seeds with the interval over seeds and sentences."""
    lines = [f"  across seeds {', '.join(str(s) for s in seeds.get('seeds') or [])}:"]
    for base, entry in (seeds.get("systems") or {}).items():
        for lang, cell in entry.items():
            if lang in ("label", "systems"):
                continue
            parts = []
            for key, name in (("sari", "SARI"), ("bleu", "BLEU")):
                e = cell.get(key)
                if not e:
                    continue
                sd = f" ± {e['sd']:.2f}" if e.get("sd") is not None else ""
                ci = f" [{e['ci'][0]:.1f}, {e['ci'][1]:.1f}]" if e.get("ci") else ""
                parts.append(f"{name} {e['mean']:6.2f}{sd}{ci}")
            lines.append(f"  {base:28s} {lang:>3s}  " + "  ".join(parts))
    return lines
