"""Outputs follow the user's umask: a shared cluster's group reads a run unless the user's umask says private.
Temporary files and directories are 0600 / 0700 whatever the umask; renamed into place they must not stay so."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from multimsd.fsutil import atomic_directory, current_umask, share_modes, write_json_atomic


@pytest.fixture
def umask():
    old = os.umask(0o022)

    def set_(mask: int) -> None:
        os.umask(mask)

    yield set_
    os.umask(old)


def mode(p: Path) -> int:
    return stat.S_IMODE(p.stat().st_mode)


def test_current_umask_reads_the_process_umask(umask):
    for mask in (0o022, 0o027, 0o077):
        umask(mask)
        assert current_umask() == mask


@pytest.mark.parametrize(
    ("mask", "file_mode", "dir_mode"), [(0o022, 0o644, 0o755), (0o027, 0o640, 0o750), (0o077, 0o600, 0o700)]
)
def test_atomic_outputs_get_the_umask_modes(tmp_path, umask, mask, file_mode, dir_mode):
    import tempfile

    umask(mask)
    out = tmp_path / "out"
    with atomic_directory(out) as tmp:
        (tmp / "plain.txt").write_text("x")
        fd, name = tempfile.mkstemp(dir=tmp)  # what libraries saving through a temp file leave: 0600
        os.close(fd)
        (tmp / "sub").mkdir(mode=0o700)
    assert mode(out) == dir_mode and mode(out / "sub") == dir_mode
    assert {mode(p) for p in out.iterdir() if p.is_file()} == {file_mode}
    write_json_atomic(tmp_path / "r.json", {"a": 1})
    assert mode(tmp_path / "r.json") == file_mode


def test_share_modes_leaves_symlinks_alone(tmp_path, umask):
    umask(0o022)
    (tmp_path / "f").write_text("x")
    (tmp_path / "f").chmod(0o600)
    (tmp_path / "link").symlink_to("/etc/hostname")
    share_modes(tmp_path)
    assert mode(tmp_path / "f") == 0o644 and os.readlink(tmp_path / "link") == "/etc/hostname"


@pytest.mark.e2e
def test_a_run_directory_follows_the_umask(tmp_path, repo_root):
    """``multimsd run debug=tiny`` under umask 027: every file group-readable and nothing world-readable, every
    directory group-searchable; the report, results and stage outputs included (they were 0600 / 0700)."""
    run = tmp_path / "run"
    code = "import sys; from multimsd.main import main; main(sys.argv[1:])"
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1"}
    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            code,
            "run",
            "debug=tiny",
            f"dir={run}",
            "gold=false",
            "evaluate.bootstrap.samples=50",
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
        preexec_fn=lambda: os.umask(0o027),
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert json.loads((run / "results.json").read_text())["systems"]
    paths = [run, *run.rglob("*")]
    files = [p for p in paths if p.is_file() and not p.is_symlink()]
    dirs = [p for p in paths if p.is_dir() and not p.is_symlink()]
    assert len(files) > 20 and {"report.html", "report.md", "results.json"} <= {p.name for p in files}
    bad = [f"{p.relative_to(run)} {oct(mode(p))}" for p in files if mode(p) & 0o040 == 0 or mode(p) & 0o007]
    bad += [
        f"{p.relative_to(run)} {oct(mode(p))}" for p in dirs if mode(p) & 0o050 != 0o050 or mode(p) & 0o007
    ]
    assert not bad, bad
