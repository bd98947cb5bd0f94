"""multimsd: multilingual medical text simplification.

Stages (each an importable ``run(cfg)`` behind a thin Hydra entry point, ``multimsd.align`` / ``.train`` /
``.evaluate`` = ``multimsd align|train|evaluate``, wrapped by the checkout's ``align.py`` / ``train.py`` /
``evaluate.py``):
``multimsd.alignment.stage`` (article pairs -> aligned sentence-pair DatasetDict), ``multimsd.training.loop``
(fine-tuning and prediction) and ``multimsd.evaluation.stage`` (scores and report). The shared modules beside
them (config, io, text, gold, split, errors, paths, fsutil, buildcache, cli) and the metric library
(``multimsd.metrics``) sit below the stages; no stage imports another (tests/test_architecture.py).
"""

__version__ = "0.1.0"

LANGUAGES: tuple[str, ...] = ("de", "en", "es", "fr", "it", "ja", "pt", "ru", "zh")
