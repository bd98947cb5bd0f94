"""Modules of one concern: no module of the package is over 600 lines, except the sentence segmenter, whose
length is its per-language rule tables (abbreviations, protected patterns) rather than logic."""

from __future__ import annotations

from pathlib import Path

PKG = Path(__file__).resolve().parents[1] / "multimsd"
LIMIT = 600
EXCEPTIONS = {"alignment/segment.py"}


def too_long(root: Path, limit: int, exceptions: set[str]) -> list[str]:
    """``path: lines`` of every ``*.py`` under ``root`` with more than ``limit`` lines, not in ``exceptions``."""
    out = []
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        n = len(path.read_text(encoding="utf-8").splitlines())
        if n > limit and rel not in exceptions:
            out.append(f"{rel}: {n} lines")
    return out


def test_no_module_over_600_lines():
    assert not too_long(PKG, LIMIT, EXCEPTIONS), (
        f"modules over {LIMIT} lines (split them by concern): {too_long(PKG, LIMIT, EXCEPTIONS)}"
    )


def test_the_exception_is_still_needed():
    # an exception that has shrunk under the limit would only hide a future long module
    assert [line for line in too_long(PKG, LIMIT, set()) if line.startswith("alignment/segment.py: ")]


def test_the_check_finds_a_long_module(tmp_path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "long.py").write_text("x = 1\n" * (LIMIT + 1), encoding="utf-8")
    (tmp_path / "pkg" / "short.py").write_text("x = 1\n" * LIMIT, encoding="utf-8")
    (tmp_path / "pkg" / "tables.py").write_text("x = 1\n" * (LIMIT + 5), encoding="utf-8")
    assert too_long(tmp_path, LIMIT, {"pkg/tables.py"}) == [f"pkg/long.py: {LIMIT + 1} lines"]
