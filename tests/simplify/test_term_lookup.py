"""One term-dictionary cache with the evaluation's settings (:class:`multimsd.metrics.lookup.TermLookup`): the
term check and the ``--format`` view of ``multimsd simplify`` and the studio's marks all use it; the view's novel
words follow the lowercasing of the evaluation of the run that simplified."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from multimsd.errors import MultimsdError
from multimsd.metrics.lookup import TermLookup, evaluation_settings
from multimsd.simplify import cli


def a_run(root: Path, evaluation: str | None) -> Path:
    """A run directory (its stage records) whose evaluation config says ``evaluation`` (None: no evaluation)."""
    (root / ".stages").mkdir(parents=True)
    if evaluation is not None:
        (root / "evaluation").mkdir()
        (root / "evaluation" / "evaluate_config.yaml").write_text(evaluation, encoding="utf-8")
    return root


def lookup_of(model: Path, terms: str | None = None) -> TermLookup:
    return cli.term_lookup(argparse.Namespace(model=str(model), terms=terms))


def out_file(tmp_path: Path) -> Path:
    rec = {
        "id": "d",
        "lang": "en",
        "text": "",
        "sentences": [{"source": "Keep it cold.", "output": "keep it cold.", "flags": []}],
        "flagged": 0,
        "system": "s",
        "model": "m",
    }
    out = tmp_path / "out.jsonl"
    out.write_text(json.dumps(rec) + "\n", encoding="utf-8")
    return out


def test_the_view_follows_the_lowercasing_of_the_runs_evaluation(tmp_path):
    from multimsd.simplify.view import write_view

    out = out_file(tmp_path)
    cased = lookup_of(a_run(tmp_path / "cased", "metrics:\n  lowercase: false\n"))
    assert cased.lowercase is False
    assert '<mark class="novel">keep</mark>' in write_view(out, "html", cased).read_text(encoding="utf-8")
    for default in (  # no evaluation config, not a run, or none given: the evaluation's default (lowercase)
        lookup_of(a_run(tmp_path / "plain", None)),
        lookup_of(tmp_path / "not-a-run"),
        None,
    ):
        assert 'class="novel"' not in write_view(out, "html", default).read_text(encoding="utf-8")


def test_terms_come_from_the_option_and_a_missing_directory_is_reported_as_asked(tmp_path):
    run = a_run(tmp_path / "run", "terms:\n  dir: /nowhere\ntokenizer:\n  zh: intl\n")
    lookup = lookup_of(run)  # --terms, not the evaluation's terms.dir, chooses the lists of simplify
    assert lookup.terms_dir is None and lookup.dictionary("en") is not None
    assert lookup.tokenizers == {"zh": "intl"}
    assert lookup_of(run, "none").dictionary("en") is None
    with pytest.raises(MultimsdError, match=r"^--terms not found \(or not a directory\)"):
        TermLookup(tmp_path / "gone", missing="--terms")("en")
    quiet = TermLookup(tmp_path / "gone", missing=None)  # the studio: no term marks, no error
    assert quiet("en") is None and quiet.notes() == ["en: no term list (no term check)"]


def test_the_studio_highlights_with_the_same_lookup_and_settings(tmp_path):
    pytest.importorskip("starlette")
    from multimsd.studio.review import highlighter

    run = a_run(tmp_path / "run", "metrics:\n  lowercase: false\nterms:\n  enabled: false\n")
    hl = highlighter(run)
    assert isinstance(hl, TermLookup) and hl.lowercase is False and hl("en") is None
    assert hl.novel_spans("en", "Keep it cold.", "keep it cold.") == [(0, 4)]
    assert evaluation_settings(run)["metrics"] == {"lowercase": False}
    (run / "evaluation" / "evaluate_config.yaml").write_text("{{ not yaml", encoding="utf-8")
    assert evaluation_settings(run) == {} and highlighter(run).lowercase is True  # damaged: the defaults
