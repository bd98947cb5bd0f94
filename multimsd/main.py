"""The ``multimsd`` command, the front door: ``multimsd COMMAND [arguments]`` hands the arguments to one of the
commands below (``python -m multimsd`` is the same). Each is imported only when it runs, by a plain import
statement, so the import graph (tests/test_architecture.py) shows every arrow."""

from __future__ import annotations

import sys
from collections.abc import Callable

COMMANDS = """\
usage: multimsd COMMAND [--help] [key=value ...]

Commands:
  run        the whole pipeline: align -> (gold) -> train / prompt every system -> evaluate -> report
  align      article pairs -> aligned sentence pairs (a DatasetDict); gold mode tunes θ
  train      fine-tune / prompt a simplification model (on several GPUs: accelerate launch -m multimsd.train)
  evaluate   SARI, BLEU, TER, chrF, METEOR, FKGL, medical terms, bootstrap intervals
  studio     a local web app over a run: alignments, gold alignments by hand, θ from that gold, blind rating
             of the outputs (multimsd studio PATH)
  simplify   a trained system simplifies new documents, sentence by sentence, with safety flags
             (multimsd simplify MODEL INPUT --out OUT)
run, align, train and evaluate read the same options (--help, --cfg job|hydra|all, --config-dir DIR) and
Hydra overrides (key=value); `multimsd COMMAND --help` lists the command's keys.
"""
NAMES = ("run", "align", "train", "evaluate", "studio", "simplify")


def command(name: str) -> Callable[[list[str]], object]:
    """The ``main(argv)`` of command ``name`` (one of :data:`NAMES`)."""
    if name == "run":
        from multimsd.pipeline.cli import main
    elif name == "align":
        from multimsd.align import main
    elif name == "train":
        from multimsd.train import main
    elif name == "evaluate":
        from multimsd.evaluate import main
    elif name == "studio":  # not a Hydra command: its own arguments (multimsd studio --help)
        from multimsd.studio.cli import main
    elif name == "simplify":  # not a Hydra command either (multimsd simplify --help)
        from multimsd.simplify.cli import main
    else:
        raise KeyError(name)
    return main


def main(argv: list[str] | None = None) -> None:
    from multimsd import interrupts

    argv = list(sys.argv[1:] if argv is None else argv)
    # Ctrl-C / SIGTERM anywhere (a command's start-up included): one ``interrupted …`` line, exit 130 / 143
    with interrupts.installed(), interrupts.guard():
        if not argv or argv[0] in ("-h", "--help", "help"):
            print(COMMANDS)
            return
        if argv[0] not in NAMES:
            print(f"error: unknown command {argv[0]!r} (choose {', '.join(NAMES)})", file=sys.stderr)
            sys.exit(2)
        command(argv[0])(argv[1:])


if __name__ == "__main__":
    main()
