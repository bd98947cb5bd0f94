"""``multimsd train [hydra overrides]``, or on several processes ``accelerate launch -m multimsd.train …``
(the checkout's ``train.py`` is the same entry point: ``accelerate launch train.py …``).

A thin Hydra entry point around :func:`multimsd.training.loop.run`; the configs are the packaged ones
(:func:`multimsd.paths.conf_dir`). ``--config-dir DIR`` adds a directory of your own, laid out like ``conf/``.
"""

from __future__ import annotations

import sys

import hydra
from hydra.core.config_store import ConfigStore
from omegaconf import DictConfig

import multimsd.training.kinds  # noqa: F401  (registers every model kind and its options: model=<kind>)
from multimsd.cli import preload_plugins
from multimsd.paths import conf_dir
from multimsd.pipeline.cli import check_command_line
from multimsd.training.config import TrainConfig

ConfigStore.instance().store(name="train_schema", node=TrainConfig)


@hydra.main(version_base="1.3", config_path=str(conf_dir()), config_name="train")
def hydra_main(cfg: DictConfig) -> float | None:
    from multimsd.cli import run_stage
    from multimsd.training.loop import run

    results = run_stage(run, cfg)
    # The value a Hydra sweeper optimises: the paper's model-selection criterion.
    return (results.get("after") or {}).get("mean_sari_bleu")


def main() -> float | None:
    """The command: plugins named on the command line (``plugins=[…]``) are imported first, so the options
    they register are part of the schema Hydra composes and checks; the command line is checked before
    anything runs (one error line and exit 2 for a misspelt key, with or without ``+``). An interrupt is one
    line too (:mod:`multimsd.interrupts`)."""
    from multimsd import interrupts

    # Ctrl-C / SIGTERM anywhere in the command (start-up, Hydra, the stage): one line, exit 130 / 143
    with interrupts.installed(), interrupts.guard():
        preload_plugins()
        check_command_line("train", sys.argv[1:])
        return hydra_main()


if __name__ == "__main__":
    main()
