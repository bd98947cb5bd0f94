"""A `multimsd run` that fails leaves no directory it created when no stage finished, and keeps (and says so)
what finished when one did (issue #40: a failed run left `output.dir` holding only `.stages/align.started.json`,
where `multimsd align` leaves nothing on the same error)."""

from __future__ import annotations

import logging

import pytest

from multimsd.errors import MultimsdError
from multimsd.paths import conf_dir
from multimsd.pipeline.records import StageRecords
from multimsd.pipeline.run import compose, plan, run

pytestmark = pytest.mark.integration  # whole runs in this process (tiny models)


def tiny_run(run_dir, *overrides, align=(), train=()):
    cfg = compose(
        "run", ["debug=tiny", f"output.dir={run_dir}", *overrides], config_dir=conf_dir() / "pipeline"
    )
    cfg.align, cfg.train = [*cfg.align, *align], [*cfg.train, *train]
    return run(cfg, argv=[])


def test_bad_input_found_by_the_first_stage_leaves_nothing(tmp_path):
    bad = tmp_path / "pairs.jsonl"
    bad.write_text('{"article_id": "a1", "lang": "es", "complex": "Texto."}\n', encoding="utf-8")  # no simple
    run_dir = tmp_path / "out" / "run"
    with pytest.raises(MultimsdError, match="pairs.jsonl:1"):
        tiny_run(run_dir, align=[f"data.path={bad}"])
    assert not (tmp_path / "out").exists()  # nor the parent it made for it


def test_a_rerun_into_its_own_directory_keeps_it(tmp_path):
    run_dir = tmp_path / "run"
    (run_dir / ".stages").mkdir(parents=True)  # a run directory from before
    bad = tmp_path / "pairs.jsonl"
    bad.write_text("not json\n", encoding="utf-8")
    with pytest.raises(MultimsdError):
        tiny_run(run_dir, align=[f"data.path={bad}"])
    assert (run_dir / ".stages").is_dir()


def test_a_failure_after_a_finished_stage_keeps_it_and_says_so(tmp_path, tiny_encoder, caplog):
    run_dir = tmp_path / "run"
    with caplog.at_level(logging.WARNING), pytest.raises(MultimsdError, match="data.max_length"):
        tiny_run(run_dir, align=[f"embedder.model={tiny_encoder}"], train=["data.max_length=2"])
    # the alignment and the 0-shot system (prompting has no max_length to fail on) finished; training did not
    assert StageRecords(run_dir).finished() == ["align", "train/zero_shot"]
    assert (run_dir / "align" / "dataset_dict.json").is_file()
    kept = f"kept {run_dir}: the finished stage(s) align, train/zero_shot; the same command skips them"
    assert kept in caplog.text


def test_finished_lists_the_stages_recorded_done(tmp_path):
    records = StageRecords(tmp_path)
    assert records.finished() == []
    records.dir.mkdir()
    records.mark_started("align", "f1")
    assert records.finished() == []
    out = tmp_path / "align"
    out.mkdir()
    records.mark_done("align", "f1", out, 1.0)
    records.mark_started("train/finetuned_theta1", "f2")
    records.mark_done("train/zero_shot", "f3", out, 1.0)
    assert records.finished() == ["align", "train/zero_shot"]


def test_a_moved_run_directory_keeps_its_stage_fingerprints(tmp_path):
    """The stage configs hold absolute paths under the run directory; the fingerprints read them from it, so a
    run directory moved or copied elsewhere skips what it finished (tests/pipeline/test_run_pipeline.py copies one)."""
    from multimsd.pipeline.records import fingerprint, inside

    def stages(run_dir):
        return {
            s.name: s.fp
            for s in plan(compose("run", ["debug=tiny"], config_dir=conf_dir() / "pipeline"), run_dir)
        }

    here, there = stages(tmp_path / "a" / "run"), stages(tmp_path / "elsewhere")
    assert here == there and len(here) == 5
    run = tmp_path / "run"
    config = {
        "out": str(run / "align"),
        "same": str(run),
        "other": str(tmp_path / "run2" / "x"),
        "n": [str(run)],
    }
    assert inside(config, run) == {
        "out": "<run>/align",
        "same": "<run>",
        "other": config["other"],
        "n": ["<run>"],
    }
    assert fingerprint(config, root=run) != fingerprint(config)  # the path of another directory still counts
