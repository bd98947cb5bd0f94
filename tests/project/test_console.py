"""What the commands print: no library deprecation warnings, no "Removed shared tensor" notice, and every line of
ours (epoch summaries, log records) on a line of its own, never after a progress bar's ``\\r`` fragment."""

from __future__ import annotations

import io
import logging
import os
import re
import subprocess
import sys
import warnings

import pytest

from multimsd.console import (
    bars_aside,
    keep_lines_apart,
    library_bars_off,
    progress_bar,
    quiet_library_warnings,
    say,
    without_log_message,
)

NOISE = ("FutureWarning", "DeprecationWarning", "Removed shared tensor", "deprecated")


def warn_from(module: str, category: type[Warning] = FutureWarning) -> None:
    """A warning raised by code of the module named ``module`` (as if ``module.py`` called warnings.warn)."""
    code = compile("import warnings\nwarnings.warn('soon gone', CATEGORY)\n", f"{module}.py", "exec")
    exec(code, {"__name__": module, "CATEGORY": category})


def shown_under_entry_point_filters(module: str, category: type[Warning] = FutureWarning) -> bool:
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("default")  # what a fresh interpreter shows, before the entry point's filters
        quiet_library_warnings()
        warn_from(module, category)
    return any(issubclass(w.category, category) for w in seen)


def test_library_deprecations_are_filtered_the_users_are_not(monkeypatch):
    monkeypatch.setattr(sys, "warnoptions", [])
    # The user's code, multimsd's own code, a plugin: their warnings are theirs to see.
    assert shown_under_entry_point_filters("mymodule")
    assert shown_under_entry_point_filters("multimsd.training.loop")
    # A package whose name only starts alike is not the library.
    assert shown_under_entry_point_filters("transformers_plugin_of_mine")
    # The Hugging Face / torch stack's deprecations are not the user's to fix.
    assert not shown_under_entry_point_filters("transformers.modeling_utils")
    assert not shown_under_entry_point_filters("peft.peft_model")
    assert not shown_under_entry_point_filters("accelerate", DeprecationWarning)
    assert not shown_under_entry_point_filters(
        "huggingface_hub.utils._deprecation", PendingDeprecationWarning
    )
    # Only deprecations: a library's other warnings still show.
    assert shown_under_entry_point_filters("peft.tuners.tuners_utils", UserWarning)


def test_python_warning_options_win(monkeypatch):
    monkeypatch.setattr(sys, "warnoptions", ["default"])  # python -W default train.py ...
    assert shown_under_entry_point_filters("transformers.modeling_utils")


@pytest.mark.integration
def test_importing_multimsd_leaves_library_warnings_alone(repo_root):
    """Code of the user's that imports multimsd (every entry module included) keeps seeing the deprecation
    warnings of transformers & co.: only running a command filters them."""
    code = (
        "import warnings\n"
        "import multimsd, multimsd.commands.stage, multimsd.console, multimsd.align, multimsd.train, multimsd.evaluate\n"
        "import multimsd.main, multimsd.pipeline.cli, multimsd.training.loop, multimsd.alignment.stage\n"
        "with warnings.catch_warnings(record=True) as seen:\n"
        "    exec(compile('import warnings; warnings.warn(\"x\", FutureWarning)', 'm.py', 'exec'),\n"
        "         {'__name__': 'transformers.modeling_utils'})\n"
        "assert [w.category for w in seen] == [FutureWarning], seen\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=repo_root, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr[-2000:]


def starts_a_line(text: str, pattern: str) -> list[str]:
    """The occurrences of ``pattern`` that do not start a line, with what precedes them on it."""
    bad = []
    for m in re.finditer(pattern, text):
        line_start = text.rfind("\n", 0, m.start()) + 1
        if line_start != m.start():
            bad.append(repr(text[line_start : m.end()][-200:]))
    return bad


def test_say_and_log_records_start_their_own_line(monkeypatch):
    from tqdm.auto import tqdm

    out = io.StringIO()  # not a terminal: one stream for the bar and our lines, as `cmd > log 2>&1`
    monkeypatch.setattr(sys, "stdout", out)
    handler = logging.StreamHandler(out)
    root = logging.getLogger()
    monkeypatch.setattr(root, "handlers", [handler])
    keep_lines_apart()
    bar = tqdm(total=3, desc="training", file=out, mininterval=0)
    bar.update(1)
    say("epoch 0: val_loss 1.0")
    bar.update(1)
    logging.getLogger("multimsd.test").warning("epoch 1: a log record")
    with bars_aside():
        out.write("free text\n")
    bar.update(1)
    bar.close()
    say("after the bar")
    text = out.getvalue()
    assert "training: " in text and "epoch 0: val_loss 1.0\n" in text and "epoch 1: a log record\n" in text
    assert not starts_a_line(text, r"epoch \d+:|free text|after the bar")
    # The bar goes on below a line of ours.
    assert re.search(r"epoch 0: val_loss 1.0\n\r?training: ", text)


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_bar_only_on_a_terminal(monkeypatch, caplog):
    """The one rule: a bar where stderr is a terminal; elsewhere no bar and one log line per loop."""
    from tqdm.std import tqdm

    log_file = io.StringIO()  # stderr redirected to a file: not a terminal
    monkeypatch.setattr(sys, "stderr", log_file)
    with caplog.at_level(logging.INFO, logger="multimsd"):
        assert list(progress_bar(range(3), desc="encoding", unit="batch")) == [0, 1, 2]
        bar = progress_bar(total=5, initial=0, desc="training", unit="step")
        bar.update(1)
        bar.update(1)
        bar.set_postfix(loss="1.2345")
        bar.close()
        bar.close()  # once is enough
        list(progress_bar(range(2), desc="epoch 0", unit="batch", leave=False))  # inside a loop of its own
        list(progress_bar(range(2), desc="segmenting", unit="article", disable=True))  # too short for either
    assert log_file.getvalue() == ""  # no bar, no \r
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 2
    assert re.fullmatch(r"encoding: 3 batches in \d+\.\d s", lines[0])
    assert re.fullmatch(r"training: 2 steps in \d+\.\d s, loss 1\.2345", lines[1])
    # on a terminal: tqdm's bar, drawn on stderr
    terminal = Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    bar = progress_bar(range(2), desc="encoding", unit="batch")
    assert isinstance(bar, tqdm) and not bar.disable
    list(bar)
    assert "encoding: 100%" in terminal.getvalue() and "\r" in terminal.getvalue()


def test_library_bars_off_a_terminal(monkeypatch):
    from huggingface_hub.utils import are_progress_bars_disabled, enable_progress_bars

    monkeypatch.delenv("HF_HUB_DISABLE_PROGRESS_BARS", raising=False)
    monkeypatch.delenv("HF_DATASETS_DISABLE_PROGRESS_BARS", raising=False)
    monkeypatch.setattr(sys, "stderr", Terminal())
    library_bars_off()  # a terminal: the libraries keep their bars
    assert "HF_HUB_DISABLE_PROGRESS_BARS" not in os.environ
    monkeypatch.setattr(sys, "stderr", io.StringIO())
    try:
        library_bars_off()
        assert are_progress_bars_disabled()  # huggingface_hub's (transformers' follow them)
        assert os.environ["HF_DATASETS_DISABLE_PROGRESS_BARS"] == "1"  # read by datasets when imported
    finally:
        enable_progress_bars()


def test_without_log_message_drops_that_message_only(caplog):
    log = logging.getLogger("accelerate.utils.other")
    with caplog.at_level(logging.WARNING), without_log_message("accelerate.utils.other", "Removed shared"):
        log.warning("[RANK 0] Removed shared tensor {'lm_head.weight'} while saving.")
        log.warning("something else")
    log.warning("Removed shared tensor, outside the block")
    assert [r.getMessage() for r in caplog.records] == [
        "something else",
        "Removed shared tensor, outside the block",
    ]


def run_merged(repo_root, tmp_path, script: str, *args: str) -> str:
    """A command's stdout and stderr in one stream, in the order written (as in a terminal or `> log 2>&1`),
    with the progress bars' ``\r`` kept (no universal-newline translation)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONWARNINGS"}
    proc = subprocess.run(
        [sys.executable, str(repo_root / script), *args],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        env={**env, "HF_HUB_OFFLINE": "1"},
        timeout=900,
    )
    text = proc.stdout.decode()
    assert proc.returncode == 0, text[-3000:]
    return text


def assert_quiet(text: str) -> None:
    for noise in NOISE:
        assert noise.lower() not in text.lower(), f"{noise!r} in the output:\n{text[-3000:]}"


@pytest.mark.e2e
@pytest.mark.parametrize(
    ("model", "epochs"),
    [("tiny_llama", 2), ("tiny_mbart", 1)],  # LoRA on a causal LM; a seq2seq model with tied embeddings
)
def test_tiny_training_is_quiet_and_summaries_start_lines(repo_root, tmp_path, model, epochs):
    args = [f"model={model}", "debug=train_tiny", f"output.dir={tmp_path / 'out'}"]
    if epochs > 1:
        args += [f"optim.epochs={epochs}", "optim.max_steps=0"]
    text = run_merged(repo_root, tmp_path, "train.py", *args)
    assert_quiet(text)
    assert "training: " in text  # the progress bar was there to collide with
    assert len(re.findall(r"epoch \d+:", text)) == epochs
    # ("generating validation: 4 sentences in 0.6 s" is a line of its own that names the split)
    assert not starts_a_line(text, r"epoch \d+:|before training:|(?<!generating )(?:validation|test):")


@pytest.mark.e2e
def test_tiny_alignment_is_quiet(repo_root, tmp_path):
    text = run_merged(repo_root, tmp_path, "align.py", "debug=tiny", f"output.dir={tmp_path / 'aligned'}")
    assert_quiet(text)
    assert "aligned dataset saved" in text


def test_a_librarys_direct_tqdm_bar_is_off_a_terminal_within_the_block(monkeypatch):
    """transformers' GGUF conversion calls tqdm.auto.tqdm itself (no switch): off a terminal the block keeps it
    from drawing, on a terminal it draws; the constructor is the library's own again after the block."""
    from tqdm import std
    from tqdm.auto import tqdm as auto_tqdm

    from multimsd.console import direct_bars_off

    original = vars(std.tqdm)["__init__"]
    log_file = io.StringIO()
    monkeypatch.setattr(sys, "stderr", log_file)
    with direct_bars_off():
        assert list(auto_tqdm(range(3), desc="Converting tensors", file=sys.stderr)) == [0, 1, 2]
    assert log_file.getvalue() == "" and vars(std.tqdm)["__init__"] is original
    list(auto_tqdm(range(3), desc="Converting tensors", file=sys.stderr))  # outside the block: tqdm's own
    assert "Converting tensors" in log_file.getvalue()
    terminal = Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    with direct_bars_off():
        list(auto_tqdm(range(2), desc="on a terminal", file=sys.stderr))
    assert "on a terminal" in terminal.getvalue()


def test_a_slow_loop_off_a_terminal_says_where_it_is(monkeypatch, caplog):
    """Off a terminal a loop writes a status line every PROGRESS_EVERY seconds, also while one step takes
    longer than that (issue #49: 9 minutes without a line), with done / total, rate and time left."""
    import time

    from multimsd import console

    monkeypatch.setattr(sys, "stderr", io.StringIO())
    monkeypatch.setattr(console, "PROGRESS_EVERY", 0.2)
    monkeypatch.setattr(console, "PROGRESS_TICK", 0.05)
    with caplog.at_level(logging.INFO, logger="multimsd"):
        bar = progress_bar(total=4, initial=0, desc="training", unit="step")
        time.sleep(0.5)  # the first step, slower than PROGRESS_EVERY
        bar.update(1)
        bar.set_postfix(loss="2.5000")
        time.sleep(0.5)
        bar.close()
        time.sleep(0.5)  # closed: no more lines
    lines = [r.getMessage() for r in caplog.records]
    assert lines[0].startswith("training: 0/4 steps (0 %) in ") and "the first step still at work" in lines[0]
    later = [ln for ln in lines if ln.startswith("training: 1/4 steps (25 %)")]
    assert later and re.search(r"steps/s, about \d+ s left, loss 2\.5000$", later[-1])
    assert re.fullmatch(r"training: 1 step in \d+\.\d s, loss 2\.5000", lines[-1])


def test_working_says_a_long_phase_is_still_at_work(monkeypatch, caplog):
    import time

    from multimsd import console

    monkeypatch.setattr(console, "PROGRESS_EVERY", 0.2)
    monkeypatch.setattr(console, "PROGRESS_TICK", 0.05)
    with caplog.at_level(logging.INFO, logger="multimsd"):
        with console.working("loading the model"):
            time.sleep(0.5)
        n = len(caplog.records)
        time.sleep(0.4)
    assert n >= 1 and len(caplog.records) == n  # lines while at work, none after
    assert re.fullmatch(r"loading the model: still at work after \d+ s", caplog.records[0].getMessage())
    assert [console.duration(s) for s in (5, 75, 3725)] == ["5 s", "1 min 15 s", "1 h 02 min"]
