"""Local 🤗 ``evaluate`` metric scripts backed by :mod:`multimsd.metrics` (load them offline, no Hub):

>>> import evaluate
>>> from multimsd.hf_metrics import metric_path
>>> sari = evaluate.load(metric_path("sari"))          # the directory multimsd/hf_metrics/sari
>>> sari.compute(sources=[...], predictions=[...], references=[[...], ...])

``evaluate.load`` copies the script into its modules cache (``$HF_HOME/modules``, or ``$HF_MODULES_CACHE``).
"""

from __future__ import annotations

from pathlib import Path

METRICS = ("sari",)


def metric_path(name: str) -> str:
    """Directory of the bundled metric ``name``, to pass to ``evaluate.load``."""
    if name not in METRICS:
        raise ValueError(f"unknown multimsd metric {name!r} (bundled: {', '.join(METRICS)})")
    return str(Path(__file__).resolve().parent / name)


__all__ = ["METRICS", "metric_path"]
