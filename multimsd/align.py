"""``multimsd align [hydra overrides]`` (also ``python -m multimsd.align`` and the checkout's ``align.py``).

A thin Hydra entry point around :func:`multimsd.alignment.stage.run`; the configs are the packaged ones
(:func:`multimsd.paths.conf_dir`), so an installed wheel behaves like a checkout. ``--config-dir DIR`` adds a
directory of your own, laid out like ``conf/`` (e.g. ``DIR/experiment/my_run.yaml``).
"""

from __future__ import annotations

import hydra
from omegaconf import DictConfig

from multimsd.config import register_configs
from multimsd.paths import conf_dir

register_configs()


@hydra.main(version_base="1.3", config_path=str(conf_dir()), config_name="align")
def main(cfg: DictConfig) -> None:
    from multimsd.alignment.stage import run
    from multimsd.cli import run_stage

    run_stage(run, cfg)


if __name__ == "__main__":
    main()
