"""Model kinds (``model.kind``): one module per model family, registered by name; see :mod:`.base`.

Importing this package registers the built-in kinds, so :func:`get_kind` finds them.
"""

from multimsd.training.kinds import causal, lstm, seq2seq  # noqa: F401  (registers the built-in kinds)
from multimsd.training.kinds.base import MODEL_KINDS, ModelKind, Tokenized, get_kind, register_kind

__all__ = ["MODEL_KINDS", "ModelKind", "Tokenized", "get_kind", "register_kind"]
