"""The studio's views: importing this module registers the built-in ones (:mod:`multimsd.studio.registry`).

Their order, and so their number keys, is each view's ``order``: 1 the alignments
(:mod:`multimsd.studio.alignments`), 2 the θ view (:mod:`multimsd.studio.theta`), 3 the outputs
(:mod:`multimsd.studio.review`), 4 simplify (:mod:`multimsd.studio.simplifier`). A view of your own registers
itself the same way (``register_view``), in a module imported before the studio starts.
"""

from __future__ import annotations

from multimsd.studio import alignments, review, simplifier, theta  # noqa: F401  (each registers its view)
from multimsd.studio.registry import View, registered


def all_views() -> list[View]:
    """Every registered view, built-in or not, in key order."""
    return registered()


__all__ = ["all_views"]
