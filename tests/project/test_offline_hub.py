"""A model the Hub would have to supply, on a machine without the Hub (HF_HUB_OFFLINE=1, or no network): one
``error:`` line at once, exit 2, nothing written, no minutes of download retries."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time

import pytest

from multimsd import io as mio

MISSING = "nobody/nothing"


@pytest.fixture(autouse=True)
def fresh_probe(monkeypatch):
    """Each test probes anew (the answer is remembered per process), without the machine's proxy settings."""
    for var in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_ENDPOINT"):
        monkeypatch.delenv(var, raising=False)
    for var in ("https_proxy", "HTTPS_PROXY", "http_proxy", "HTTP_PROXY", "all_proxy", "ALL_PROXY"):
        monkeypatch.delenv(var, raising=False)
    mio._connects.cache_clear()
    yield
    mio._connects.cache_clear()


def closed_port() -> int:
    """A local port nothing listens on: a connection to it is refused at once."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# ------------------------------------------------------------------------------------------------ unit level
def test_a_data_path_that_is_no_file_and_no_reachable_dataset_is_one_line_at_once(tmp_path, monkeypatch):
    """`multimsd align data.path=no_such_dir` (issue #40): neither a local file or directory nor a dataset the
    Hub can be asked for: one line saying both, in seconds (it took 23 lines of retries and 27 s)."""
    import huggingface_hub.constants

    from multimsd.errors import MultimsdError

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{closed_port()}")  # the network is off
    t0 = time.perf_counter()
    with pytest.raises(MultimsdError) as e:
        mio.load_article_pairs("no_such_dir")
    assert time.perf_counter() - t0 < 5
    assert str(e.value) == (
        "cannot load dataset 'no_such_dir': no such file or directory here, not in the Hugging Face cache, and "
        "the Hugging Face Hub (127.0.0.1) is unreachable"
    )
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(MultimsdError, match="no such file or directory here.*HF_HUB_OFFLINE=1 is set"):
        mio.load_article_pairs("owner/dataset")
    # the same name as a local directory is read from there (a dataset saved with save_to_disk)
    import datasets

    row = {"article_id": "a1", "lang": "es", "complex": "La gripe es una infección.", "simple": "La gripe."}
    datasets.Dataset.from_list([row]).save_to_disk(str(tmp_path / "no_such_dir"))
    [pair] = mio.load_article_pairs("no_such_dir")
    assert (pair.article_id, pair.lang) == ("a1", "es")


def test_offline_is_answered_without_a_probe(monkeypatch):
    # The probe runs in a thread of its own: an AssertionError raised there ends that thread, not this test (the
    # short-cut could go unnoticed, issue #50). The stub records each attempt; the test asserts on the record.
    probes = []

    def no_network(address, *a, **k):
        probes.append(address)
        raise OSError("no network")

    monkeypatch.setattr(socket, "create_connection", no_network)
    for value in ("1", "true", "YES", "on"):
        monkeypatch.setenv("HF_HUB_OFFLINE", value)
        assert mio.hub_offline_requested() and not mio.hub_reachable()
    assert probes == [], f"probed the network under HF_HUB_OFFLINE=1: {probes}"
    monkeypatch.setenv("HF_HUB_OFFLINE", "0")
    assert not mio.hub_offline_requested()
    assert not mio.hub_reachable()  # the stub is the one the probe calls: without the short-cut it is reached
    assert probes == [mio.hub_address()]


def test_a_hanging_probe_is_bounded_and_remembered(monkeypatch):
    calls = []

    def hangs(address, timeout=None):  # a name lookup or connection that does not answer
        calls.append(address)
        time.sleep(5)
        raise OSError("timed out")

    monkeypatch.setattr(socket, "create_connection", hangs)
    t0 = time.perf_counter()
    assert not mio.hub_reachable(timeout=0.3)
    assert time.perf_counter() - t0 < 2
    assert not mio.hub_reachable(timeout=0.3)  # the same process asks once
    assert len(calls) == 1


def test_refused_and_reachable_endpoints(monkeypatch):
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{closed_port()}")
    assert not mio.hub_reachable()
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{server.getsockname()[1]}")
        assert mio.hub_reachable()


def test_the_probe_goes_through_the_proxy(monkeypatch):
    assert mio.hub_address() == ("huggingface.co", 443)
    monkeypatch.setenv("https_proxy", "http://proxy.example:3128")
    assert mio.hub_address() == ("proxy.example", 3128)
    monkeypatch.setenv("no_proxy", "huggingface.co")
    assert mio.hub_address() == ("huggingface.co", 443)


def test_model_unavailable(tmp_path, monkeypatch):
    import huggingface_hub.constants

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert mio.model_unavailable(str(tmp_path), "x") is None  # a local directory
    assert mio.model_unavailable(str(tmp_path / "nowhere"), "x") == "no such file or directory"
    assert mio.model_unavailable("./nowhere", "x") == "no such file or directory"
    why = mio.model_unavailable("owner/name", "model=offline_one")
    assert "HF_HUB_OFFLINE=1" in why and "hf download owner/name" in why and "model=offline_one" in why
    snapshot = tmp_path / "hub" / "models--owner--name" / "snapshots" / "abc123"
    snapshot.mkdir(parents=True)
    assert mio.model_unavailable("owner/name", "x") is None  # downloaded before: loads from the cache
    monkeypatch.delenv("HF_HUB_OFFLINE")
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{closed_port()}")
    assert "Hub (127.0.0.1) is unreachable" in mio.model_unavailable("other/name", "x")


# ------------------------------------------------------------------------------------------- the commands
COMMANDS = {
    "train": ("train.py", f"model.pretrained={MISSING}", "output.dir=out"),
    "align-transformers": (
        "align.py",
        f"embedder.model={MISSING}",
        "embedder.backend=transformers",
        "output.dir=out",
    ),
    "align-sentence-transformers": (
        "align.py",
        f"embedder.model={MISSING}",
        "embedder.backend=sentence-transformers",
        "output.dir=out",
    ),
}


@pytest.mark.e2e
@pytest.mark.parametrize("hub", ["offline", "unreachable"])
@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_missing_model_without_the_hub_is_one_line_at_once(repo_root, tmp_path, command, hub):
    script, *args = COMMANDS[command]
    env = {k: v for k, v in os.environ.items() if k.lower() not in ("https_proxy", "http_proxy", "all_proxy")}
    env.pop("HF_HUB_OFFLINE", None)
    if hub == "offline":
        env["HF_HUB_OFFLINE"] = "1"
    else:  # HF_HUB_OFFLINE unset, and the Hub refuses connections (as a machine without network)
        env["HF_ENDPOINT"] = f"http://127.0.0.1:{closed_port()}"
    t0 = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, str(repo_root / script), *args],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    elapsed = time.perf_counter() - t0
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert proc.returncode == 2, proc.stderr[-3000:]
    assert len(lines) == 1 and lines[0].startswith("error: "), proc.stderr[-3000:]
    assert MISSING in lines[0] and "hf download" in lines[0]
    assert ("HF_HUB_OFFLINE=1 is set" if hub == "offline" else "is unreachable") in lines[0]
    assert "Retry" not in proc.stdout + proc.stderr
    # A sanity bound (the retries took about a minute), not a benchmark.
    assert elapsed < 30, f"{elapsed:.1f} s"
    assert not any(tmp_path.iterdir()), sorted(p.name for p in tmp_path.iterdir())  # nothing written
