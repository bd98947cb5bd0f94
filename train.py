"""Training stage entry point: ``accelerate launch train.py [hydra overrides]`` (see ``--help``).

A thin Hydra wrapper; the stage itself is :func:`multimsd.training.loop.run`.
"""

import hydra
from hydra.core.config_store import ConfigStore
from omegaconf import DictConfig

from multimsd.training.config import TrainConfig

ConfigStore.instance().store(name="train_schema", node=TrainConfig)


@hydra.main(version_base="1.3", config_path="conf", config_name="train")
def main(cfg: DictConfig) -> float | None:
    from multimsd.cli import run_stage
    from multimsd.training.loop import run

    results = run_stage(run, cfg)
    # The value a Hydra sweeper optimises: the paper's model-selection criterion.
    return (results.get("after") or {}).get("mean_sari_bleu")


if __name__ == "__main__":
    main()
