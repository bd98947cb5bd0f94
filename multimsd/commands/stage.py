"""A stage's command: ``multimsd align|train|evaluate`` (also ``python -m multimsd.align`` …, ``accelerate
launch -m multimsd.train`` and the checkout's ``align.py`` / ``train.py`` / ``evaluate.py``). One factory,
:func:`stage_command`, makes the three; :func:`run_stage` runs a stage under the error contract: logging, one
``error:`` line and exit 2 for bad input, one ``interrupted …`` line for Ctrl-C / SIGTERM."""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Callable
from typing import Any

from multimsd.commands.compose import check_command_line, register_schemas
from multimsd.commands.plugins import load_plugins, preload_plugins
from multimsd.paths import conf_dir

# Library chatter ("Loading weights", prompt lists, SIMD builds) hides our own progress; warnings still show.
NOISY_LOGGERS = ("faiss", "sentence_transformers", "transformers", "peft", "accelerate", "gensim")


def stage_command(name: str, run: Callable[[Any], Any]) -> Callable[[list[str] | None], Any]:
    """The command ``multimsd <name>``: Hydra's ``@hydra.main`` over the packaged ``conf/<name>.yaml``
    (:func:`multimsd.paths.conf_dir`, so an installed wheel behaves like a checkout; ``--config-dir DIR`` adds
    a directory of your own), whose job is ``run(cfg)`` under :func:`run_stage`; what ``run`` returns is the
    job's return value (the number a Hydra sweeper optimises).

    The returned ``main(argv=None)`` (``argv``: the command's arguments; default ``sys.argv[1:]``) registers
    the schemas, imports the plugins named on the command line (``plugins=[…]``) so the options they register
    are part of the schema Hydra composes, checks the command line before anything runs (one error line and
    exit 2 for a misspelt key, with or without ``+``) and hands it to Hydra. An interrupt anywhere in it is
    one line too (:mod:`multimsd.interrupts`)."""
    import hydra

    def job(cfg: Any) -> Any:
        return run_stage(run, cfg)

    # Hydra names the job after its function's module (hydra.job.name: the SLURM job's name, a sweep's
    # records): the command's, as when each command module had its own @hydra.main.
    job.__module__ = f"multimsd.{name}"
    hydra_main = hydra.main(version_base="1.3", config_path=str(conf_dir()), config_name=name)(job)

    def main(argv: list[str] | None = None) -> None:
        from multimsd import interrupts

        if argv is not None:  # Hydra reads sys.argv itself
            sys.argv = [f"multimsd {name}", *argv]
        # Ctrl-C / SIGTERM anywhere in the command (start-up, Hydra, the stage): one line, exit 130 / 143
        with interrupts.installed(), interrupts.guard():
            register_schemas()
            preload_plugins()
            check_command_line(name, sys.argv[1:])
            hydra_main()

    main.__doc__ = f"``multimsd {name} [hydra overrides]`` (see ``--help``)."
    return main


def run_stage(run: Callable[[Any], Any], cfg: Any) -> Any:
    """Run a stage; a :class:`MultimsdError` becomes one ``error: …`` line on stderr and exit status 2, an
    interrupt (Ctrl-C, SIGTERM: :mod:`multimsd.interrupts`) one ``interrupted …`` line and 130 / 143."""
    from multimsd import interrupts
    from multimsd.console import quiet_console
    from multimsd.errors import MultimsdError
    from multimsd.fsutil import write_error
    from multimsd.launcher import is_main_process

    quiet_console()  # library deprecation warnings off, log lines apart from progress bars (commands only)
    # Our notes ("LoRA: … trainable") from the launcher's rank 0 only: one line per launch, not one per process;
    # warnings from every process (multimsd.launcher).
    logging.getLogger("multimsd").setLevel(logging.INFO if is_main_process() else logging.WARNING)
    for name in NOISY_LOGGERS:
        logging.getLogger(name).setLevel(logging.WARNING)
    # bitsandbytes warns at import, in every process, on CPUs with AVX512-BF16, that it could not fetch a CPU
    # kernel from the Hub ("pip install kernels"): nothing a user of a CPU run can act on (GPUs never use it)
    logging.getLogger("bitsandbytes").setLevel(logging.ERROR)
    try:
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()
    except ImportError:  # pragma: no cover - transformers is a dependency
        pass
    # SIGTERM too raises where the stage is (already so when the command's main() installed the handlers)
    with interrupts.installed():
        try:
            load_plugins(list(cfg.get("plugins") or []) if hasattr(cfg, "get") else [])
            return run(cfg)
        except BaseException as e:
            if interrupts.is_interrupt(e):  # where it stopped and how to go on, from the stage's notes
                interrupts.exit_interrupted(e)
            # A full disk where no writer named its output (a mkdir) is the user's to fix too (multimsd.fsutil).
            err = e if isinstance(e, MultimsdError) else write_error(e) if isinstance(e, OSError) else None
            if err is None:
                raise
            # One clear line for input/environment problems; tracebacks are for bugs.
            interrupts.close_progress_bars()  # a stage can fail with its bar open (a full disk at a checkpoint)
            print(f"error: {err}", file=sys.stderr)
            sys.exit(2)


class CommandParser(argparse.ArgumentParser):
    """The argument parser of a command over paths (``multimsd simplify``, ``multimsd export``): no ``-h`` of its
    own (:func:`path_command` prints the command's usage text), and a usage error is one line naming the command
    and its ``--help``, exit 2."""

    def __init__(self, command: str):
        super().__init__(prog=f"multimsd {command}", add_help=False)

    def error(self, message: str):
        print(f"error: {self.prog}: {message} ({self.prog} --help)", file=sys.stderr)
        sys.exit(2)


def path_command(
    argv: list[str], usage: str, parse: Callable[[list[str]], Any], work: Callable[[Any], Any]
) -> None:
    """The body of a command over paths: ``--help`` prints ``usage``; otherwise the arguments are parsed
    (``parse``: a :class:`CommandParser`'s), log lines go to the console, and ``work(args)`` runs under
    :func:`run_stage`'s contract (an error: one line, exit 2; an interrupt: one line, 130 / 143)."""
    from multimsd import interrupts

    with interrupts.installed(), interrupts.guard():
        if not argv or "-h" in argv or "--help" in argv:
            print(usage)
            return
        args = parse(argv)
        logging.basicConfig(
            level=logging.INFO, format="%(asctime)s %(name)s: %(message)s", datefmt="%H:%M:%S"
        )
        run_stage(lambda _cfg: work(args), None)
