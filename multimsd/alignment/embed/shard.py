"""Which process of a multi-process alignment run this is, and how its processes exchange Python objects.

Under ``accelerate launch --num_processes N align.py …`` (or torchrun, or anything else that sets
``WORLD_SIZE`` > 1) sentence encoding is split across the processes (:meth:`Embedder.encode
<multimsd.alignment.embed.Embedder.encode>`); everything else of the stage runs on the main process. Only three
collectives are needed: the main process tells the others which sentences are missing from its cache
(broadcast) and the others send their vectors back (gather); then they are done and exit, with no barrier
at the end, since the main process's matching and writing can outlast any collective's timeout. They go through a gloo group even
when the default group is NCCL: the payloads are pickled Python objects, which NCCL would first copy onto a
GPU that the encoder is using.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import cache
from typing import Any


@dataclass(frozen=True)
class Shard:
    """This process's place in a multi-process run."""

    rank: int
    world: int
    device: str  # this process's accelerator ("cuda:3"), or "cpu"
    group: Any  # the gloo process group for object collectives (None: the default group is gloo already)

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    def broadcast(self, obj: Any) -> Any:
        """The main process's ``obj``, on every process."""
        import torch.distributed as dist

        box = [obj]
        dist.broadcast_object_list(box, src=0, group=self.group)
        return box[0]

    def gather(self, obj: Any) -> list[Any] | None:
        """Every process's ``obj`` in rank order on the main process; None elsewhere.

        A gather rather than an all-gather: the vectors are needed only where the cache is written and the
        matching runs, and N copies of a large corpus's embeddings would not fit in host memory.
        """
        import torch.distributed as dist

        out: list[Any] | None = [None] * self.world if self.is_main else None
        dist.gather_object(obj, out, dst=0, group=self.group)
        return out


def _flag(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() in ("1", "true", "yes")


@cache  # the process group is created once per process (new_group is itself a collective)
def current_shard() -> Shard | None:
    """This process's :class:`Shard` in a multi-process launch; None in an ordinary single-process run."""
    if int(os.environ.get("WORLD_SIZE", "1")) <= 1:
        return None  # never import torch.distributed or start a process group for a plain `python align.py`
    import torch
    import torch.distributed as dist
    from accelerate import PartialState

    # The training stage's convention: `accelerate launch --cpu` / ACCELERATE_USE_CPU, or no GPU at all,
    # means gloo on CPU; otherwise Accelerate picks the device's backend and sets this process's device.
    state = PartialState(cpu=_flag("ACCELERATE_USE_CPU") or not torch.cuda.is_available())
    if state.num_processes <= 1:
        return None
    group = None if dist.get_backend() == "gloo" else dist.new_group(backend="gloo")
    return Shard(rank=state.process_index, world=state.num_processes, device=str(state.device), group=group)


__all__ = ["Shard", "current_shard"]
