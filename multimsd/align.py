"""``multimsd align [hydra overrides]`` (also ``python -m multimsd.align`` and the checkout's ``align.py``).

A thin Hydra entry point around :func:`multimsd.alignment.stage.run`; the configs are the packaged ones
(:func:`multimsd.paths.conf_dir`), so an installed wheel behaves like a checkout. ``--config-dir DIR`` adds a
directory of your own, laid out like ``conf/`` (e.g. ``DIR/experiment/my_run.yaml``).
"""

from __future__ import annotations

import sys

import hydra
from omegaconf import DictConfig

import multimsd.alignment.aligners  # noqa: F401  (registers every aligner and its options: aligner=<name>)
from multimsd.cli import preload_plugins
from multimsd.config import register_configs
from multimsd.paths import conf_dir
from multimsd.pipeline.cli import check_command_line

register_configs()


@hydra.main(version_base="1.3", config_path=str(conf_dir()), config_name="align")
def hydra_main(cfg: DictConfig) -> None:
    from multimsd.alignment.stage import run
    from multimsd.cli import run_stage

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
        check_command_line("align", sys.argv[1:])
        return hydra_main()


if __name__ == "__main__":
    main()
