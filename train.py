"""Training stage entry point: ``accelerate launch train.py [hydra overrides]`` (see ``--help``).

A thin Hydra wrapper; the stage itself is :func:`multimsd.training.loop.run`.
"""

import logging
import sys

import hydra
from hydra.core.config_store import ConfigStore
from omegaconf import DictConfig

from multimsd.training.config import TrainConfig

ConfigStore.instance().store(name="train_schema", node=TrainConfig)


@hydra.main(version_base="1.3", config_path="conf", config_name="train")
def main(cfg: DictConfig) -> float | None:
    from multimsd.errors import MultimsdError
    from multimsd.training.loop import run

    logging.getLogger("multimsd").setLevel(logging.INFO)
    for name in ("transformers", "peft", "accelerate"):
        logging.getLogger(name).setLevel(logging.WARNING)
    try:
        results = run(cfg)
    except MultimsdError as e:
        print(f"error: {e}", file=sys.stderr)
        sys.exit(2)
    # The value a Hydra sweeper optimises: the paper's model-selection criterion.
    return (results.get("after") or {}).get("mean_sari_bleu")


if __name__ == "__main__":
    main()
