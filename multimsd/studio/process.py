"""A studio in a child process, started as a user starts it (``multimsd studio PATH …``): what the tests'
``studio_server`` fixture and ``benchmarks/studio_300.py`` run against.

:class:`StudioProcess` starts the command with ``--port 0`` (a later ``--port N`` wins), waits for the line
with the URL it prints, and stops it: ``stop()`` sends Ctrl-C (SIGINT) and waits, ``kill()`` sends SIGKILL (a
crash, the journal's test); either one closes the pipes. A studio that exits before printing its URL is an
error that quotes its stderr (the one ``error:`` line).
"""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

from multimsd.errors import MultimsdError


class StudioProcess:
    """``multimsd studio ROOT --port 0 *args`` in a child process, once it serves (``url``, ``port``)."""

    def __init__(self, root: Path, *args: str, timeout: float = 240, env: dict | None = None):
        # The checkout first on the path: the child runs the code under test, installed or not.
        checkout = str(Path(__file__).resolve().parents[2])
        env = {**os.environ, **(env or {})}
        env["PYTHONPATH"] = os.pathsep.join(p for p in (checkout, env.get("PYTHONPATH")) if p)
        cmd = [sys.executable, "-m", "multimsd", "studio", str(root), "--port", "0", *args]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        self.pid = self.proc.pid
        try:
            line = self._first_line(timeout)
        except BaseException:
            self.kill()
            raise
        if not line.startswith("multimsd studio: http://"):
            self.kill()
            raise MultimsdError(f"studio printed {line!r}, not its URL")
        self.url = line.split(": ", 1)[1].strip()  # http://127.0.0.1:PORT/ (with ?token=… off loopback)
        self.port = int(self.url.split(":")[2].split("/")[0])

    def _first_line(self, timeout: float) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if select.select([self.proc.stdout], [], [], 1)[0]:
                return self.proc.stdout.readline()
            if self.proc.poll() is not None:
                raise MultimsdError(
                    f"studio exited {self.proc.returncode}: {self.proc.stderr.read().strip()}"
                )
        raise MultimsdError(f"studio printed no URL in {timeout:g} s")

    def stop(self, sig: int = signal.SIGINT, timeout: float = 30) -> int:
        """Send ``sig`` (Ctrl-C by default), wait (SIGKILL after ``timeout`` s), close the pipes; the exit code."""
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=timeout)
        for pipe in (self.proc.stdout, self.proc.stderr):
            if pipe is not None and not pipe.closed:
                pipe.close()
        return self.proc.returncode

    def kill(self) -> int:
        """SIGKILL: the studio dies at once, as in a crash or a power cut."""
        return self.stop(signal.SIGKILL)

    def __enter__(self) -> StudioProcess:
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


__all__ = ["StudioProcess"]
