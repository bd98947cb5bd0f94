"""Faults: an unwritable output directory is refused before any work; corrupted checkpoints and caches are
detected, reported and not used."""

from __future__ import annotations

import time

import pytest
from conftest import run_cli

from multimsd.errors import MultimsdError
from multimsd.fsutil import check_writable_dir

# (script, the option naming its output directory, extra options)
ENTRY_POINTS = [
    ("align.py", "output.dir", []),
    ("align.py", "gold.report_dir", ["mode=gold"]),
    ("train.py", "output_dir", []),
    ("evaluate.py", "output.dir", []),
]


def unwritable(tmp_path, kind: str) -> str:
    if kind == "proc":
        return "/proc/x/out"  # root may write anywhere by mode bits, but not into /proc
    (tmp_path / "file.txt").write_text("a regular file\n", encoding="utf-8")
    return str(tmp_path / "file.txt" / "out")


@pytest.mark.parametrize("kind", ["proc", "under_file"])
@pytest.mark.parametrize(("script", "option", "extra"), ENTRY_POINTS)
def test_unwritable_output_dir_is_one_line_before_any_work(
    python, repo_root, tmp_path, script, option, extra, kind
):
    target = unwritable(tmp_path, kind)
    before = sorted(p.name for p in tmp_path.iterdir())
    start = time.monotonic()
    proc = run_cli(python, repo_root, *extra, f"{option}={target}", cwd=tmp_path, script=script, timeout=120)
    took = time.monotonic() - start
    assert proc.returncode == 2, proc.stderr
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: ") and option in lines[0], proc.stderr
    assert target in lines[0]
    # Before any work: no data loaded, no model built, no progress printed, and quickly.
    assert "encod" not in proc.stdout.lower() and "article pairs" not in proc.stdout + proc.stderr
    assert took < 30, f"{script} took {took:.1f}s to refuse an unwritable {option}"
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # nothing created (no Hydra outputs either)


def test_check_writable_dir_creates_nothing(tmp_path):
    check_writable_dir(tmp_path / "a" / "b" / "c", "output.dir")
    assert list(tmp_path.iterdir()) == []
    (tmp_path / "f").write_text("x", encoding="utf-8")
    with pytest.raises(MultimsdError, match=r"is under .*f, which is not a directory"):
        check_writable_dir(tmp_path / "f" / "out", "output.dir")
    with pytest.raises(MultimsdError, match=r"output.dir .*f is not a directory"):
        check_writable_dir(tmp_path / "f", "output.dir")
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere")
    with pytest.raises(MultimsdError, match="dangling symbolic link"):
        check_writable_dir(tmp_path / "dangling" / "out", "output.dir")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dangling", "f"]
