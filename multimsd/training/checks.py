"""What the training stage checks before it spends time: the settings (:func:`check_config`), and that an
output directory's checkpoints were written by this configuration before they are resumed
(:func:`check_resume_target`, on :func:`config_fingerprint`)."""

from __future__ import annotations

import json
from pathlib import Path

from omegaconf import OmegaConf

from multimsd.errors import MultimsdError
from multimsd.split import check_split_config
from multimsd.training.checkpoint import last_checkpoint
from multimsd.training.config import CONFIG_FILE, TrainConfig
from multimsd.training.decode import check_backend
from multimsd.training.kinds import get_kind
from multimsd.training.loss import check_theta
from multimsd.training.optimizers import check_optimizer

MODES = ("train", "icl", "dpo", "grpo", "predict")
STARTED = ("dpo", "grpo", "predict")  # the modes that start from a trained system (`start`)
TRL_MIN = (
    "1.16"  # the rl extra's floor: the "ref" adapter copy of a PEFT model's adapter (multimsd.training.grpo)
)
INSTALL = "pip install 'multimsd[rl]'"


def check_config(cfg: TrainConfig) -> None:
    if cfg.mode not in MODES:
        raise MultimsdError(f"mode={cfg.mode!r}: choose {', '.join(MODES)}")
    check_theta(cfg.loss.theta, "loss.theta")  # the loss's own check, before anything is loaded
    cfg.loss.chunked_mode()  # auto | true | false
    kind = get_kind(cfg.model.kind)  # an unknown kind: one error listing the registered ones
    check_optimizer(cfg.optim.optimizer)
    if cfg.optim.scheduler == "exponential" and not 0 < cfg.optim.gamma <= 1:
        raise MultimsdError(f"optim.gamma={cfg.optim.gamma}: the decay per step must be in (0, 1]")
    kind.check(cfg)  # the kind's own settings (the LSTM's sizes, mode=icl for chat models only, ...)
    # a decoding backend the kind does not have: at start-up, not at the first decode after an epoch
    check_backend(cfg.eval.backend, getattr(kind, "decode_backends", ("generate",)), cfg.model.kind)
    if (cfg.eval.do_sample or cfg.mode == "dpo") and not kind.supports_sampling:
        raise MultimsdError(
            f"model.kind={cfg.model.kind} does not sample outputs: eval.do_sample and mode=dpo need a "
            "transformers kind (causal, seq2seq)"
        )
    if cfg.eval.number_guard and not kind.supports_sampling:  # the same: 🤗 generate's logits processors
        raise MultimsdError(
            f"eval.number_guard: model.kind={cfg.model.kind} does not decode with 🤗 generate; use causal or seq2seq"
        )
    if cfg.eval.number_guard and cfg.eval.backend == "continuous":
        raise MultimsdError(
            "eval.number_guard: eval.backend=continuous takes no logits processor; use generate"
        )
    if cfg.eval.do_sample and cfg.eval.backend == "continuous":
        raise MultimsdError(
            "eval.do_sample: eval.backend=continuous decodes greedily; use generate or static"
        )
    if cfg.mode == "grpo":  # first: no TRL or a model it cannot train makes the start's checks moot
        check_grpo(cfg)
    if cfg.mode in STARTED:
        check_start(cfg)
    if cfg.mode == "dpo":
        check_dpo(cfg)
    if cfg.eval.early_stopping_metric not in ("loss", "sari"):
        raise MultimsdError(
            f"eval.early_stopping_metric={cfg.eval.early_stopping_metric!r}: choose loss or sari"
        )
    if cfg.eval.early_stopping_metric == "sari" and not cfg.eval.generate:
        raise MultimsdError(
            "eval.early_stopping_metric=sari needs eval.generate=true (SARI of generated outputs)"
        )
    if cfg.eval.generate_max_rows is not None and cfg.eval.generate_max_rows < 1:
        raise MultimsdError("eval.generate_max_rows must be >= 1, or null for every validation row")
    if cfg.optim.batch_size < 1 or cfg.optim.grad_accum < 1:
        raise MultimsdError("optim.batch_size and optim.grad_accum must be >= 1")
    if cfg.loss.chunk_size < 1:
        raise MultimsdError(f"loss.chunk_size={cfg.loss.chunk_size}: tokens per chunk, must be >= 1")
    if cfg.hub.push and not cfg.hub.repo_id:
        raise MultimsdError("hub.push=true needs hub.repo_id=<user>/<name>")
    check_split_config(cfg.data.split, "data.split")
    check_split_config(cfg.data.sample_split, "data.sample_split")


def check_dpo(cfg: TrainConfig) -> None:
    """mode=dpo: settings the pair miner and the loss can use."""
    from multimsd.metrics.rewards import check_spec
    from multimsd.training.dpo import check_dpo_settings

    d = cfg.dpo
    check_dpo_settings(d.beta, d.label_smoothing)
    if d.samples < 2:
        raise MultimsdError(f"dpo.samples={d.samples}: sample at least 2 outputs per source to compare")
    if d.temperature <= 0 or not 0 < d.top_p <= 1:
        raise MultimsdError(f"dpo.temperature={d.temperature}, dpo.top_p={d.top_p}: need > 0 and (0, 1]")
    if d.fallback not in ("reference", "skip"):
        raise MultimsdError(f"dpo.fallback={d.fallback!r}: choose reference or skip")
    if d.max_sources is not None and d.max_sources < 1:
        raise MultimsdError(f"dpo.max_sources={d.max_sources}: at least 1, or null for every source")
    check_spec(d.reward)


def check_trl() -> None:
    """One error line when TRL is missing or older than the extra's floor; nothing is imported."""
    import importlib.metadata
    import importlib.util

    try:
        found = importlib.util.find_spec("trl") is not None
        version = importlib.metadata.version("trl") if found else None
    except (ImportError, ValueError, importlib.metadata.PackageNotFoundError):
        found, version = False, None  # a broken install, or an import made to fail (tests)
    if not found:
        raise MultimsdError(f"mode=grpo needs TRL, the rl extra: {INSTALL}")
    from packaging.version import Version

    if version is not None and Version(version) < Version(TRL_MIN):
        raise MultimsdError(f"mode=grpo needs trl>={TRL_MIN} (installed: {version}): {INSTALL}")


def check_grpo(cfg: TrainConfig) -> None:
    """mode=grpo: TRL installed (a cheap look, no import), a causal model with a LoRA adapter, settings TRL's
    GRPOTrainer can use (multimsd.training.grpo)."""
    from multimsd.metrics.rewards import check_spec
    from multimsd.training.kinds.causal import CausalKind

    check_trl()
    if not isinstance(get_kind(cfg.model.kind), CausalKind):
        raise MultimsdError(
            f"mode=grpo: model.kind={cfg.model.kind}; GRPO through TRL serves decoder-only (causal) models. "
            "For mBART (seq2seq) use mode=dpo"
        )
    if not get_kind(cfg.model.kind).settings(cfg.model).lora.enabled:
        raise MultimsdError(
            "mode=grpo trains a LoRA adapter (its KL is to the start's adapter): model.lora.enabled=true, "
            "as the start system was trained"
        )
    g = cfg.grpo
    if g.beta <= 0:
        raise MultimsdError(f"grpo.beta={g.beta}: must be > 0 (the weight of the KL to the start system)")
    if g.num_generations < 2:
        raise MultimsdError(
            f"grpo.num_generations={g.num_generations}: at least 2 outputs per prompt to compare"
        )
    if g.temperature <= 0 or not 0 < g.top_p <= 1:
        raise MultimsdError(f"grpo.temperature={g.temperature}, grpo.top_p={g.top_p}: need > 0 and (0, 1]")
    if g.max_sources is not None and g.max_sources < 1:
        raise MultimsdError(f"grpo.max_sources={g.max_sources}: at least 1, or null for every source")
    if cfg.optim.scheduler not in ("linear", "constant", "cosine"):
        raise MultimsdError(
            f"optim.scheduler={cfg.optim.scheduler}: mode=grpo schedules through TRL: linear, constant or cosine"
        )
    check_spec(g.reward)


def check_start(cfg: TrainConfig) -> None:
    """mode=dpo / grpo / predict: a start system that exists and was trained with this run's model."""
    if not cfg.start:
        raise MultimsdError(
            f"mode={cfg.mode} needs start=<the trained system's directory> (config.yaml, best/)"
        )
    start = Path(cfg.start)
    if not (start / "best").is_dir():
        raise MultimsdError(f"start={start}: no trained weights there (best/); train that system first")
    saved = OmegaConf.load(start / CONFIG_FILE) if (start / CONFIG_FILE).is_file() else None
    if saved is not None:
        mine = OmegaConf.to_container(OmegaConf.structured(cfg.model))
        theirs = OmegaConf.to_container(saved.get("model", {}))
        differ = sorted(k for k in mine if k != "name" and k in theirs and mine[k] != theirs[k])
        if differ:
            raise MultimsdError(
                f"start={start} was trained with other model settings ({', '.join(differ)}); "
                f"mode={cfg.mode} runs with the start system's model"
            )


def config_fingerprint(cfg: TrainConfig) -> dict:
    """What a checkpoint must agree on to be resumed: the model, data and optimisation (not eval knobs), and
    the preference stage's settings (the pairs it mines and its loss)."""
    c = OmegaConf.to_container(OmegaConf.structured(cfg))
    return {k: c[k] for k in ("model", "data", "loss", "optim", "seed", "dpo", "start")}


def check_resume_target(out: Path, fingerprint: dict, cfg: TrainConfig) -> None:
    """A checkpoint directory written by a *different* configuration is never resumed or overwritten."""
    if cfg.mode in ("train", "dpo") and not cfg.resume and last_checkpoint(out) is not None:
        raise MultimsdError(
            f"{out} already holds checkpoints; pass resume=true to continue, or another output.dir"
        )
    saved = out / "train_config.json"
    if cfg.mode in ("train", "dpo") and cfg.resume and saved.exists():
        old = json.loads(saved.read_text(encoding="utf-8"))
        new = json.loads(json.dumps(fingerprint))
        defaults = json.loads(json.dumps(config_fingerprint(kind_defaults(cfg))))
        diff = sorted(k for k in new if not same_setting(old.get(k), new[k], defaults.get(k)))
        if diff:
            raise MultimsdError(
                f"{out} holds checkpoints of a different configuration (differs in: {', '.join(diff)}); "
                f"choose another output.dir or pass resume=false with a fresh output.dir"
            )


def kind_defaults(cfg: TrainConfig) -> TrainConfig:
    """The schema's defaults for a run of ``cfg``'s model kind (the kind's own options included)."""
    from multimsd.training.kinds import MODEL_KINDS

    base = TrainConfig()
    kind = MODEL_KINDS.get(cfg.model.kind)
    if kind is not None:
        base.model = kind.settings(base.model)
    return base


def same_setting(old, new, default) -> bool:
    """Whether a saved fingerprint (``old``) describes the run of ``new``: equal, except that a key added to the
    schema after the checkpoint was written counts as equal while this run leaves it at its ``default`` (a newer
    multimsd resumes an older run's checkpoints unless a new setting is really used)."""
    if isinstance(new, dict) and isinstance(old, dict):
        defaults = default if isinstance(default, dict) else {}
        return all(
            same_setting(old[k], v, defaults.get(k)) if k in old else v == defaults.get(k, object())
            for k, v in new.items()
        ) and set(old) <= set(new)
    return old == new
