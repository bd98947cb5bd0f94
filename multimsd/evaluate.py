"""``multimsd evaluate [hydra overrides]`` (also ``python -m multimsd.evaluate`` and the checkout's
``evaluate.py``).

A thin Hydra entry point around :func:`multimsd.evaluation.stage.run`; the configs are the packaged ones
(:func:`multimsd.paths.conf_dir`). ``--config-dir DIR`` adds a directory of your own, laid out like ``conf/``.
This module is ``multimsd.evaluate``: it never shadows the 🤗 ``evaluate`` package (only a file named
``evaluate.py`` at the front of ``sys.path`` would; the checkout's script handles that case itself).
"""

from __future__ import annotations

import sys

import hydra
from omegaconf import DictConfig

from multimsd.cli import preload_plugins
from multimsd.config import register_configs
from multimsd.paths import conf_dir
from multimsd.pipeline.cli import check_command_line

register_configs()


@hydra.main(version_base="1.3", config_path=str(conf_dir()), config_name="evaluate")
def hydra_main(cfg: DictConfig) -> None:
    from multimsd.cli import run_stage
    from multimsd.evaluation.stage import run

    run_stage(run, cfg)


def main() -> None:
    """The command: plugins named on the command line (``plugins=[…]``) are imported first, so the options
    they register are part of the schema Hydra composes and checks; the command line is checked before
    anything runs (one error line and exit 2 for a misspelt key, with or without ``+``). An interrupt is one
    line too (:mod:`multimsd.interrupts`)."""
    from multimsd import interrupts

    # Ctrl-C / SIGTERM anywhere in the command (start-up, Hydra, the stage): one line, exit 130 / 143
    with interrupts.installed(), interrupts.guard():
        preload_plugins()
        check_command_line("evaluate", sys.argv[1:])
        return hydra_main()


if __name__ == "__main__":
    main()
