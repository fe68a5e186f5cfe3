"""The playground as the README serves it: `compaction-playground serve` in a subprocess, on a
free loopback port, for as long as a `with` lasts."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

from bench.server import free_port, wait_until_answering

ROOT = Path(__file__).resolve().parents[2]


@contextlib.contextmanager
def readme_server(log: Path, environment: dict[str, str] | None = None):
    """Yields (port, process) of `python -m webapp serve --port P` run from this checkout (so a
    checkout of another branch measures its own server); gunicorn's log goes to `log`. The
    transcripts go to a temporary folder, so a run leaves nothing behind."""
    port = free_port()
    with tempfile.TemporaryDirectory(prefix="bench-serve-") as folder, open(log, "wb") as output:
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
               "CONTROL_SOCKET": str(Path(folder) / "gunicorn.ctl"), "HOME": folder, **(environment or {})}
        process = subprocess.Popen([sys.executable, "-m", "webapp", "serve", "--port", str(port)], cwd=ROOT, env=env,
                                   stdout=output, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            wait_until_answering(port, "/", process, 90, f"compaction-playground serve did not start; see {log}")
            yield port, process
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
