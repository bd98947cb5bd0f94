"""A launch is one process group or nothing (issue #37): the launcher's rank and world size read from its
environment variables (torchrun / accelerate launch, MPI, srun), the run lock keyed on them, and each config in
conf/accelerate/ on 2 CPU processes: it trains as one group with the losses of one process at the same global
batch, or it stops at start-up with one ``error:`` line, having written nothing."""

import json
import os
import re
import subprocess
import sys
from types import SimpleNamespace

import pytest
from accelerate.utils import DistributedType

from multimsd import launcher, runlock
from multimsd.errors import MultimsdError

LAUNCH_VARS = [
    "RANK",
    "WORLD_SIZE",
    "LOCAL_RANK",
    "PMI_RANK",
    "PMI_SIZE",
    "OMPI_COMM_WORLD_RANK",
    "OMPI_COMM_WORLD_SIZE",
    "MV2_COMM_WORLD_RANK",
    "MV2_COMM_WORLD_SIZE",
    "SLURM_PROCID",
    "SLURM_STEP_NUM_TASKS",
    "SLURM_NTASKS",
    "ACCELERATE_USE_CPU",
    "ACCELERATE_USE_FSDP",
    "ACCELERATE_USE_DEEPSPEED",
    "ACCELERATE_MIXED_PRECISION",
    "ACCELERATE_DYNAMO_BACKEND",
    "TORCHELASTIC_RUN_ID",
]


@pytest.fixture
def env(monkeypatch):
    """A process outside any launcher; ``env(NAME=value, …)`` puts it inside one."""
    for name in LAUNCH_VARS:
        monkeypatch.delenv(name, raising=False)

    def set_env(**values):
        for name, value in values.items():
            monkeypatch.setenv(name, str(value))

    return set_env


# ----------------------------------------------------------------------------- ranks from the environment
@pytest.mark.parametrize(
    ("values", "world", "rank", "who"),
    [
        ({}, 1, 0, ""),
        ({"RANK": 1, "WORLD_SIZE": 2, "LOCAL_RANK": 1, "TORCHELASTIC_RUN_ID": "none"}, 2, 1, "torchrun"),
        ({"RANK": 0, "WORLD_SIZE": 2, "ACCELERATE_MIXED_PRECISION": "no"}, 2, 0, "accelerate launch"),
        ({"PMI_RANK": 3, "PMI_SIZE": 4}, 4, 3, "mpirun"),
        ({"OMPI_COMM_WORLD_RANK": 1, "OMPI_COMM_WORLD_SIZE": 2}, 2, 1, "mpirun"),
        ({"MV2_COMM_WORLD_RANK": 1, "MV2_COMM_WORLD_SIZE": 2}, 2, 1, "mpirun"),
        ({"SLURM_PROCID": 1, "SLURM_STEP_NUM_TASKS": 2}, 2, 1, "srun"),
        # a batch script is one process whatever --ntasks says: SLURM_NTASKS is not the step's task count
        ({"SLURM_PROCID": 0, "SLURM_NTASKS": 4}, 1, 0, "srun"),
        # torchrun under srun (one task per node): torchrun's variables describe the group
        ({"SLURM_PROCID": 1, "SLURM_STEP_NUM_TASKS": 2, "RANK": 5, "WORLD_SIZE": 8}, 8, 5, "the launcher"),
    ],
)
def test_the_launch_is_read_from_the_launchers_variables(env, values, world, rank, who):
    env(**values)
    launch = launcher.detect()
    assert (launch.world_size, launch.rank, launch.launcher) == (world, rank, who)
    assert runlock.is_main_process() == (rank == 0)


def test_a_rank_that_is_no_number_is_one_line(env):
    env(RANK="one", WORLD_SIZE=2)
    with pytest.raises(MultimsdError, match="RANK='one'"):
        launcher.detect()
    env(RANK=2, WORLD_SIZE=2)
    with pytest.raises(MultimsdError, match="do not fit"):
        launcher.detect()


@pytest.mark.parametrize(
    "values",
    [
        {"SLURM_PROCID": 1, "SLURM_STEP_NUM_TASKS": 2},
        {"PMI_RANK": 1, "PMI_SIZE": 2},
        {"OMPI_COMM_WORLD_RANK": 1, "OMPI_COMM_WORLD_SIZE": 2},
    ],
)
def test_only_the_launchers_rank_0_is_the_writer(env, values):
    env(**values)  # the old lock read RANK alone: every srun / mpirun task was "the main process"
    assert not runlock.is_main_process()


def test_tasks_that_no_launcher_joined_are_refused_before_the_lock(env, tmp_path):
    # `srun -n 2 python train.py` (no torchrun): two runs into one directory; each task is refused alike
    out = tmp_path / "runs" / "out"
    for rank in (0, 1):
        env(SLURM_PROCID=rank, SLURM_STEP_NUM_TASKS=2)
        refused = pytest.raises(MultimsdError, match=r"srun started 2 processes .*SLURM_STEP_NUM_TASKS=2")
        with refused, runlock.hold(out, "train"):
            pytest.fail("a task that no launcher joined got to write")
    assert not (tmp_path / "runs").exists()


# ----------------------------------------------------------------------------- the checks themselves
def no_gpu(monkeypatch):
    monkeypatch.setattr(launcher, "_accelerator_available", lambda: False)


ACCELERATE_2 = {"RANK": 0, "WORLD_SIZE": 2, "LOCAL_RANK": 0, "ACCELERATE_MIXED_PRECISION": "bf16"}


@pytest.mark.parametrize(
    ("extra", "match"),
    [
        ({}, r"accelerate launch .*asks for GPUs \(MULTI_GPU\) but this machine has none.*cpu_ddp\.yaml"),
        ({"ACCELERATE_USE_FSDP": "true"}, r"asks for GPUs \(FSDP\) but this machine has none"),
        ({"ACCELERATE_USE_DEEPSPEED": "true"}, r"asks for GPUs \(DEEPSPEED\)"),
        # Accelerate would quietly make these plain data parallel (MULTI_CPU) on CPU
        ({"ACCELERATE_USE_FSDP": "true", "ACCELERATE_USE_CPU": "true"}, r"FSDP on GPUs only.*cpu_ddp\.yaml"),
        ({"ACCELERATE_USE_DEEPSPEED": "true", "ACCELERATE_USE_CPU": "1"}, r"DEEPSPEED on GPUs only"),
    ],
)
def test_a_launch_accelerate_would_not_join_is_refused(env, monkeypatch, extra, match):
    no_gpu(monkeypatch)
    env(**ACCELERATE_2, **extra)
    with pytest.raises(MultimsdError, match=match):
        launcher.check_training_launch()


def test_torchrun_without_a_gpu_names_the_cpu_way(env, monkeypatch):
    no_gpu(monkeypatch)
    env(RANK=1, WORLD_SIZE=2, LOCAL_RANK=1, TORCHELASTIC_RUN_ID="none")
    with pytest.raises(MultimsdError, match=r"^torchrun looks for GPUs .*ACCELERATE_USE_CPU=true torchrun"):
        launcher.check_training_launch()


@pytest.mark.parametrize(
    "values",
    [
        {},  # one process
        {**ACCELERATE_2, "ACCELERATE_USE_CPU": "true"},  # cpu_ddp.yaml's way: gloo
        {"RANK": 0, "WORLD_SIZE": 2, "LOCAL_RANK": 0, "ACCELERATE_USE_CPU": "true"},  # torchrun on CPU
    ],
)
def test_launches_that_form_a_group_pass(env, monkeypatch, values):
    no_gpu(monkeypatch)
    env(**values)
    launcher.check_training_launch()


def test_a_gpu_launch_on_a_gpu_machine_passes(env, monkeypatch):
    monkeypatch.setattr(launcher, "_accelerator_available", lambda: True)
    env(**ACCELERATE_2, ACCELERATE_USE_FSDP="true")
    launcher.check_training_launch()


def accelerator(n, kind):
    return SimpleNamespace(num_processes=n, distributed_type=kind)


def test_the_group_accelerate_formed_is_compared_with_the_launchers(env):
    env(**ACCELERATE_2)
    launcher.check_group(accelerator(2, DistributedType.MULTI_GPU))
    with pytest.raises(MultimsdError, match=r"started 2 process\(es\) .*Accelerate joined 1 .*\(NO\)"):
        launcher.check_group(accelerator(1, DistributedType.NO))  # what each process of ddp.yaml got on CPU
    env(ACCELERATE_USE_FSDP="true")
    launcher.check_group(accelerator(2, DistributedType.FSDP))
    with pytest.raises(MultimsdError, match=r"asks for FSDP .*set up MULTI_CPU"):
        launcher.check_group(accelerator(2, DistributedType.MULTI_CPU))


def test_training_refuses_before_it_locks_or_writes(
    env, monkeypatch, tmp_path, repo_root, fresh_accelerate_state
):
    # what each process of `accelerate launch --config_file conf/accelerate/ddp.yaml` sees on a CPU machine
    import accelerate

    from multimsd.training.loop import run

    def started(*args, **kwargs):  # the old code got here, and waited for rank 1 in torch's rendezvous
        raise AssertionError("Accelerator() was started: the launch was not refused before it")

    monkeypatch.setattr(accelerate.Accelerator, "__init__", started)
    no_gpu(monkeypatch)
    env(**ACCELERATE_2, MASTER_ADDR="127.0.0.1", MASTER_PORT=29561)
    out = tmp_path / "runs" / "ddp"
    cfg = {
        "model": {"kind": "causal", "name": "tiny_llama", "pretrained": "tiny:llama"},
        "data": {"languages": ["en"], "mode": "mono", "max_train_examples": 4, "max_eval_examples": 2},
        "optim": {"batch_size": 2, "max_steps": 1},
        "eval": {"generate": False, "before_training": False},
        "output": {"dir": str(out)},
    }
    with pytest.raises(MultimsdError, match=r"asks for GPUs \(MULTI_GPU\)"):
        run(cfg)
    assert not (tmp_path / "runs").exists()  # no output directory, no lock file beside it


# ----------------------------------------------------------------------------- each config, 2 CPU processes
TINY = [
    "model=tiny_llama",
    "debug=train_tiny",
    "data.max_train_examples=8",
    "data.max_eval_examples=2",
    "optim.max_steps=2",
    "optim.lr=1e-2",
    "model.lora.dropout=0.0",  # no dropout: the losses are a function of data order and weights alone
    "eval.generate=false",
    "eval.before_training=false",
]


def clean_env(**extra):
    env = {k: v for k, v in os.environ.items() if k not in LAUNCH_VARS}
    return {**env, "OMP_NUM_THREADS": "1", **extra}


def accelerate_launch(repo_root, cwd, config, port, *overrides, env=None):
    cmd = [sys.executable, "-m", "accelerate.commands.launch", "--config_file", str(config)]
    cmd += ["--main_process_port", str(port), str(repo_root / "train.py"), *TINY, *overrides]
    # cwd: the test's own directory, where Hydra's job record (multirun/…/jobs.jsonl) goes
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=600, env=env or clean_env())


def step_losses(out):
    hist = json.loads((out / "all_results.json").read_text())["history"]
    return [h["loss"] for h in hist if "step" in h]


@pytest.mark.e2e
def test_cpu_ddp_config_trains_as_one_group(tmp_path, repo_root):
    one = subprocess.run(
        [
            sys.executable,
            str(repo_root / "train.py"),
            *TINY,
            "optim.batch_size=4",
            f"output.dir={tmp_path / 'one'}",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
        env=clean_env(),
    )
    assert one.returncode == 0, one.stderr[-2000:]
    config = repo_root / "conf" / "accelerate" / "cpu_ddp.yaml"
    two = accelerate_launch(
        repo_root,
        tmp_path,
        config,
        29563,
        "optim.batch_size=2",
        f"output.dir={tmp_path / 'two'}",
        env=clean_env(ACCELERATE_USE_CPU="true"),
    )
    assert two.returncode == 0, two.stderr[-3000:]
    results = json.loads((tmp_path / "two" / "all_results.json").read_text())
    assert results["num_processes"] == 2
    jobs = [
        json.loads(x)
        for f in tmp_path.glob("multirun/train/*/jobs.jsonl")
        for x in f.read_text().splitlines()
    ]
    assert [j["output_dir"] for j in jobs].count(str(tmp_path / "two")) == 1  # Hydra's job record: one line
    lines = [line for line in two.stdout.splitlines() if line.strip()]
    assert "training: 2 steps" in two.stdout and len(lines) == len(set(lines)), lines  # every line once
    assert step_losses(tmp_path / "two") == pytest.approx(step_losses(tmp_path / "one"), rel=1e-4)


@pytest.mark.e2e
@pytest.mark.parametrize(
    ("config", "port", "refusal"),
    [
        (
            "ddp.yaml",
            29565,
            r"error: accelerate launch --config_file \S*ddp\.yaml asks for GPUs \(MULTI_GPU\)",
        ),
        ("fsdp.yaml", 29567, r"error: accelerate launch --config_file \S*fsdp\.yaml asks for GPUs \(FSDP\)"),
        # accelerate itself stops before any process starts where DeepSpeed is not installed
        ("deepspeed_zero2.yaml", 29569, r"error: .*DEEPSPEED|DeepSpeed is not installed"),
    ],
)
def test_gpu_configs_are_refused_on_cpu_having_written_nothing(tmp_path, repo_root, config, port, refusal):
    import torch

    if torch.cuda.is_available():
        pytest.skip("a GPU machine: these configs train there")
    out = tmp_path / "runs" / "out"
    proc = accelerate_launch(
        repo_root, tmp_path, repo_root / "conf" / "accelerate" / config, port, f"output.dir={out}"
    )
    assert proc.returncode != 0
    assert re.search(refusal, proc.stderr), proc.stderr[-3000:]
    errors = {line for line in proc.stderr.splitlines() if line.startswith("error:")}
    assert len(errors) <= 1  # each process says the same one line
    assert not (tmp_path / "runs").exists()  # no output directory, no lock file, no train_config.json
    assert not (tmp_path / "multirun").exists()  # nor a job record
