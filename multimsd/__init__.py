"""multimsd: multilingual medical text simplification.

Stages (each an importable ``run(cfg)`` behind a thin Hydra entry point in the repository root):
``multimsd.alignment.stage`` (article pairs -> aligned sentence-pair DatasetDict), more to come.
"""

__version__ = "0.1.0"

LANGUAGES: tuple[str, ...] = ("de", "en", "es", "fr", "it", "ja", "pt", "ru", "zh")
