"""The ``multimsd`` command, the front door: ``multimsd COMMAND [arguments]`` hands the arguments to one of the
commands of :data:`COMMANDS` (``python -m multimsd`` is the same).

A command is one registration: a :class:`Command` line below naming the module whose ``main(argv)`` runs it
and the lines ``multimsd --help`` shows for it. Everything else follows from that line: the command list of
``--help``, the "unknown command" error, and the import graph (tests/project/test_architecture.py reads the module
names of these lines as imports of the front door). A module is imported only when its command runs, so
``multimsd --help`` costs no import of torch or Hydra. docs/extending.md ("A new command") says what a
command module holds.
"""

from __future__ import annotations

import importlib
import sys
import textwrap
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Command:
    """One command: its name, the module whose ``main(argv)`` runs it (``argv``: the arguments after the
    name), and its summary in ``multimsd --help``."""

    name: str
    module: str
    summary: str


COMMANDS = (
    Command(
        "run",
        "multimsd.pipeline.cli",
        "the whole pipeline: align -> (gold) -> train / prompt every system -> evaluate -> report",
    ),
    Command(
        "align",
        "multimsd.align",
        "article pairs -> aligned sentence pairs (a DatasetDict); gold mode tunes θ",
    ),
    Command(
        "train",
        "multimsd.train",
        "fine-tune / prompt a simplification model (on several GPUs: accelerate launch -m multimsd.train)",
    ),
    Command(
        "evaluate",
        "multimsd.evaluate",
        "SARI, BLEU, TER, chrF, METEOR, FKGL, medical terms, bootstrap intervals",
    ),
    Command(
        "studio",
        "multimsd.studio.cli",
        "a local web app over a run: alignments, gold alignments by hand, θ from that gold, blind rating of "
        "the outputs (multimsd studio PATH)",
    ),
    Command(
        "simplify",
        "multimsd.simplify.cli",
        "a trained system simplifies new documents, with safety flags (multimsd simplify MODEL INPUT --out OUT)",
    ),
    Command(
        "export",
        "multimsd.simplify.export",
        "a trained system as a standard 🤗 model directory: merged safetensors weights, tokenizer, decoding "
        "settings, model card (multimsd export MODEL --to DIR)",
    ),
)
NAMES = tuple(c.name for c in COMMANDS)
WIDTH = 110


def usage() -> str:
    """``multimsd --help``: every registered command with its summary."""
    lines = ["usage: multimsd COMMAND [--help] [arguments]", "", "Commands:"]
    for c in COMMANDS:
        wrapped = textwrap.wrap(c.summary, WIDTH - 13)
        lines.append(f"  {c.name:<10} {wrapped[0]}")
        lines += [" " * 13 + w for w in wrapped[1:]]
    lines += [
        "run, align, train and evaluate read the same options (--help, --cfg job|hydra|all, --config-dir DIR) and",
        "Hydra overrides (key=value); `multimsd COMMAND --help` shows what a command takes.",
    ]
    return "\n".join(lines) + "\n"


def command(name: str) -> Callable[[list[str]], object]:
    """The ``main(argv)`` of command ``name`` (one of :data:`NAMES`)."""
    for c in COMMANDS:
        if c.name == name:
            return importlib.import_module(c.module).main
    raise KeyError(name)


def main(argv: list[str] | None = None) -> None:
    from multimsd import interrupts

    argv = list(sys.argv[1:] if argv is None else argv)
    # Ctrl-C / SIGTERM anywhere (a command's start-up included): one ``interrupted …`` line, exit 130 / 143
    with interrupts.installed(), interrupts.guard():
        try:
            dispatch(argv)
        except BrokenPipeError:  # `multimsd simplify --help | head`: the reader left; no traceback
            import os

            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # Python's flush at exit too
            sys.exit(141)  # 128 + SIGPIPE, as a shell reports it


def dispatch(argv: list[str]) -> None:
    if not argv or argv[0] in ("-h", "--help", "help"):
        print(usage())
        return
    if argv[0] not in NAMES:
        print(f"error: unknown command {argv[0]!r} (choose {', '.join(NAMES)})", file=sys.stderr)
        sys.exit(2)
    command(argv[0])(argv[1:])


if __name__ == "__main__":
    main()
