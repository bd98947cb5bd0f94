"""Which process of which launch this is, read from the launcher's environment variables, and the rule that a
multi-process launch forms one process group or stops before it writes anything (issue #37).

A launcher tells each process it starts its rank and the number of processes (the world size):

* ``torchrun`` and ``accelerate launch`` (torchrun underneath for ``MULTI_GPU`` / FSDP): ``RANK``,
  ``WORLD_SIZE``, ``LOCAL_RANK``; Accelerate's ``MULTI_CPU`` state writes the same three once its group is up;
* MPI (``mpirun``, ``srun --mpi=pmi2``), as Accelerate reads them for ``MULTI_CPU``: ``PMI_RANK`` /
  ``PMI_SIZE``, ``OMPI_COMM_WORLD_RANK`` / ``OMPI_COMM_WORLD_SIZE``, ``MV2_COMM_WORLD_RANK`` / ``…_SIZE``;
* SLURM's ``srun``: ``SLURM_PROCID`` / ``SLURM_STEP_NUM_TASKS`` (the tasks of this job step; not
  ``SLURM_NTASKS``, which a batch script also has while it runs as one process).

Why the check: Accelerate joins the processes into one group only when it finds a backend for them. Under
``accelerate launch --config_file conf/accelerate/ddp.yaml`` on a machine without a GPU, each process gets
``LOCAL_RANK``, Accelerate looks for a GPU backend (``PartialState._prepare_backend``) and finds none; it
still calls ``init_process_group(backend=None)`` (torch's default group of 2 forms) but, having no backend of
its own, sets ``DistributedType.NO``: every process is ``num_processes 1``, ``process_index 0``, its own main
process, and they all train into one output directory. (``use_cpu: true`` in a config does not help:
accelerate's multi-GPU launcher, which FSDP configs use too, does not pass it on; only ``ACCELERATE_USE_CPU``
in the environment reaches the processes.) Under ``srun -n 2`` or ``mpirun -n 2`` without torchrun, GPU
processes never join either. So the training stage compares the launcher's world size with what Accelerate
made of it (:func:`check_training_launch` before ``Accelerator()``, from the environment alone;
:func:`check_group` right after it), and :mod:`multimsd.runlock` lets only the launcher's rank 0 write.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

from multimsd.errors import MultimsdError

# (launcher, rank variable, world-size variable, local-rank variable), in the order they are trusted: torchrun's
# first (srun / mpirun can start torchrun, whose variables then describe the group), srun's last.
FAMILIES = (
    ("torchrun", "RANK", "WORLD_SIZE", "LOCAL_RANK"),
    ("mpirun", "PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID"),
    ("mpirun", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK"),
    ("mpirun", "MV2_COMM_WORLD_RANK", "MV2_COMM_WORLD_SIZE", "MV2_COMM_WORLD_LOCAL_RANK"),
    ("srun", "SLURM_PROCID", "SLURM_STEP_NUM_TASKS", "SLURM_LOCALID"),
)
CPU_RECIPE = "ACCELERATE_USE_CPU=true accelerate launch --config_file {conf}/accelerate/cpu_ddp.yaml"


@dataclass(frozen=True)
class Launch:
    """This process in its launch: ``rank`` of ``world_size``, started by ``launcher`` (``""``: none), whose
    variables were ``rank_var`` / ``size_var``."""

    world_size: int = 1
    rank: int = 0
    launcher: str = ""
    rank_var: str = ""
    size_var: str = ""

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    @property
    def joinable(self) -> bool:
        """Whether Accelerate can join these processes: one process, or torchrun's variables."""
        return self.world_size <= 1 or self.rank_var == "RANK"


def _int(env: Mapping[str, str], name: str, default: int) -> int:
    value = env.get(name, "").strip()
    if not value:
        return default
    try:
        return int(value)
    except ValueError:
        raise MultimsdError(
            f"{name}={value!r} in the environment is not a number (a launcher sets it)"
        ) from None


def detect(env: Mapping[str, str] | None = None) -> Launch:
    """This process's :class:`Launch`, from ``env`` (default: ``os.environ``)."""
    env = os.environ if env is None else env
    for launcher, rank_var, size_var, _local in FAMILIES:
        if not (env.get(rank_var, "").strip() or env.get(size_var, "").strip()):
            continue
        if launcher == "torchrun":
            if env.get("ACCELERATE_DYNAMO_BACKEND") or env.get("ACCELERATE_MIXED_PRECISION"):
                launcher = "accelerate launch"  # it sets these for every process it starts
            elif not env.get("TORCHELASTIC_RUN_ID"):
                launcher = "the launcher"
        world, rank = _int(env, size_var, 1), _int(env, rank_var, 0)
        if world < 1 or rank < 0 or (env.get(size_var, "").strip() and rank >= world):
            raise MultimsdError(
                f"{rank_var}={rank} and {size_var}={world} in the environment do not fit together"
            )
        return Launch(world, rank, launcher, rank_var, size_var)
    return Launch()


def is_main_process(env: Mapping[str, str] | None = None) -> bool:
    """Whether this process writes for its launch: the launcher's rank 0, or a process outside any launch."""
    return detect(env).is_main


def _flag(env: Mapping[str, str], name: str) -> bool:
    return env.get(name, "").strip().lower() in ("1", "true", "yes", "y", "on", "t")


def check_joinable(launch: Launch | None = None) -> None:
    """Refuse N processes that no launcher joined: ``srun -n N`` / ``mpirun -n N`` of a command directly. Each
    would be a run of its own into the same output; one task that starts torchrun / ``accelerate launch`` is
    the way (scripts/slurm/train_multi_gpu.sbatch)."""
    launch = detect() if launch is None else launch
    if launch.joinable:
        return
    raise MultimsdError(
        f"{launch.launcher} started {launch.world_size} processes of this command ({launch.size_var}="
        f"{launch.world_size}), but multimsd joins only processes started by torchrun or accelerate launch "
        f"(RANK, WORLD_SIZE): these would be {launch.world_size} separate runs writing one output directory; "
        f"run one task that starts accelerate launch (scripts/slurm/train_multi_gpu.sbatch), or one process "
        f"(srun -n 1)"
    )


def _accelerator_available() -> bool:
    """Whether Accelerate would find a device backend for its processes (a CUDA GPU, or another accelerator)."""
    import torch

    if torch.cuda.is_available():
        return True
    from accelerate import utils

    names = (
        "is_xpu_available",
        "is_npu_available",
        "is_mlu_available",
        "is_musa_available",
        "is_sdaa_available",
    )
    names += ("is_hpu_available", "is_neuron_available")
    return any(getattr(utils, name, lambda: False)() for name in names)


def _config_file() -> str | None:
    """The ``--config_file`` of the ``accelerate launch`` that started this process (its parent: torchrun's
    agent runs inside it), for the message only; None where it cannot be told (no /proc, another launcher)."""
    try:
        with open(f"/proc/{os.getppid()}/cmdline", "rb") as f:
            args = f.read().decode(errors="replace").split("\0")
    except OSError:
        return None
    if not any("accelerate" in a for a in args[:3]):
        return None
    for i, arg in enumerate(args):
        if arg == "--config_file" and i + 1 < len(args):
            return _shown(args[i + 1])
        if arg.startswith("--config_file="):
            return _shown(arg.split("=", 1)[1])
    return None


def _shown(path: str) -> str:
    """``path`` relative to the working directory where it lies under it (as a user typed it)."""
    try:
        rel = os.path.relpath(os.path.abspath(path))
    except ValueError:
        return path
    return path if rel.startswith("..") else rel


def _cpu_recipe() -> str:
    from multimsd.paths import conf_dir

    return CPU_RECIPE.format(conf=_shown(str(conf_dir())))


def check_training_launch(launch: Launch | None = None, env: Mapping[str, str] | None = None) -> None:
    """Before ``Accelerator()`` and before the output's lock: refuse a multi-process launch whose processes
    Accelerate would not join into one group, or would join as something else than asked. Every process of
    the launch raises the same :class:`MultimsdError` (one ``error:`` line, exit 2), having written nothing."""
    env = os.environ if env is None else env
    launch = detect(env) if launch is None else launch
    if launch.world_size <= 1:
        return
    check_joinable(launch)
    cpu = _flag(env, "ACCELERATE_USE_CPU")
    kind = (
        "FSDP"
        if _flag(env, "ACCELERATE_USE_FSDP")
        else "DEEPSPEED"
        if _flag(env, "ACCELERATE_USE_DEEPSPEED")
        else "MULTI_GPU"
    )
    config = _config_file() if launch.launcher == "accelerate launch" else None
    who = f"{launch.launcher} --config_file {config}" if config else launch.launcher
    n = launch.world_size
    if cpu and kind != "MULTI_GPU":
        raise MultimsdError(
            f"{who} asks for {kind} with ACCELERATE_USE_CPU, but Accelerate runs {kind} on GPUs only: on CPU "
            f"it would quietly train plain data parallel (MULTI_CPU) instead; for {n} CPU processes use "
            f"{_cpu_recipe()} (docs/gpus.md)"
        )
    if not cpu and not _accelerator_available():
        asks = f"asks for GPUs ({kind})" if launch.launcher == "accelerate launch" else "looks for GPUs"
        raise MultimsdError(
            f"{who} {asks} but this machine has none: its {n} processes would not join one group (each would "
            f"train alone into output.dir); run it where there are GPUs, or use {_cpu_recipe()} for {n} CPU "
            f"processes (gloo; with torchrun: ACCELERATE_USE_CPU=true torchrun --nproc_per_node {n}; "
            f"docs/gpus.md)"
        )


def check_group(accelerator, launch: Launch | None = None, env: Mapping[str, str] | None = None) -> None:
    """Right after ``Accelerator()``: the group Accelerate formed is the launcher's (as many processes; FSDP /
    DeepSpeed where the launch asked for it), else every process refuses before it writes anything."""
    env = os.environ if env is None else env
    launch = detect(env) if launch is None else launch
    if launch.world_size <= 1 and accelerator.num_processes <= 1:
        return
    got = str(accelerator.distributed_type).rsplit(".", 1)[-1]
    if accelerator.num_processes != launch.world_size:
        raise MultimsdError(
            f"{launch.launcher or 'the launcher'} started {launch.world_size} process(es) "
            f"({launch.size_var or 'WORLD_SIZE'}={launch.world_size}) but Accelerate joined "
            f"{accelerator.num_processes} into its process group ({got}): they would train as separate runs "
            f"into one output.dir; on GPUs check that each process sees its GPU, on CPU use {_cpu_recipe()} "
            f"(docs/gpus.md)"
        )
    for kind, var in (("FSDP", "ACCELERATE_USE_FSDP"), ("DEEPSPEED", "ACCELERATE_USE_DEEPSPEED")):
        if _flag(env, var) and got != kind:
            raise MultimsdError(
                f"the launch asks for {kind} ({var}=true) but Accelerate set up {got}: it would quietly train "
                f"plain data parallel; run it where there are GPUs, or use {_cpu_recipe()} (docs/gpus.md)"
            )


__all__ = ["Launch", "check_group", "check_joinable", "check_training_launch", "detect", "is_main_process"]
