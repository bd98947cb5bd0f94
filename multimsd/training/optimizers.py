"""``optim.optimizer``: the optimizer over the parameters that train.

- ``adamw``: torch's AdamW (the paper's).
- ``sgd``: plain mini-batch gradient descent (Adduru et al.'s LSTM).
- ``paged_adamw_8bit``: bitsandbytes' AdamW with its two moments in 8 bits (block-wise quantized) and paged
  (on CUDA the states live in unified memory and move to the host when the GPU runs short instead of failing
  with out-of-memory): the QLoRA paper's optimizer. The moments take 2 bytes a parameter instead of 8. Needs
  the ``qlora`` extra (``pip install 'multimsd[qlora]'``); it also runs on a CPU.
"""

from __future__ import annotations

from multimsd.errors import MultimsdError

OPTIMIZERS = ("adamw", "sgd", "paged_adamw_8bit")


def check_optimizer(name: str) -> None:
    """An unknown name, or one whose package is missing, is one line at start-up."""
    if name not in OPTIMIZERS:
        raise MultimsdError(f"optim.optimizer={name!r}: choose {', '.join(OPTIMIZERS)}")
    if name == "paged_adamw_8bit":
        from multimsd.training.quantization import require_bitsandbytes

        require_bitsandbytes(f"optim.optimizer={name}")


def build_optimizer(optim, params: list):
    """The optimizer ``optim`` (the run's OptimSettings) names, over ``params``."""
    import torch

    if optim.optimizer == "sgd":
        return torch.optim.SGD(params, lr=optim.lr, weight_decay=optim.weight_decay)
    if optim.optimizer == "paged_adamw_8bit":
        import bitsandbytes as bnb

        return bnb.optim.PagedAdamW8bit(params, lr=optim.lr, weight_decay=optim.weight_decay)
    return torch.optim.AdamW(params, lr=optim.lr, weight_decay=optim.weight_decay)
