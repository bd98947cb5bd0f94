"""multimsd: multilingual medical text simplification.

Stages (each an importable ``run(cfg)`` behind a thin Hydra command, ``multimsd.align`` / ``.train`` /
``.evaluate`` = ``multimsd align|train|evaluate``, wrapped by the checkout's ``align.py`` / ``train.py`` /
``evaluate.py``):
``multimsd.alignment.stage`` (article pairs -> aligned sentence-pair DatasetDict), ``multimsd.training.loop``
(fine-tuning and prediction) and ``multimsd.evaluation.stage`` (scores and report). The shared modules beside
them (config, io, text, gold, split, errors, paths, fsutil, buildcache) and the metric library
(``multimsd.metrics``) sit below the stages; ``multimsd.commands`` (what every command shares) above them, then
the commands (``multimsd.pipeline``: ``multimsd run``; ``multimsd.studio``; the stage commands) and the front
door ``multimsd.main`` (``multimsd COMMAND``). Imports point down, and no package imports another of its own
layer (tests/project/test_architecture.py).
"""

__version__ = "0.1.0"

LANGUAGES: tuple[str, ...] = ("de", "en", "es", "fr", "it", "ja", "pt", "ru", "zh")
