"""``multimsd export MODEL --to DIR [--system NAME] [--adapter-only] [eval.KEY=VALUE ...]``: a trained system as a
standard 🤗 model directory.

MODEL is what ``multimsd simplify`` takes (:mod:`multimsd.simplify.source`): a run directory (its best system
with a model, or ``--system NAME``) or a training output directory. DIR gets what plain ``transformers``
loads (``AutoModelFor….from_pretrained(DIR)``) and what vLLM, TGI and llama.cpp's converter read:

* the weights as safetensors: a LoRA adapter merged into its base (a QLoRA base dequantized first: the weights
  the adapter was trained against), or with ``--adapter-only`` the adapter alone (``adapter_config.json``,
  for peft), its base named in it;
* the tokenizer;
* ``generation_config.json``: the settings the evaluation decoded with (the model kind's
  ``generation_settings``: beams, the length cap), ``eval.*`` overrides over them;
* for a chat model, ``multimsd_prompt.json``: the instruction per language and how the user turn is built;
* ``README.md``, a model card: YAML metadata (languages, metrics, and the base model and data as Hub ids where
  they have one: :func:`multimsd.training.hub.card_metadata`; ``license`` left to you), the training's scores
  and, from a run, the test scores per language with their bootstrap intervals.

The directory is written aside and renamed into place (:func:`multimsd.fsutil.atomic_directory`): an
interrupted export leaves nothing, and DIR must not exist yet, or be an earlier export (``--force``); a DIR
that cannot be written is refused before the model is loaded, and so are a MODEL that is not there and an
override that is not a decoding setting's, before torch or transformers is imported
(:mod:`multimsd.simplify.checks`).
``hub.push`` of a training uploads the same files (:func:`multimsd.training.hub.prepare_upload`).
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path

log = logging.getLogger("multimsd.export")

USAGE = """\
usage: multimsd export MODEL --to DIR [--system NAME] [--adapter-only] [--force] [eval.KEY=VALUE ...]

Writes a trained system as a standard 🤗 model directory: safetensors weights (a LoRA adapter merged into its
base), tokenizer, generation_config.json with the evaluation's decoding settings, the prompt of a chat model
(multimsd_prompt.json) and a model card (README.md) with the run's scores and their intervals; its metadata
names the base model and the data by Hub id, or leaves them out where they have none (never a local path).

  MODEL           a `multimsd run` directory (its best system with a model, as `multimsd simplify` picks it)
                  or a `multimsd train` output directory (train_config.json and best/)
  --to DIR        the directory written; it must not exist (or be an earlier export, with --force), and
                  its parent must be writable (checked before the model is loaded)
  --system NAME   this system of the run instead of the best; a run that has not finished (running or
                  interrupted) has no best yet: name one whose training finished (the error line lists them)
  --adapter-only  a LoRA system's adapter alone (for peft), not merged into its base
  --force         replace DIR when it is an earlier export
  eval.KEY=VALUE  the decoding settings written to generation_config.json, over the system's
                  (eval.num_beams=4, eval.max_new_tokens=128); other keys are refused

Example:
  multimsd export outputs/run --to simplifier
  python -c "from transformers import pipeline; print(pipeline('text-generation', 'simplifier'))"
Errors print one line and exit with status 2; nothing is written then.
"""
MARKER = "multimsd_export.json"  # what an earlier export holds: --force replaces only such a directory


def parse(argv: list[str]) -> argparse.Namespace:
    from multimsd.commands.stage import CommandParser

    p = CommandParser("export")
    p.add_argument("model")
    p.add_argument("--to", required=True)
    p.add_argument("--system")
    p.add_argument("--adapter-only", action="store_true")
    p.add_argument("--force", action="store_true")
    p.add_argument("overrides", nargs="*")
    return p.parse_intermixed_args(argv)


def checked(argv: list[str]) -> argparse.Namespace:
    """The parsed arguments with their overrides and MODEL checked: one error line, exit 2, before torch or
    transformers is imported (:mod:`multimsd.simplify.checks`)."""
    from multimsd.simplify.checks import before_work, check_model, check_overrides

    args = parse(argv)
    before_work(check_overrides, args.overrides)
    before_work(check_model, args.model)
    return args


def main(argv: list[str] | None = None) -> None:
    """``multimsd export …`` (``argv``: the arguments after ``export``; default ``sys.argv[1:]``)."""
    from multimsd.commands.stage import path_command

    path_command(
        list(sys.argv[1:] if argv is None else argv),
        USAGE,
        checked,
        lambda args: export(args.model, args.to, args.system, args.adapter_only, args.force, args.overrides),
    )


def check_target(to: Path, force: bool) -> None:
    """Refuse ``--to`` before any work (loading a model takes minutes): a directory that is not ours to replace,
    or a place where it cannot be written (its parent takes the directory written aside)."""
    from multimsd.errors import MultimsdError
    from multimsd.fsutil import check_writable_dir

    if to.exists() and not (to.is_dir() and not any(to.iterdir())):
        if not force:
            raise MultimsdError(f"--to {to}: exists; name a new directory (or --force to replace an export)")
        if not (to / MARKER).is_file():
            raise MultimsdError(f"--to {to}: exists and is not an export of multimsd; it is left as it is")
    check_writable_dir(to, "--to", aside=True)


def run_scores(model: Path, system: str) -> dict | None:
    """The system's test scores per language (with ``ci``) from a run's ``results.json``; None elsewhere."""
    results = model / "results.json"
    if not results.is_file():
        return None
    systems = json.loads(results.read_text(encoding="utf-8")).get("systems") or {}
    return systems.get(system)


def export(
    model: str,
    to: str,
    system: str | None = None,
    adapter_only: bool = False,
    force: bool = False,
    overrides: list[str] | None = None,
) -> Path:
    """Write the system of ``model`` into ``to`` (see the module's docstring), its decoding settings with the
    ``eval.*`` ``overrides``; returns ``to``."""
    from multimsd import interrupts
    from multimsd.errors import MultimsdError
    from multimsd.fsutil import atomic_directory
    from multimsd.simplify.source import resolve
    from multimsd.training.hub import _lora, prepare_upload

    target = Path(to).expanduser().resolve()
    check_target(target, force)
    source = resolve(model, system, overrides)
    cfg = source.config
    if source.weights is None:
        raise MultimsdError(
            f"system {source.name}: prompted {cfg.icl.shots}-shot, no trained weights; its model is "
            f"{cfg.model.pretrained}"
        )
    if cfg.model.kind == "lstm":
        raise MultimsdError(f"system {source.name}: the legacy LSTM is not a 🤗 transformers model")
    if adapter_only and not _lora(cfg):
        raise MultimsdError(f"--adapter-only: system {source.name} has no LoRA adapter (fully fine-tuned)")
    train_results = source.weights.parent / "all_results.json"
    results = json.loads(train_results.read_text(encoding="utf-8")) if train_results.is_file() else {}
    cfg.hub.merge_lora = not adapter_only
    scores = run_scores(Path(model).expanduser().resolve(), source.name)
    with interrupts.note(state=f"nothing written to {target}"), atomic_directory(target) as tmp:
        prepare_upload(cfg, source.weights, results, tmp, scores)
        (tmp / "multimsd_results.json").unlink(missing_ok=True)  # the card has the numbers; this is ours
        record = {"system": source.name, "source": str(source.path), "merged": not adapter_only}
        if overrides:
            record["overrides"] = list(overrides)
        (tmp / MARKER).write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    print(f"exported {source.name} to {target}")
    return target
