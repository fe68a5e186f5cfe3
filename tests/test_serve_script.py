"""scripts/serve as people run it: two instances on one machine stay independent."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def start_serve(port: int, home: Path) -> subprocess.Popen:
    environment = {key: value for key, value in os.environ.items() if key != "XDG_RUNTIME_DIR"}
    environment.update(HOME=str(home), PORT=str(port), VENV=sys.prefix, WORKERS="1")
    process = subprocess.Popen(
        [str(ROOT / "scripts" / "serve")], cwd=ROOT, env=environment,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=10) as response:
                if response.status == 200:
                    return process
        except OSError:
            time.sleep(0.3)
    stop(process)
    raise AssertionError(f"scripts/serve did not answer on port {port}")


def stop(process: subprocess.Popen) -> None:
    os.killpg(process.pid, signal.SIGTERM)
    process.wait(timeout=30)


def sockets(directory: Path) -> list[Path]:
    return sorted(path for path in directory.rglob("*") if path.is_socket())


@pytest.fixture
def home():
    """A home folder on a short path: the control socket's path, ~/.gunicorn/compaction-playground-PORT.ctl,
    must fit a Unix socket's 107 bytes, and under a pytest-xdist worker's tmp_path it took 114
    (gunicorn then only logs that it could not open it)."""
    with tempfile.TemporaryDirectory(prefix="home-") as folder:
        yield Path(folder)


def test_two_instances_keep_their_own_control_socket(home):
    first_port, second_port = free_port(), free_port()
    first = start_serve(first_port, home)
    try:
        second = start_serve(second_port, home)
    except BaseException:
        stop(first)
        raise
    try:
        assert len(sockets(home)) == 2, "each instance has a control socket of its own"
        stop(first)
        [left] = sockets(home)
        # The survivor still answers on its socket: stopping the first did not delete it.
        answer = subprocess.run(
            [str(Path(sys.prefix) / "bin" / "gunicornc"), "-s", str(left), "-c", "show workers"],
            capture_output=True, text=True, timeout=30,
        )
        assert answer.returncode == 0 and "Total: 1" in answer.stdout, answer.stdout + answer.stderr
    finally:
        if second.poll() is None:
            stop(second)
        if first.poll() is None:
            stop(first)
