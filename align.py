"""Alignment stage entry point: ``python align.py [hydra overrides]`` (see ``--help``).

A thin Hydra wrapper; the stage itself is :func:`multimsd.alignment.stage.run`, importable and testable on its own.
"""

import hydra
from omegaconf import DictConfig

from multimsd.config import register_configs

register_configs()


@hydra.main(version_base="1.3", config_path="conf", config_name="align")
def main(cfg: DictConfig) -> None:
    from multimsd.alignment.stage import run
    from multimsd.cli import run_stage

    run_stage(run, cfg)


if __name__ == "__main__":
    main()
