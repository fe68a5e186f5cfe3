"""Serve the bench app with gunicorn on a free loopback port, for as long as a `with` lasts."""

from __future__ import annotations

import contextlib
import http.client
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.parse
from pathlib import Path

from bench.app import HELLO_PATH

ROOT = Path(__file__).resolve().parents[1]
GUNICORN = Path(sys.executable).with_name("gunicorn")


def percentile(values: list[float], share: float) -> float:
    """The `share` quantile (0.99 for p99), interpolated between the two nearest values as
    statistics.quantiles' inclusive method does; every benchmark reads its tails this way."""
    if len(values) < 2:
        return values[0] if values else float("nan")
    return statistics.quantiles(values, n=100, method="inclusive")[round(share * 100) - 1]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def get(
    port: int, path: str, headers: dict[str, str] | None = None, method: str = "GET", body: bytes | None = None, timeout: float = 60
) -> tuple[int, bytes, dict[str, str]]:
    """One request on 127.0.0.1 (a new connection, as gunicorn's sync workers close each one);
    the answer's header names in lowercase."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        connection.request(method, path, body=body, headers=headers or {})
        response = connection.getresponse()
        # Header names as case-insensitive as HTTP's: gunicorn's ASGI worker sends them lowercase.
        return response.status, response.read(), {name.lower(): value for name, value in response.getheaders()}
    finally:
        connection.close()


def paste(port: int, transcript: str) -> str:
    """Pastes a transcript through the form as a browser does; returns its scenario id."""
    body = urllib.parse.urlencode({"transcript": transcript}).encode()
    status, text, headers = get(port, "/transcripts", {"Content-Type": "application/x-www-form-urlencoded"}, "POST", body)
    location = headers.get("location", "")
    if status != 303 or "/play/" not in location:
        raise SystemExit(f"paste refused ({status}): {text[:300]!r}")
    return urllib.parse.urlsplit(location).path.removeprefix("/play/")


def status_kib(pid: int, field: str) -> int:
    """A process's memory figure from /proc (VmRSS now, VmHWM its peak), in KiB; 0 once it is gone."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def wait_until_answering(port: int, path: str, process: subprocess.Popen, seconds: float, failure: str) -> None:
    """Returns once `path` answers 200 on 127.0.0.1:`port`; stops with `failure` when the
    server's process ends or `seconds` pass first."""
    deadline = time.monotonic() + seconds
    while True:
        with contextlib.suppress(OSError):
            if get(port, path, timeout=10)[0] == 200:
                return
        if process.poll() is not None or time.monotonic() > deadline:
            raise SystemExit(failure)
        time.sleep(0.2)


@contextlib.contextmanager
def serve(workers: int | None = 1, config: dict | None = None, error_log: str = "-", production: bool = False):
    """Yields (port, the gunicorn master process); stops it on exit. `config` goes to
    create_app (gunicorn reads the factory's arguments as Python literals); gunicorn's own
    log goes to `error_log` (stderr by default). `production` serves with the settings of
    `compaction-playground serve` (webapp/gunicorn_config.py, webapp/asgi.py); `workers`
    overrides theirs."""
    port = free_port()
    settings = ["--config", "python:webapp.gunicorn_config"] if production else []
    # gunicorn_config's worker serves an ASGI app, warmed as it warms its own.
    application = f"bench.app:create_bench_asgi_app({config or {}!r}, warm=True)" if production else f"bench.app:create_bench_app({config or {}!r})"
    if workers is not None:
        settings += ["--workers", str(workers)]
    # Its own control socket: gunicorn's default (~/.gunicorn/gunicorn.ctl) is shared by every
    # instance of the user, and stopping one would delete another's.
    control_dir = tempfile.TemporaryDirectory(prefix="bench-gunicorn-")
    process = subprocess.Popen(
        [str(GUNICORN), *settings, "--bind", f"127.0.0.1:{port}", "--chdir", str(ROOT),
         "--control-socket", os.path.join(control_dir.name, "gunicorn.ctl"),
         "--log-level", "warning", "--error-logfile", error_log, application],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))},
    )
    try:
        wait_until_answering(port, HELLO_PATH, process, 60, f"gunicorn did not start on 127.0.0.1:{port}")
        yield port, process
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        control_dir.cleanup()
