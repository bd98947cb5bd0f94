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
from multimsd.training.config import TrainConfig
from multimsd.training.decode import check_backend
from multimsd.training.kinds import get_kind
from multimsd.training.loss import check_theta
from multimsd.training.optimizers import check_optimizer


def check_config(cfg: TrainConfig) -> None:
    if cfg.mode not in ("train", "icl"):
        raise MultimsdError(f"mode={cfg.mode!r}: choose train or icl")
    check_theta(cfg.loss.theta, "loss.theta")  # the loss's own check, before anything is loaded
    kind = get_kind(cfg.model.kind)  # an unknown kind: one error listing the registered ones
    check_optimizer(cfg.optim.optimizer)
    if cfg.optim.scheduler == "exponential" and not 0 < cfg.optim.gamma <= 1:
        raise MultimsdError(f"optim.gamma={cfg.optim.gamma}: the decay per step must be in (0, 1]")
    kind.check(cfg)  # the kind's own settings (the LSTM's sizes, mode=icl for chat models only, ...)
    # a decoding backend the kind does not have: at start-up, not at the first decode after an epoch
    check_backend(cfg.eval.backend, getattr(kind, "decode_backends", ("generate",)), cfg.model.kind)
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


def config_fingerprint(cfg: TrainConfig) -> dict:
    """What a checkpoint must agree on to be resumed: the model, data and optimisation (not eval knobs)."""
    c = OmegaConf.to_container(OmegaConf.structured(cfg))
    return {k: c[k] for k in ("model", "data", "loss", "optim", "seed")}


def check_resume_target(out: Path, fingerprint: dict, cfg: TrainConfig) -> None:
    """A checkpoint directory written by a *different* configuration is never resumed or overwritten."""
    if cfg.mode == "train" and not cfg.resume and last_checkpoint(out) is not None:
        raise MultimsdError(
            f"{out} already holds checkpoints; pass resume=true to continue, or another output.dir"
        )
    saved = out / "train_config.json"
    if cfg.mode == "train" and cfg.resume and saved.exists():
        old = json.loads(saved.read_text(encoding="utf-8"))
        new = json.loads(json.dumps(fingerprint))
        defaults = json.loads(json.dumps(config_fingerprint(_kind_defaults(cfg))))
        diff = sorted(k for k in new if not _same(old.get(k), new[k], defaults.get(k)))
        if diff:
            raise MultimsdError(
                f"{out} holds checkpoints of a different configuration (differs in: {', '.join(diff)}); "
                f"choose another output.dir or pass resume=false with a fresh output.dir"
            )


def _kind_defaults(cfg: TrainConfig) -> TrainConfig:
    """The schema's defaults for a run of ``cfg``'s model kind (the kind's own options included)."""
    from multimsd.training.kinds import MODEL_KINDS

    base = TrainConfig()
    kind = MODEL_KINDS.get(cfg.model.kind)
    if kind is not None:
        base.model = kind.settings(base.model)
    return base


def _same(old, new, default) -> bool:
    """Whether a saved fingerprint (``old``) describes the run of ``new``: equal, except that a key added to the
    schema after the checkpoint was written counts as equal while this run leaves it at its ``default`` (a newer
    multimsd resumes an older run's checkpoints unless a new setting is really used)."""
    if isinstance(new, dict) and isinstance(old, dict):
        defaults = default if isinstance(default, dict) else {}
        return all(
            _same(old[k], v, defaults.get(k)) if k in old else v == defaults.get(k, object())
            for k, v in new.items()
        ) and set(old) <= set(new)
    return old == new
