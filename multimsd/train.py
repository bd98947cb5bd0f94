"""``multimsd train [hydra overrides]``, or on several processes ``accelerate launch -m multimsd.train …``
(the checkout's ``train.py`` is the same entry point: ``accelerate launch train.py …``).

A thin Hydra entry point around :func:`multimsd.training.loop.run`; the configs are the packaged ones
(:func:`multimsd.paths.conf_dir`). ``--config-dir DIR`` adds a directory of your own, laid out like ``conf/``.
"""

from __future__ import annotations

import hydra
from hydra.core.config_store import ConfigStore
from omegaconf import DictConfig

from multimsd.paths import conf_dir
from multimsd.training.config import TrainConfig

ConfigStore.instance().store(name="train_schema", node=TrainConfig)


@hydra.main(version_base="1.3", config_path=str(conf_dir()), config_name="train")
def main(cfg: DictConfig) -> float | None:
    from multimsd.cli import run_stage
    from multimsd.training.loop import run

    results = run_stage(run, cfg)
    # The value a Hydra sweeper optimises: the paper's model-selection criterion.
    return (results.get("after") or {}).get("mean_sari_bleu")


if __name__ == "__main__":
    main()
