"""MODEL of ``multimsd simplify``: which system simplifies, with which training config and which weights.

MODEL is

* a run directory of ``multimsd run`` (``run.json``): the best system that has a model, by the evaluation's
  ranking (``results.json`` → ``ranking.overall``, the one rule for "best" of :mod:`multimsd.metrics.best`),
  or ``--system NAME``. Copy baselines have no model; of a sweep only the system the sweep selected on
  validation (``run.json`` → ``sweep.selected``) is a candidate, so the test split does not choose θ here
  either. When every candidate is flagged (degenerate outputs), the first of them in the ranking is used,
  with a warning naming its flags. The system's config is the one saved beside its outputs
  (``systems/<name>/config.yaml``; a run made before those were saved: rebuilt by the run's own planner,
  :func:`multimsd.pipeline.run.plan`, from the config recorded in ``run.json``); its weights are
  ``systems/<name>/best/`` (a prompted system: the pretrained model as it is, and a k-shot one's examples as
  its evaluation drew them, ``shots.json``). A run that has not finished (no ``run.json`` yet: still running,
  or interrupted; its ``.stages/`` say it is a run) has no ranking: its systems whose training finished are
  named with ``--system NAME``, and without one the error line lists them. The choice and the
  loading are :mod:`multimsd.training.system`'s, which the studio's simplify view shares;
* a training output directory (``train_config.json`` and ``best/``): its ``config.yaml``, or for one written
  before those were saved its recorded model / data / loss / optimiser settings over
  :class:`~multimsd.training.config.TrainConfig`'s defaults (``eval.*`` then the defaults);
* a plain model, prompted 0-shot with the project's instruction (:func:`zero_shot_config`).

``key=value`` overrides (``eval.*`` only, checked by :func:`~multimsd.simplify.checks.check_overrides`) are
merged into the config, OmegaConf's dotlist rules. A MODEL that is not there is one line before anything else
(:func:`~multimsd.simplify.checks.check_model`).
"""

from __future__ import annotations

import logging
from pathlib import Path

from omegaconf import OmegaConf
from omegaconf.errors import OmegaConfBaseException

from multimsd.errors import MultimsdError
from multimsd.simplify.checks import check_model, check_overrides
from multimsd.training.config import TrainConfig
from multimsd.training.hub import PROMPT_FILE
from multimsd.training.system import (
    CONFIG_FILE,
    RUN_MARKER,
    STAGES_DIR,
    System,
    choose,
    is_run_dir,
    read_json,
    read_run,
    saved_config,
    to_system,
    why_not,
)

log = logging.getLogger("multimsd.simplify")

TRAIN_MARKER = "train_config.json"


def resolve(model: str, system: str | None = None, overrides: list[str] | None = None) -> System:
    """MODEL (a run directory, a training output directory or a model) → its
    :class:`~multimsd.training.system.System`; one error line when it is none of them, has no system with a
    model, or ``system`` is not one of its systems (:func:`~multimsd.training.system.choose`, the studio's lookup
    too); the overrides and that MODEL is there are checked first (:mod:`multimsd.simplify.checks`)."""
    check_overrides(overrides or [])
    check_model(model)
    path = Path(model).expanduser().resolve()
    if path.is_dir() and is_run_dir(path):
        name, cfg, sys_dir = from_run(path, system)
    elif path.is_dir() and ((path / TRAIN_MARKER).is_file() or (path / CONFIG_FILE).is_file()):
        if system is not None:
            raise MultimsdError(f"--system {system}: MODEL {model} is a training output directory, not a run")
        cfg = saved_config(path) or train_dir_config(path)
        if why := why_not(path, OmegaConf.select(cfg, "mode", default="train"), cfg):
            raise MultimsdError(f"MODEL {model}: {why}")
        name, sys_dir = path.name, path
    else:
        if system is not None:
            raise MultimsdError(f"--system {system}: MODEL {model} is not a run directory")
        return System(model, with_overrides(zero_shot_config(model), overrides or []), None, Path(model))
    return to_system(name, with_overrides(cfg, overrides or []), sys_dir)


# ------------------------------------------------------------------------------------------- a run
def from_run(run_dir: Path, system: str | None):
    """(name, config, directory) of the run's chosen system. Its config is the one saved
    beside its outputs (``systems/<name>/config.yaml``); a run made before those were saved is planned again
    from the config ``run.json`` records."""

    def replan(info: dict) -> dict:
        return {s.system: s.config for s in run_plan(run_dir, info) if s.kind == "train"}

    run = read_run(run_dir, replan)
    chosen = choose(run, system)
    if chosen.name is None:
        raise MultimsdError(chosen.why if system is None else f"--system {system}: {chosen.why}")
    name = chosen.name
    if not run.finished:
        log.info("the run has not finished; %s", run.listing())
    return name, run.configs[name], run_dir / "systems" / name


def run_plan(run_dir: Path, info: dict) -> list:
    """The run's stages as its planner makes them from the config run.json records (the run directory as it
    is now: one that was moved plans into its new place)."""
    from multimsd.commands.plugins import load_plugins
    from multimsd.pipeline.config import RunConfig
    from multimsd.pipeline.run import plan

    recorded = info.get("config")
    if not isinstance(recorded, dict):
        raise MultimsdError(f"{run_dir / RUN_MARKER}: no config recorded (written by an older multimsd?)")
    try:
        cfg = OmegaConf.merge(OmegaConf.structured(RunConfig), recorded)
    except OmegaConfBaseException as e:
        raise MultimsdError(f"{run_dir / RUN_MARKER}: its config: {str(e).strip().splitlines()[0]}") from None
    cfg.output.dir = str(run_dir)
    load_plugins(list(cfg.plugins))
    return plan(cfg, run_dir)


# ------------------------------------------------------------------------------------------- a training dir
def train_dir_config(out: Path):
    """The config of a training output directory: ``train_config.json`` (model, data, loss, optim, seed) over
    the schema's defaults, as :func:`multimsd.training.loop.to_train_config` reads a plain dict."""
    recorded = read_json(out / TRAIN_MARKER, "the training's config")
    return OmegaConf.create({**recorded, "output": {"dir": str(out)}})


# ------------------------------------------------------------------------------------------- a plain model
def zero_shot_config(model: str):
    """The config that prompts ``model`` 0-shot with the project's instruction, as a run's ``zero_shot`` system:
    a local 🤗 model directory, a Hub id (read from the Hugging Face cache when the Hub is unreachable), or one
    of the project's own models (``offline:smollm2``, ``tiny:llama``). A decoder-only model must be a chat
    model (its tokenizer has a chat template); an encoder-decoder one gets the sentence as it is. A directory
    ``multimsd export`` wrote knows the languages it was trained on: its prompt's (``multimsd_prompt.json``)."""
    from transformers import AutoConfig, AutoTokenizer

    from multimsd.io import hub_reachable
    from multimsd.training.models.offline import resolve_model_path

    where = resolve_model_path(model)  # offline:/tiny: names are built on first use
    local = Path(where).expanduser()
    if model.startswith((".", "/", "~")) and not local.exists():
        raise MultimsdError(f"MODEL {model}: no such directory")
    offline = {} if local.exists() or hub_reachable() else {"local_files_only": True}
    try:
        config = AutoConfig.from_pretrained(where, **offline)
        tokenizer = AutoTokenizer.from_pretrained(where, **offline)
    except (OSError, ValueError):
        raise MultimsdError(
            f"MODEL {model}: not a run directory ({RUN_MARKER}, or {STAGES_DIR}/ while it runs), a training "
            f"output directory ({TRAIN_MARKER} "
            "and best/), nor a model that can be loaded here (a 🤗 model directory, or a Hub id in the "
            "Hugging Face cache or on a reachable Hub)"
        ) from None
    kind = "seq2seq" if getattr(config, "is_encoder_decoder", False) else "causal"
    if kind == "causal" and not getattr(tokenizer, "chat_template", None):
        raise MultimsdError(
            f"MODEL {model}: its tokenizer has no chat template; 0-shot prompting needs a chat (instruct) model"
        )
    settings = {"kind": kind, "name": Path(model).name or model, "pretrained": model}
    if kind == "causal":
        settings["lora"] = {"enabled": False}
    log.info("system: %s, prompted 0-shot (%s)", model, kind)
    cfg = {"model": settings, "mode": "icl", "icl": {"shots": 0}}
    prompt = local / PROMPT_FILE
    if prompt.is_file():  # an export: the instructions it holds are those of the languages it was trained on
        langs = sorted(read_json(prompt, "the prompt of an export").get("instructions") or {})
        if langs:
            cfg["data"] = {"languages": langs}
    return OmegaConf.create(cfg)


# ------------------------------------------------------------------------------------------- overrides
def with_overrides(cfg, overrides: list[str]) -> TrainConfig:
    """``cfg`` (a composed DictConfig, or a plain one) with the ``eval.*`` overrides merged, as a checked
    :class:`TrainConfig`; any other key, or a bad value, is one error line
    (:func:`~multimsd.simplify.checks.check_overrides`)."""
    from multimsd.training.loop import to_train_config

    check_overrides(overrides)
    try:
        merged = OmegaConf.merge(cfg, OmegaConf.from_dotlist(overrides))
    except OmegaConfBaseException as e:
        raise MultimsdError(f"override: {str(e).strip().splitlines()[0]}") from None
    return to_train_config(merged)
