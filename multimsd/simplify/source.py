"""MODEL of ``multimsd simplify``: which system simplifies, with which training config and which weights.

MODEL is

* a run directory of ``multimsd run`` (``run.json``): the best system that has a model, by the evaluation's
  ranking (``results.json`` → ``ranking.overall``, the one rule for "best" of :mod:`multimsd.metrics.best`),
  or ``--system NAME``. Copy baselines have no model; of a sweep only the system the sweep selected on
  validation (``run.json`` → ``sweep.selected``) is a candidate, so the test split does not choose θ here
  either. When every candidate is flagged (degenerate outputs), the first of them in the ranking is used,
  with a warning naming its flags. The system's config is the one the run trained it with, rebuilt by the
  run's own planner (:func:`multimsd.pipeline.run.plan`) from the config recorded in ``run.json``; its
  weights are ``systems/<name>/best/`` (a 0-shot prompted system: the pretrained model as it is);
* a training output directory (``train_config.json`` and ``best/``): its recorded model / data / loss /
  optimiser settings over :class:`~multimsd.training.config.TrainConfig`'s defaults (its ``eval.*`` are the
  defaults: ``train_config.json`` does not record them).

* a plain model, prompted 0-shot with the project's instruction (:func:`zero_shot_config`).

``key=value`` overrides (``eval.*`` only) are merged into
the config, OmegaConf's dotlist rules.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from pathlib import Path

from omegaconf import OmegaConf
from omegaconf.errors import OmegaConfBaseException

from multimsd.errors import MultimsdError
from multimsd.training.config import TrainConfig

log = logging.getLogger("multimsd.simplify")

RUN_MARKER = "run.json"  # = pipeline.run.RUN_MARKER; the planner is imported for a run directory only
TRAIN_MARKER = "train_config.json"


@dataclass
class Source:
    """The system that simplifies: its name, its config, its trained weights (None: the pretrained model as
    it is, a 0-shot system) and the path written into every record (``model``)."""

    system: str
    config: TrainConfig
    weights: Path | None
    path: Path


def resolve(model: str, system: str | None = None, overrides: list[str] | None = None) -> Source:
    """MODEL (a run directory or a training output directory) → its :class:`Source`; one error line when it
    is neither, has no system with a model, or ``system`` is not one of its systems."""
    path = Path(model).expanduser().resolve()
    if path.is_dir() and (path / RUN_MARKER).is_file():
        name, cfg, weights = from_run(path, system)
    elif path.is_dir() and (path / TRAIN_MARKER).is_file():
        if system is not None:
            raise MultimsdError(f"--system {system}: MODEL {model} is a training output directory, not a run")
        name, cfg, weights = path.name, saved_config(path) or train_dir_config(path), path / "best"
        if not weights.is_dir():
            raise MultimsdError(f"MODEL {model}: no best/ model in it (its training did not finish)")
    else:
        if system is not None:
            raise MultimsdError(f"--system {system}: MODEL {model} is not a run directory")
        name, cfg, weights = model, zero_shot_config(model), None
        return Source(name, with_overrides(cfg, overrides or []), None, Path(model))
    return Source(name, with_overrides(cfg, overrides or []), weights, path if weights is None else weights)


# ------------------------------------------------------------------------------------------- a run
def _read_json(path: Path, what: str) -> dict:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise MultimsdError(f"{path}: missing ({what})") from None
    except (OSError, ValueError) as e:
        raise MultimsdError(f"{path}: cannot be read ({what}): {e}") from None
    if not isinstance(data, dict):
        raise MultimsdError(f"{path}: not a JSON object ({what})")
    return data


def from_run(run_dir: Path, system: str | None):
    """(name, composed train config, weights directory or None) of the run's chosen system."""
    info = _read_json(run_dir / RUN_MARKER, "the run's record")
    systems: dict = info.get("systems") or {}
    stages = {s.system: s for s in run_plan(run_dir, info) if s.kind == "train"}
    candidates = {n: why_not(run_dir, n, sc, stages.get(n)) for n, sc in systems.items()}
    if system is not None:
        if system not in systems:
            raise MultimsdError(f"--system {system}: no such system in {run_dir} ({', '.join(systems)})")
        if candidates[system]:
            raise MultimsdError(f"--system {system}: {candidates[system]}")
        name = system
    else:
        name = pick(run_dir, info, {n for n, why in candidates.items() if not why}, candidates)
    weights = run_dir / "systems" / name / "best" if systems[name]["kind"] == "train" else None
    return name, stages[name].config, weights


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


def why_not(run_dir: Path, name: str, sc: dict, stage) -> str:
    """Why system ``name`` cannot simplify (empty: it can)."""
    kind = sc.get("kind")
    if kind == "copy" or stage is None:
        return "a copy baseline has no model"
    if kind == "icl":
        shots = stage.config.icl.shots
        return (
            f"{shots}-shot prompting is not supported yet (its shots are the run's validation pairs)"
            if shots
            else ""
        )
    best = run_dir / "systems" / name / "best"
    return "" if best.is_dir() else f"no trained model ({best} is missing: its training did not finish)"


def pick(run_dir: Path, info: dict, usable: set[str], why: dict[str, str]) -> str:
    """The best usable system by the evaluation's ranking; of a sweep only its selected system."""
    if not usable:
        reasons = "; ".join(f"{n}: {w}" for n, w in why.items())
        raise MultimsdError(f"{run_dir}: no system with a model to simplify with ({reasons})")
    sweep = info.get("sweep") or {}
    if sweep.get("selected"):
        chosen = sweep["selected"]
        keep = {chosen, *((sweep.get("seed_systems") or {}).get(chosen) or [])}
        swept = set(sweep.get("systems") or []) | {
            m for ms in (sweep.get("seed_systems") or {}).values() for m in ms
        }
        usable = {n for n in usable if n not in swept or n in keep}
    results = run_dir / "results.json"
    ranking = (
        (_read_json(results, "the run's results") if results.exists() else {}).get("ranking") or {}
    ).get("overall")
    if not ranking:
        raise MultimsdError(
            f"{results}: no ranking (the run's evaluation did not finish); name one with --system"
        )
    placed = [p for p in ranking if p.get("system") in usable]
    if not placed:
        raise MultimsdError(
            f"{results}: none of {', '.join(sorted(usable))} is ranked; name one with --system"
        )
    first = next((p for p in placed if not p.get("flagged")), None)
    if first is None:
        first = placed[0]
        log.warning(
            "every system with a model is flagged in the ranking; %s flagged (%s) is used",
            first["system"],
            ", ".join(first["flagged"]),
        )
    log.info(
        "system: %s (best by %s of %s)",
        first["system"],
        "the ranking",
        ", ".join(p["system"] for p in placed),
    )
    return first["system"]


# ------------------------------------------------------------------------------------------- a training dir
def saved_config(out: Path):
    """The whole config the training saved beside its outputs (``config.yaml``, decoding settings included), or
    None for one written before it did."""
    from multimsd.training.results import load_config

    try:
        return load_config(out)
    except (OSError, OmegaConfBaseException) as e:
        raise MultimsdError(
            f"{out / 'config.yaml'}: cannot be read: {str(e).strip().splitlines()[0]}"
        ) from None


def train_dir_config(out: Path):
    """The config of a training output directory: ``train_config.json`` (model, data, loss, optim, seed) over
    the schema's defaults, as :func:`multimsd.training.loop.to_train_config` reads a plain dict."""
    recorded = _read_json(out / TRAIN_MARKER, "the training's config")
    return OmegaConf.create({**recorded, "output": {"dir": str(out)}})


# ------------------------------------------------------------------------------------------- a plain model
def zero_shot_config(model: str):
    """The config that prompts ``model`` 0-shot with the project's instruction, as a run's ``zero_shot`` system:
    a local 🤗 model directory, a Hub id (read from the Hugging Face cache when the Hub is unreachable), or one
    of the project's own models (``offline:smollm2``, ``tiny:llama``). A decoder-only model must be a chat
    model (its tokenizer has a chat template); an encoder-decoder one gets the sentence as it is."""
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
            f"MODEL {model}: not a run directory ({RUN_MARKER}), a training output directory ({TRAIN_MARKER} "
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
    return OmegaConf.create({"model": settings, "mode": "icl", "icl": {"shots": 0}})


# ------------------------------------------------------------------------------------------- overrides
def with_overrides(cfg, overrides: list[str]) -> TrainConfig:
    """``cfg`` (a composed DictConfig, or a plain one) with the ``eval.*`` overrides merged, as a checked
    :class:`TrainConfig`; any other key, or a bad value, is one error line."""
    from multimsd.training.loop import to_train_config

    for o in overrides:
        key = o.split("=", 1)[0]
        if "=" not in o or not key.startswith("eval.") or key == "eval.":
            raise MultimsdError(f"{o}: only eval.KEY=VALUE overrides apply here (e.g. eval.num_beams=4)")
    try:
        merged = OmegaConf.merge(cfg, OmegaConf.from_dotlist(overrides))
    except OmegaConfBaseException as e:
        raise MultimsdError(f"override: {str(e).strip().splitlines()[0]}") from None
    return to_train_config(merged)
