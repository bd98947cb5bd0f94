"""Modules of one concern: no module of the package is over 600 lines, except the sentence segmenter, whose
length is its per-language rule tables (abbreviations, protected patterns) rather than logic; and no function
of the package is over 80 lines (docstring included)."""

from __future__ import annotations

from pathlib import Path

PKG = Path(__file__).resolve().parents[2] / "multimsd"
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


# Every function is read top to bottom (issues #38, #50): none under multimsd/ over 80 lines, docstring included.
FUNCTION_LIMIT = 80
# "path:name" -> why it may be longer; each is checked to be still needed, like the module exception.
FUNCTION_EXCEPTIONS: dict[str, str] = {}


def long_functions(root: Path, limit: int, exceptions: dict[str, str] | None = None) -> list[str]:
    """``path:line name: lines`` of every function (docstring included) under ``root`` longer than ``limit``,
    except those whose ``path:name`` is in ``exceptions``."""
    import ast

    out = []
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                n = node.end_lineno - node.lineno + 1
                if n > limit and f"{rel}:{node.name}" not in (exceptions or {}):
                    out.append(f"{rel}:{node.lineno} {node.name}: {n} lines")
    return out


def test_no_function_over_80_lines():
    assert not long_functions(PKG, FUNCTION_LIMIT, FUNCTION_EXCEPTIONS), (
        "functions over 80 lines (split them into functions that each do one thing): "
        f"{long_functions(PKG, FUNCTION_LIMIT, FUNCTION_EXCEPTIONS)}"
    )


def test_each_function_exception_is_still_needed():
    # an exception that has shrunk under the limit would only hide a future long function
    reported = long_functions(PKG, FUNCTION_LIMIT)
    for key in FUNCTION_EXCEPTIONS:
        path, name = key.split(":")
        assert any(line.startswith(f"{path}:") and f" {name}: " in line for line in reported), key


def test_the_check_finds_a_long_function(tmp_path):
    body = "".join("    x = 1\n" for _ in range(FUNCTION_LIMIT))  # def line + 80 = 81 lines
    (tmp_path / "m.py").write_text(f"def long():\n{body}\n\ndef short():\n    return 1\n", encoding="utf-8")
    assert long_functions(tmp_path, FUNCTION_LIMIT) == [f"m.py:1 long: {FUNCTION_LIMIT + 1} lines"]


def test_a_listed_function_is_not_reported(tmp_path):
    body = "".join("    x = 1\n" for _ in range(FUNCTION_LIMIT))
    (tmp_path / "m.py").write_text(f"def table():\n{body}\n\ndef long():\n{body}", encoding="utf-8")
    assert long_functions(tmp_path, FUNCTION_LIMIT, {"m.py:table": "a rule table"}) == [
        f"m.py:{FUNCTION_LIMIT + 4} long: {FUNCTION_LIMIT + 1} lines"
    ]
