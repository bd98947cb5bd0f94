"""Alignment stage entry point: ``python align.py [hydra overrides]`` (see ``--help``).

A thin Hydra wrapper; the stage itself is :func:`multimsd.align.run`, importable and testable on its own.
"""

import logging
import sys

import hydra
from omegaconf import DictConfig

from multimsd.config import register_configs

register_configs()


@hydra.main(version_base="1.3", config_path="conf", config_name="align")
def main(cfg: DictConfig) -> None:
    from multimsd.align import run
    from multimsd.errors import MultimsdError

    logging.getLogger("multimsd").setLevel(logging.INFO)
    logging.getLogger("faiss").setLevel(logging.WARNING)  # its loader logs which SIMD build it picked
    # Library chatter ("Loading weights", prompt lists) hides our own progress; warnings still show.
    for name in ("sentence_transformers", "transformers"):
        logging.getLogger(name).setLevel(logging.WARNING)
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    try:
        run(cfg)
    except MultimsdError as e:
        # One clear line for input/environment problems; tracebacks are for bugs.
        print(f"error: {e}", file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":
    main()
