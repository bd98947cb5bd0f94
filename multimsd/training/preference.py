"""``mode=dpo``: direct preference optimisation from a trained system, in the project's training loop.

TRL's ``DPOTrainer`` serves decoder-only models; fed mBART it puts prompt and completion into the encoder (a
wrong loss, silently). So DPO runs here, in the loop every other run uses (:mod:`multimsd.training.loop`:
Accelerate, accumulation, checkpoints, resume, interrupts, early stopping, the best model, predictions),
for every kind that samples (seq2seq and causal). What differs from fine-tuning, read top to bottom:

1. :func:`multimsd.training.loop.load_start` (in ``build``): the start system's best weights (``start``) in
   the freshly built model: the policy begins as the system it improves on;
2. :func:`build_pair_dataloaders` (instead of the pairs' tokenisation): the preference pairs of the training
   and validation sources, mined by :mod:`multimsd.training.mining` with the start model, together with the
   start model's log-probabilities of both outputs of each pair: the frozen reference of the DPO loss,
   computed once, so the run holds one model, never two. They are written to ``output.dir/pairs`` (a 🤗
   DatasetDict, ``pairs.json`` beside it with what the mining found) before training starts, and read back
   when the same run resumes;
3. :class:`DpoObjective` (instead of the weighted cross-entropy): a micro-batch is its pairs' chosen rows
   followed by their rejected rows; the policy's sequence log-probabilities come from the kind's own forward
   (:meth:`multimsd.training.forward.MicroBatchLoss.example_cross_entropy`, chunked where it applies), the
   loss is :func:`multimsd.training.dpo.dpo_loss` summed over the pairs and divided by the step's pairs over
   all processes, as the token loss is divided by the step's tokens. The validation loss is the DPO loss of
   the validation pairs (log 2 before training: the policy is its reference).
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

import torch

from multimsd.console import progress_bar
from multimsd.errors import MultimsdError
from multimsd.fsutil import atomic_directory
from multimsd.training.data import Collator, eval_dataloader, loader_generator
from multimsd.training.dpo import dpo_loss
from multimsd.training.forward import Forward, MicroBatchLoss

log = logging.getLogger(__name__)

PAIRS_DIR = "pairs"  # in output.dir: the mined pairs (a DatasetDict) and pairs.json
PAIRS_INFO = "pairs.json"


# ---------------------------------------------------------------------------------------------- 2. pairs
class PairCollator:
    """A batch of pairs as one batch of rows: the chosen rows, then the rejected rows (right-padded together
    by :class:`multimsd.training.data.Collator`), and ``ref`` ``[pairs, 2]``: the reference's log-probabilities
    of (chosen, rejected)."""

    def __init__(self, pad_id: int, *, shift: bool):
        self.rows = Collator(pad_id, shift=shift)

    def __call__(self, batch: list[dict]) -> dict[str, torch.Tensor]:
        out = self.rows([b["chosen"] for b in batch] + [b["rejected"] for b in batch])
        out["ref"] = torch.tensor([[b["ref_chosen"], b["ref_rejected"]] for b in batch], dtype=torch.float32)
        return out


def encode_pairs(kind, tokenizer, pairs: list[dict], max_length: int) -> list[dict]:
    """Each pair's chosen and rejected output encoded as a training row of its source (the kind's ``encode``),
    with the reference log-probabilities once known (0 until then)."""
    out = []
    for p in pairs:
        enc = {}
        for side in ("chosen", "rejected"):
            t = kind.encode(
                tokenizer, {"complex": p["source"], "simple": p[side], "lang": p["lang"]}, max_length
            )
            enc[side] = {"input_ids": t.input_ids, "labels": t.labels, "novel": t.novel}
        out.append(
            {
                **enc,
                "ref_chosen": p.get("ref_chosen_logp", 0.0),
                "ref_rejected": p.get("ref_rejected_logp", 0.0),
            }
        )
    return out


@torch.no_grad()
def reference_logps(losses: MicroBatchLoss, model, encoded: list[dict], collate, device, batch_size: int):
    """The (frozen) start model's log-probability of each pair's chosen and rejected output: [(c, r), ...]."""
    was = model.training
    model.eval()
    out: list[tuple[float, float]] = []
    bar = progress_bar(total=len(encoded), desc="reference log-probabilities", unit="pair")
    for at in range(0, len(encoded), batch_size):
        part = encoded[at : at + batch_size]
        batch = {k: t.to(device) for k, t in collate(part).items()}
        sums, _ = losses.example_cross_entropy(model, batch)
        logp = (-sums.double()).tolist()
        out += list(zip(logp[: len(part)], logp[len(part) :]))
        bar.update(len(part))
        if (at // batch_size) % 50 == 49:  # a line now and then where no bar is shown (a log, a batch job)
            log.info("reference log-probabilities: %d/%d pairs", len(out), len(encoded))
    bar.close()
    model.train(was)
    return out


def mine_split(s, rows: list[dict], what: str) -> tuple[list[dict], dict]:
    """Pairs of ``rows`` (the start model samples them) and the mining's statistics."""
    from multimsd.training.mining import mine_pairs, sample_outputs

    samples = sample_outputs(s.cfg, s.model, s.tokenizer, rows, s.accelerator, what)
    pairs, stats = mine_pairs(rows, samples, s.cfg.dpo.reward, s.cfg.dpo.fallback)
    s.accelerator.print(
        f"dpo pairs ({what}): {stats['pairs']} of {stats['sources']} sources "
        f"({stats['chosen_from_reference']} with the reference as chosen); samples failing a gate: "
        + ", ".join(f"{g} {v:.0%}" for g, v in stats["samples_failing"].items())
    )
    return pairs, stats


def mine(s) -> tuple[dict[str, list[dict]], dict]:
    """The pairs of the training sources (``dpo.max_sources`` of them, seeded) and of the validation sources
    (``eval.generate_max_rows`` per language), each with the reference's log-probabilities; written to
    ``output.dir/pairs`` by the main process."""
    from multimsd.training.mining import subset
    from multimsd.training.results import cap_per_language

    cfg, accelerator = s.cfg, s.accelerator
    if getattr(s.model, "hf_quantizer", None) is None:  # a quantized base is placed when it is loaded
        s.model.to(accelerator.device)
    sources = {
        "train": subset(s.rows["train"], cfg.dpo.max_sources, cfg.seed),
        "validation": cap_per_language(s.eval_rows("validation"), cfg.eval.generate_max_rows),
    }
    pairs, info = {}, {"start": str(cfg.start), "reward": dict(cfg.dpo.reward), "splits": {}}
    for split, rows in sources.items():
        pairs[split], info["splits"][split] = (
            mine_split(s, rows, split) if rows else ([], {"sources": 0, "pairs": 0})
        )
    if not pairs["train"]:
        raise MultimsdError(
            f"dpo: no preference pair among {len(sources['train'])} training sources (every sample passed the "
            "gates, or none did and dpo.fallback=skip); sample more (dpo.samples) or at a higher dpo.temperature"
        )
    collate = PairCollator(s.tokenizer.pad_token_id, shift=s.kind.shift_labels)
    encoded = {k: encode_pairs(s.kind, s.tokenizer, v, cfg.data.max_length) for k, v in pairs.items()}
    losses = s.kind.build_loss(
        cfg, s.model, s.tokenizer, accelerator, to_device(collate(encoded["train"][:1]), accelerator.device)
    )
    for split, rows in pairs.items():
        logps = reference_logps(
            losses, s.model, encoded[split], collate, accelerator.device, cfg.eval.batch_size
        )
        for p, (c, r) in zip(rows, logps):
            p["ref_chosen_logp"], p["ref_rejected_logp"] = c, r
    if accelerator.is_main_process:
        save_pairs(Path(s.out) / PAIRS_DIR, pairs, info, fingerprint(cfg))
    accelerator.wait_for_everyone()
    return pairs, info


def fingerprint(cfg) -> dict:
    from multimsd.training.checks import config_fingerprint

    return json.loads(json.dumps(config_fingerprint(cfg)))


def save_pairs(path: Path, pairs: dict[str, list[dict]], info: dict, fp: dict) -> None:
    """The pairs as a 🤗 DatasetDict at ``path`` with ``pairs.json`` (what mining found, the config it ran
    with), written whole or not at all."""
    import datasets

    with atomic_directory(path) as tmp:
        datasets.DatasetDict({k: datasets.Dataset.from_list(v) for k, v in pairs.items() if v}).save_to_disk(
            str(tmp)
        )
        (tmp / PAIRS_INFO).write_text(json.dumps({**info, "config": fp}, indent=2, ensure_ascii=False) + "\n")


def read_pairs(path: Path, fp: dict) -> tuple[dict[str, list[dict]], dict] | None:
    """The pairs a run with the same config mined before (a resumed run), or None."""
    import datasets

    try:
        info = json.loads((path / PAIRS_INFO).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if info.pop("config", None) != fp:
        return None
    dd = datasets.load_from_disk(str(path))
    return {k: (dd[k].to_list() if k in dd else []) for k in ("train", "validation")}, info


def to_device(batch: dict, device) -> dict:
    return {k: t.to(device) for k, t in batch.items()}


def build_pair_dataloaders(s) -> dict:
    """The pairs (read back when this run mined them before, else mined now), their loaders; returns the first
    training pair collated, the probe of the chunked loss's check."""
    cfg = s.cfg
    found = read_pairs(Path(s.out) / PAIRS_DIR, fingerprint(cfg)) if cfg.resume else None
    if found is not None:
        log.info("dpo: the pairs mined before, read from %s", Path(s.out) / PAIRS_DIR)
    pairs, info = found if found is not None else mine(s)
    s.results["pairs"] = info
    collate = PairCollator(s.tokenizer.pad_token_id, shift=s.kind.shift_labels)
    train = encode_pairs(s.kind, s.tokenizer, pairs["train"], cfg.data.max_length)
    s.train_dl = torch.utils.data.DataLoader(
        train,
        batch_size=cfg.optim.batch_size,
        shuffle=cfg.data.shuffle,
        collate_fn=collate,
        generator=loader_generator(cfg.seed),
    )
    if pairs["validation"]:
        val = encode_pairs(s.kind, s.tokenizer, pairs["validation"], cfg.data.max_length)
        s.val_dl = eval_dataloader(val, cfg.eval.batch_size, cfg.seed, collate)
    return collate(train[:1])


# ---------------------------------------------------------------------------------------------- 3. the loss
class DpoObjective:
    """The DPO loss of a micro-batch of pairs (module docstring), over the kind's forward (``rows``: the run's
    :class:`~multimsd.training.forward.MicroBatchLoss`, whose per-example cross-entropy is the negated
    sequence log-probability)."""

    def __init__(self, rows: MicroBatchLoss, beta: float, label_smoothing: float):
        self.rows, self.beta, self.label_smoothing = rows, beta, label_smoothing
        self._margins: list[torch.Tensor] = []

    @property
    def chunked(self) -> bool:
        return self.rows.chunked

    def items(self, batch: dict) -> int:
        """The step's loss is averaged over its pairs."""
        return int(batch["ref"].shape[0])

    def forward(self, model, batch: dict) -> Forward:
        """The pairs' rows through the model: each row's summed cross-entropy (its negated log-probability)."""
        return Forward(self.rows.example_cross_entropy(model, batch)[0])

    def objective(self, out: Forward, batch: dict, *, step: int, micro_batch: int) -> torch.Tensor:
        """The pairs' DPO losses, summed (the step divides by its pairs, :meth:`items`)."""
        losses, chosen, rejected = self.pair_losses(out, batch)
        self._margins.append(torch.stack([chosen, rejected], 1))
        return losses.sum()

    def pair_losses(self, out: Forward, batch: dict):
        """Per pair: the DPO loss, and the chosen and rejected outputs' implicit rewards."""
        logp = -out.output
        n = batch["ref"].shape[0]
        ref = batch["ref"].to(logp.device, logp.dtype)
        return dpo_loss(
            logp[:n], logp[n:], ref[:, 0], ref[:, 1], self.beta, self.label_smoothing, reduction="none"
        )

    def __call__(self, model, batch: dict, *, step: int, micro_batch: int) -> torch.Tensor:
        return self.objective(self.forward(model, batch), batch, step=step, micro_batch=micro_batch)

    def validation_terms(self, model, batch: dict) -> tuple[torch.Tensor, torch.Tensor]:
        losses, _, _ = self.pair_losses(self.forward(model, batch), batch)
        return losses, torch.ones_like(losses)

    def step_metrics(self) -> dict:
        """The step's implicit rewards (this process's pairs): their means, margin and how often the chosen
        output wins; read once a step (one wait for the device)."""
        if not self._margins:
            return {}
        r = torch.cat(self._margins).float()
        self._margins = []
        chosen, rejected, won = r[:, 0].mean(), r[:, 1].mean(), (r[:, 0] > r[:, 1]).float().mean()
        c, j, w = torch.stack([chosen, rejected, won]).tolist()
        return {"reward_chosen": c, "reward_rejected": j, "reward_margin": c - j, "reward_accuracy": w}
