"""``multimsd run``: align → (gold) → train / prompt every system → evaluate → report, in one run directory.

Read top to bottom, this is the pipeline:

1. take the run directory's lock (one writer at a time: :mod:`multimsd.runlock`), check that it can be
   written, before any work (and that it is ours, if it exists);
2. compose each stage's config from its own YAML (``conf/align.yaml``, ``conf/train.yaml``,
   ``conf/evaluate.yaml``) and the run's overrides, so a misspelt key fails here, before anything runs;
3. run the stages in order. A stage whose fingerprint (its resolved config + its upstream fingerprints) is
   unchanged and whose outputs are intact is skipped (:mod:`multimsd.pipeline.records`); a stage that began
   with the same fingerprint and did not finish continues (training resumes from its last checkpoint); a stage
   whose config changed runs again from scratch, and so does everything after it.

The run directory::

    <run>/align/                 align.py's DatasetDict (+ stats.json: the corpus statistics)
    <run>/align/gold/            align.py mode=gold: P/R/F1 and the θ curve (when ``gold=true``)
    <run>/systems/<name>/        train.py's output.dir per trained / prompted system (predictions/test/…);
                                 with seeds=[…], <name>_seed<s>/ per seed of a trained system
    <run>/evaluation/            evaluate.py's results.json, table.md, scores.png
    <run>/run.json               what ran, with which config, where its results are, how long each stage took
    <run>/results.json           per system and language: the report's scores (SARI / BLEU / FKGL, ...) with
                                 their CIs, the comparisons
    <run>/report.html, report.md the report

Why this module is long: it is the pipeline read top to bottom: one planner per stage, the checks before any
work, running the stages, and the run's result files; each part reads the stages the one before it made, and
the order of the pipeline is readable in one place only while they stay together.
"""

from __future__ import annotations

import logging
import shutil
import sys
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from omegaconf import DictConfig, OmegaConf

from multimsd import interrupts, runlock

# compose / register_schemas: part of this module's API (compose("run", …): the run's schema is registered by
# importing multimsd.pipeline.config, below)
from multimsd.commands.compose import compose, register_schemas  # noqa: F401
from multimsd.config import DegenerateConfig
from multimsd.errors import MultimsdError
from multimsd.outdir import alias_of, use_output_dir
from multimsd.pipeline.config import RunConfig
from multimsd.pipeline.labels import system_label
from multimsd.pipeline.languages import aligned_languages, follow_aligned
from multimsd.pipeline.records import StageRecords, fingerprint, read_json, write_json_atomic
from multimsd.pipeline.seeds import (
    expand_compare,
    seed_groups,
    seed_summary,
    sweep_on_seed_mean,
)
from multimsd.pipeline.sweep import quote, recorded_value, validation_flags
from multimsd.pipeline.systems import (  # noqa: F401  (expand_systems: part of this module's API)
    STARTS_FROM,
    default_label,
    expand_systems,
    planning_order,
    started_overrides,
)
from multimsd.split import check_split_config

logger = logging.getLogger("multimsd.pipeline")

RUN_MARKER = "run.json"


@dataclass
class Stage:
    """One step of the plan: its name, resolved config, fingerprint, output directory and how to run it."""

    name: str
    config: DictConfig | None
    fp: str
    out: Path
    kind: str  # align | pairs | gold | train | evaluate
    system: str | None = None
    info: dict = field(default_factory=dict)


# ------------------------------------------------------------------------------------------- config
def _user_dirs(cfg: RunConfig | DictConfig) -> list[str]:
    """The user's config directory (``config_dir`` / ``--config-dir``), searched after the packaged configs."""
    return [str(Path(cfg.config_dir).expanduser())] if cfg.get("config_dir") else []


def plan(cfg: RunConfig | DictConfig, run_dir: Path) -> list[Stage]:
    """Every stage's resolved config and fingerprint; composing them all first makes a typo fail before work.
    One planner per stage, in the order they run: the corpus (alignment, or aligned pairs read from
    ``pairs.path``), gold, a train stage per system, the evaluation."""
    first = _plan_pairs(cfg, run_dir) if cfg.pairs.path else _plan_align(cfg, run_dir)
    stages = [first]
    aligned = aligned_languages(cfg, first.config)
    if (gold := _plan_gold(cfg, run_dir)) is not None:
        stages.append(gold)
    systems = expand_systems(cfg)
    trained = _plan_train(cfg, run_dir, systems, first.fp, aligned)
    stages += trained
    stages.append(_plan_evaluate(cfg, run_dir, systems, first.fp, trained))
    return stages


def _plan_pairs(cfg: RunConfig | DictConfig, run_dir: Path) -> Stage:
    """An aligned corpus instead of alignment: read, split by document and written where align.py would write."""
    from multimsd import __version__
    from multimsd.pipeline.pairs import check_pairs_config, check_pairs_input, input_fingerprint

    check_pairs_config(cfg.pairs)
    check_pairs_input(cfg.pairs)
    if cfg.align:
        logger.warning("pairs.path replaces alignment: the align overrides %s are not used", list(cfg.align))
    pairs_cfg = cfg.pairs
    fp = fingerprint(
        [__version__, OmegaConf.to_container(pairs_cfg, resolve=True), input_fingerprint(cfg.pairs.path)]
    )
    return Stage("pairs", pairs_cfg, fp, run_dir / "align", "pairs")


def _plan_align(cfg: RunConfig | DictConfig, run_dir: Path) -> Stage:
    """align.py's alignment into ``<run>/align``."""
    from multimsd import __version__

    align_cfg = compose(
        "align", [*cfg.align, f"output.dir={run_dir / 'align'}", "mode=align"], search=_user_dirs(cfg)
    )
    check_split_config(align_cfg.split, "align.split")  # before any work, named as the run knows it
    fp = fingerprint([__version__, OmegaConf.to_container(align_cfg, resolve=True)], root=run_dir)
    return Stage("align", align_cfg, fp, run_dir / "align", "align")


def _plan_gold(cfg: RunConfig | DictConfig, run_dir: Path) -> Stage | None:
    """align.py mode=gold (the aligner's P/R/F1) when ``gold=true`` and there is an aligner to score."""
    from multimsd import __version__

    if not cfg.gold:
        return None
    if cfg.pairs.path:
        logger.info("gold: skipped (the run reads aligned pairs from pairs.path; no aligner to score)")
        return None
    gold_cfg = compose(
        "align",
        [*cfg.align, "mode=gold", f"gold.report_dir={run_dir / 'align' / 'gold'}"],
        search=_user_dirs(cfg),
    )
    # Gold mode reads the gold data, not the alignment output: its own fingerprint.
    gold_fp = fingerprint([__version__, OmegaConf.to_container(gold_cfg, resolve=True)], root=run_dir)
    return Stage("gold", gold_cfg, gold_fp, run_dir / "align" / "gold", "gold")


def _plan_train(
    cfg: RunConfig | DictConfig,
    run_dir: Path,
    systems: dict,
    align_fp: str,
    aligned: tuple[str, list[str]] | None,
) -> list[Stage]:
    """One train.py stage per trained or prompted system (the copy baseline has none: it is only labelled)."""
    planned: dict[str, Stage] = {}
    # a started system after the system it starts from: its stage reads that one's best model
    for name in planning_order(systems):
        sys_cfg = systems[name]
        if sys_cfg["kind"] == "copy":
            sys_cfg["label"] = sys_cfg["label"] or system_label("copy", None)
            continue
        planned[name] = _plan_system(cfg, run_dir, name, systems, planned, align_fp, aligned)
    return list(planned.values())


def _plan_system(
    cfg: RunConfig | DictConfig,
    run_dir: Path,
    name: str,
    systems: dict,
    planned: dict[str, Stage],
    align_fp: str,
    aligned: tuple[str, list[str]] | None,
) -> Stage:
    """One system's train.py config and fingerprint; sets its label (and swept value) in ``systems``."""
    from multimsd import __version__

    sys_cfg = systems[name]
    out = run_dir / "systems" / name
    own = [*cfg.train, *sys_cfg["train"]]
    upstream = [align_fp]
    if sys_cfg["kind"] in STARTS_FROM:  # the start system's settings, then this system's own
        own = [*cfg.train, *systems[sys_cfg["start"]]["train"], *sys_cfg["train"]]
        upstream.append(planned[sys_cfg["start"]].fp)
    # The run places every system's outputs: a train.output_dir=… (deprecated name) is dropped like a
    # train.output.dir=… is overridden.
    overrides = [*own, f"data.path={run_dir / 'align'}", f"output.dir={out}", "output_dir=null"]
    if sys_cfg["kind"] == "icl":
        overrides.append("mode=icl")
    if sys_cfg["kind"] in STARTS_FROM:
        overrides += started_overrides(sys_cfg, run_dir)
    train_cfg = compose("train", overrides, search=_user_dirs(cfg))
    if follow := follow_aligned(name, train_cfg, own, aligned):
        train_cfg = compose("train", [*overrides, follow], search=_user_dirs(cfg))
    for key in ("split", "sample_split"):
        check_split_config(train_cfg.data[key], f"train.data.{key}")
    resolved = OmegaConf.to_container(train_cfg, resolve=True)
    if sys_cfg["kind"] == "icl":  # prompting never reads the optimiser or loss settings
        resolved = {k: v for k, v in resolved.items() if k not in ("optim", "loss")}
    fp = fingerprint([__version__, resolved], *upstream, root=run_dir)
    sys_cfg["label"] = (sys_cfg["label"] or default_label(sys_cfg, systems, train_cfg)) + sys_cfg["suffix"]
    if sys_cfg["sweep"] is not None:  # the value as it ran (typed by train.py's schema), for run.json
        key = sys_cfg["parameter"].lstrip("+~")
        sys_cfg["value"] = recorded_value(OmegaConf.select(train_cfg, key), sys_cfg["sweep"])
    return Stage(f"train/{name}", train_cfg, fp, out, "train", name, sys_cfg)


def _plan_evaluate(
    cfg: RunConfig | DictConfig, run_dir: Path, systems: dict, align_fp: str, trained: list[Stage]
) -> Stage:
    """evaluate.py over every system's test predictions, against the references the first system predicted."""
    from multimsd import __version__

    if trained:
        refs = trained[0].out / "predictions" / "test" / "references.jsonl"
        refs_overrides = [f"refs.path={refs}"]
    else:
        refs_overrides = [f"refs.path={run_dir / 'align'}", "refs.split=test"]
    # The systems go into the evaluation's config as a map, not as `systems.<name>=…` overrides: Hydra would
    # read a name as a key path, and a path with a comma or a quote as syntax. The evaluate overrides of the
    # run (evaluate.systems.x=…) come after them, as they would on a command line.
    eval_overrides = ["~systems.identity", *refs_overrides]
    preds = {
        name: "@identity"
        if sys_cfg["kind"] == "copy"
        else str(run_dir / "systems" / name / "predictions" / "test")
        for name, sys_cfg in systems.items()
    }
    compare = expand_compare(list(cfg.compare), systems)  # a seeded system's pair: one per seed
    if compare:
        unknown = [p for pair in compare for p in str(pair).split(":") if p not in systems]
        if unknown:
            raise MultimsdError(f"compare: no system named {unknown[0]!r} (systems: {', '.join(systems)})")
        eval_overrides.append(f"bootstrap.compare=[{','.join(quote(str(p)) for p in compare)}]")
    eval_overrides += [*cfg.evaluate, f"output.dir={run_dir / 'evaluation'}"]
    eval_cfg = compose("evaluate", eval_overrides, search=_user_dirs(cfg))
    eval_cfg.systems = {**preds, **OmegaConf.to_container(eval_cfg.systems)}
    eval_fp = fingerprint(
        [__version__, OmegaConf.to_container(eval_cfg, resolve=True)],
        align_fp,
        *(s.fp for s in trained),
        root=run_dir,
    )
    return Stage("evaluate", eval_cfg, eval_fp, run_dir / "evaluation", "evaluate", info=systems)


# ------------------------------------------------------------------------------------------- checks
def check_run_dir(run_dir: Path) -> None:
    """One line, before any work, when the run directory cannot be written or is someone else's directory."""
    from multimsd.fsutil import check_writable_dir

    check_writable_dir(run_dir, "output.dir")
    if (
        run_dir.is_dir()
        and any(run_dir.iterdir())
        and not (run_dir / StageRecords(run_dir).dir.name).exists()
    ):
        raise MultimsdError(
            f"output.dir={run_dir} exists and is not a multimsd run directory; refusing to write into it"
        )


# ------------------------------------------------------------------------------------------- stages
def run_stage(stage: Stage) -> dict:
    """Run one stage in this process through its importable ``run(cfg)``, after importing the plugins its
    config names (``align.plugins=[…]``, ``train.plugins=…``, ``evaluate.plugins=…``)."""
    from multimsd.commands.plugins import load_plugins

    if stage.config is not None and stage.kind != "pairs":
        load_plugins(list(stage.config.get("plugins") or []))
    if stage.kind == "pairs":
        from multimsd.pipeline.pairs import build_pairs

        return build_pairs(stage.config, stage.out)
    if stage.kind == "align" or stage.kind == "gold":
        from multimsd.alignment.stage import run as align_run

        return align_run(stage.config)
    if stage.kind == "train":
        from multimsd.training.loop import run as train_run

        return train_run(stage.config)
    if stage.kind == "evaluate":
        from multimsd.evaluation.stage import run as evaluate_run

        return evaluate_run(stage.config)
    raise AssertionError(stage.kind)


def check_same_references(stages: list[Stage]) -> None:
    """Every system must have been scored on the same test rows, or the report would compare apples and pears."""
    trained = [s for s in stages if s.kind == "train"]
    files = {s.name: (s.out / "predictions" / "test" / "references.jsonl") for s in trained}
    texts = {n: p.read_bytes() for n, p in files.items()}
    first = next(iter(texts), None)
    for name, text in texts.items():
        if text != texts[first]:
            raise MultimsdError(
                f"{name} predicted other test rows than {first} (data.languages / data.max_eval_examples "
                "differ): put those settings in the run's `train` overrides, not a system's"
            )


def execute(stages: list[Stage], records: StageRecords, run_dir: Path) -> dict[str, dict]:
    """Run (or skip) every stage in order. A stage that runs again with an unchanged config (its outputs were
    damaged, or it was killed) writes the same outputs, so the stages after it keep their fingerprints."""
    status: dict[str, dict] = {}
    for i, stage in enumerate(stages, 1):
        head = f"[{i}/{len(stages)}] {stage.name}"
        if records.done(stage.name, stage.fp, stage.out):
            logger.info("%s: unchanged, skipped (%s)", head, stage.out)
            status[stage.name] = {"ran": False, "seconds": records.seconds(stage.name)}
            continue
        started = records.started(stage.name)
        if stage.out.exists() and started != stage.fp:
            # Partial or finished outputs of another config: the training loop would refuse its checkpoints.
            logger.info("%s: config changed, removing %s", head, stage.out)
            shutil.rmtree(stage.out)
        elif started == stage.fp:
            logger.info("%s: continuing an unfinished run", head)
        if stage.kind == "evaluate":
            check_same_references(stages)
        logger.info("%s: running", head)
        records.mark_started(stage.name, stage.fp)
        t0 = time.perf_counter()
        # An interrupt names the stage; the stage adds where it was and what it left (its own notes).
        with interrupts.note(where=f"in stage {i}/{len(stages)} ({stage.name})"):
            run_stage(stage)
            seconds = time.perf_counter() - t0
            # Checkpoints are the training loop's own business (it verifies them): the manifest covers results.
            records.mark_done(stage.name, stage.fp, stage.out, seconds, skip=("checkpoints", "gold"))
        status[stage.name] = {"ran": True, "seconds": seconds}
        logger.info("%s: done in %.1f s", head, seconds)
    return status


# ------------------------------------------------------------------------------------------- results
def write_run_files(
    cfg: DictConfig, run_dir: Path, stages: list[Stage], status: dict, argv: list[str]
) -> dict:
    """``run.json`` (what the report reads) and ``results.json`` (the numbers, with their intervals)."""
    systems = next(s.info for s in stages if s.kind == "evaluate")
    run_info = _run_info(cfg, run_dir, stages, systems, status, argv)
    groups = seed_groups(systems)
    evaluation = read_json(run_dir / "evaluation" / "results.json") or {}
    run_info["sweep"] = _sweep_record(cfg, run_dir, systems, groups, evaluation)
    if groups:  # per seed, mean ± sd, the interval over seeds and sentences
        labels = {
            sc["seed_of"]: sc["label"].removesuffix(f", seed {sc['seed']}")
            for sc in systems.values()
            if sc.get("seed_of")
        }
        run_info["seeds"] = seed_summary(
            next(s for s in stages if s.kind == "evaluate"), groups, evaluation, labels
        )
    write_json_atomic(run_dir / RUN_MARKER, run_info)
    results = _results(run_info, evaluation)
    write_json_atomic(run_dir / "results.json", results)
    return results


def _run_info(
    cfg: DictConfig, run_dir: Path, stages: list[Stage], systems: dict, status: dict, argv: list[str]
) -> dict:
    """run.json without its sweep and seeds: what ran, with which config, where its results are."""
    trained = [s for s in stages if s.kind == "train"]
    refs = trained[0].out / "predictions" / "test" / "references.jsonl" if trained else None
    return {
        "name": cfg.name or run_dir.name,
        "created": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "command": " ".join(["multimsd", "run", *argv]),
        "config": _recorded(cfg),
        "timings": {name: st["seconds"] for name, st in status.items()},
        "align": {
            "stats": "align/stats.json",
            "gold": "align/gold/gold_results.json" if any(s.kind == "gold" for s in stages) else None,
        },
        "references": refs.relative_to(run_dir).as_posix() if refs is not None else None,
        "evaluation": "evaluation/results.json",
        "systems": {name: _system_record(run_dir, stages, name, sc) for name, sc in systems.items()},
        "sweep": None,
    }


def _system_record(run_dir: Path, stages: list[Stage], name: str, sc: dict) -> dict:
    """One system in run.json: its kind, label, θ and where its predictions and training results are."""
    rel = lambda p: p.relative_to(run_dir).as_posix()  # noqa: E731
    out = run_dir / "systems" / name
    record = {
        "kind": sc["kind"],
        "label": sc["label"],
        "theta": _theta(stages, name),
        "predictions": None if sc["kind"] == "copy" else rel(out / "predictions" / "test"),
        "train_results": rel(out / "all_results.json") if sc["kind"] not in ("copy", "icl") else None,
    }
    if sc["kind"] in STARTS_FROM:  # what it started from, and how it optimised
        record.update(start=sc["start"], objective=sc["objective"])
    # a swept system's key and the value it ran with: what the report reads, never the name
    if sc["sweep"] is not None:
        record["sweep"] = {"parameter": sc["parameter"], "value": sc["value"]}
    if sc.get("seed") is not None:
        record["seed"] = sc["seed"]
    return record


def _sweep_record(
    cfg: DictConfig, run_dir: Path, systems: dict, groups: dict, evaluation: dict
) -> dict | None:
    """run.json's sweep: the swept systems, their values and the selected one; None without a sweep."""
    swept = [n for n, sc in systems.items() if sc["sweep"] is not None]
    if not swept:
        return None
    if groups:  # seeds: θ selected on the mean over seeds
        sweep = sweep_on_seed_mean(run_dir, cfg.sweep.parameter, groups, swept)
        members = sweep["seed_systems"]
        sweep["values"] = {b: systems[m[0]]["value"] for b, m in members.items()}
    else:
        sweep = {
            "parameter": cfg.sweep.parameter,
            "systems": swept,
            "values": {n: systems[n]["value"] for n in swept},
            **select_swept(run_dir, swept),
        }
    # the selection stays the paper's; the report says where its validation outputs degenerate
    max_share = (evaluation.get("degenerate") or {}).get("max_share", DegenerateConfig.max_share)
    dirs = {n: run_dir / "systems" / n for n in swept}
    sweep["validation_flagged"] = validation_flags(dirs, max_share)
    return sweep


def _results(run_info: dict, evaluation: dict) -> dict:
    """results.json: the report's scores, their CIs, and the shares of degenerate outputs."""
    keep = {"n_sentences", *shown_keys(evaluation), "term_types", "ci", "outputs"}
    results = {
        "run": run_info["name"],
        "languages": evaluation.get("languages"),
        "bootstrap": evaluation.get("bootstrap"),
        "systems": {
            s: {lang: {k: v for k, v in scores.items() if k in keep} for lang, scores in per_lang.items()}
            for s, per_lang in evaluation.get("systems", {}).items()
        },
        "comparisons": evaluation.get("comparisons", []),
        "degenerate": evaluation.get("degenerate"),
        "ranking": evaluation.get("ranking"),
        "sweep": run_info["sweep"],
        "timings": run_info["timings"],
    }
    if "seeds" in run_info:
        results["seeds"] = run_info["seeds"]
    return results


def _recorded(cfg: DictConfig) -> dict:
    """The run's config as run.json records it: resolved, without the deprecated alias of output.dir (null)."""
    config = OmegaConf.to_container(cfg, resolve=True)
    for key in (alias_of("run"), "seeds"):  # unset: recorded as before these keys existed
        if config.get(key) is None:
            config.pop(key, None)
    return config


def shown_keys(evaluation: dict) -> list[str]:
    """The result keys the run's results.json carries: those with bootstrap intervals and the columns of the
    metrics shown in the report, as the evaluation's results.json describes its metrics (``metrics``; the
    registry's facts for a results.json written before it carried them)."""
    metrics = evaluation.get("metrics")
    if metrics is None:
        from multimsd.metrics import describe_metrics

        metrics = describe_metrics()
    keys: list[str] = []
    for m in metrics.values():
        keys += m.get("intervals") or []
        if m.get("report", True):
            keys += [c["key"].split(".")[0] for c in m.get("columns") or []]  # a.b: keep a
    return list(dict.fromkeys(keys))


def select_swept(run_dir: Path, swept: list[str]) -> dict:
    """The paper's selection among the swept systems: the best mean of SARI and BLEU on *validation* (each
    system's best epoch, chosen by validation loss, predicting the validation split); ties go to the first.
    The test split plays no part, so the selected system's test score is an unbiased estimate."""
    validation = {}
    for name in swept:
        v = (read_json(run_dir / "systems" / name / "all_results.json") or {}).get("validation") or {}
        if "mean_sari_bleu" in v:
            validation[name] = {k: v[k] for k in ("sari", "bleu", "mean_sari_bleu")}
    selected = max(validation, key=lambda n: validation[n]["mean_sari_bleu"]) if validation else None
    return {"selected_by": "mean(sari,bleu) on validation", "selected": selected, "validation": validation}


def _theta(stages: list[Stage], system: str) -> float | None:
    for s in stages:
        if s.system == system and s.config is not None:
            return float(s.config.loss.theta) if s.config.get("mode") != "icl" else None
    return None


def build_report(run_dir: Path) -> dict | None:
    """report.html + report.md from the run's result files (:mod:`multimsd.report`)."""
    try:
        from multimsd.report import build_report as build
    except ImportError:  # the report stage is not part of this build
        logger.warning("report: multimsd.report is not available; results.json and evaluation/table.md only")
        return None
    return build(run_dir)


# ------------------------------------------------------------------------------------------- run
def run(cfg: RunConfig | DictConfig | dict, argv: list[str] | None = None) -> dict:
    """The whole pipeline; returns results.json's content (plus where the report is)."""
    cfg = use_output_dir(cfg if isinstance(cfg, DictConfig) else OmegaConf.structured(cfg), "run")
    # One writer per run directory (multimsd.runlock): a second run into it stops here, having written nothing.
    run_dir = Path(cfg.output.dir).resolve()
    with runlock.hold(run_dir, "multimsd run"):
        new = not run_dir.exists()
        try:
            return _run(cfg, argv)
        except BaseException as e:  # a directory this command made: removed if no stage finished
            if new:
                StageRecords(run_dir).after_a_failure(interrupted=not isinstance(e, Exception))
            raise


def _run(cfg: DictConfig, argv: list[str] | None) -> dict:
    run_dir = Path(cfg.output.dir).resolve()
    check_run_dir(run_dir)
    stages = plan(cfg, run_dir)  # every config composed: a typo in any stage fails here
    run_dir.mkdir(parents=True, exist_ok=True)
    records = StageRecords(run_dir)
    records.dir.mkdir(exist_ok=True)
    t0 = time.perf_counter()
    # Interrupted (Ctrl-C, SIGTERM): one line naming the stage; finished stages are kept and skipped next time.
    with interrupts.note(advice="run the same command to continue (finished stages are skipped)"):
        status = execute(stages, records, run_dir)
        with interrupts.note(where="while writing the run's results and report"):
            results = write_run_files(
                cfg, run_dir, stages, status, argv if argv is not None else sys.argv[2:]
            )
            if cfg.report:
                t_report = time.perf_counter()
                report = build_report(run_dir)
                if report is not None:
                    status["report"] = {"ran": True, "seconds": time.perf_counter() - t_report}
                    results["report"] = {k: str(v) for k, v in report.items() if k in ("html", "md")}
    results["seconds"] = time.perf_counter() - t0
    results["dir"] = str(run_dir)
    return results
