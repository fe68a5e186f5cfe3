"""The servers the tests run against are real (tests/servers.py): a PostgreSQL the app reaches
as a role of its own that is no superuser, and a Redis that keeps what it is told."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import urllib.parse
from pathlib import Path

from tests.servers import POSTGRES_URL, REDIS_URL, SERVERS_DIR, PostgresServer

ROOT = Path(__file__).resolve().parents[1]


def test_postgresql_is_reached_as_a_role_that_owns_its_database_and_is_no_superuser(postgres_url):
    import psycopg

    with psycopg.connect(postgres_url) as connection:
        role, superuser = connection.execute("SELECT rolname, rolsuper FROM pg_roles WHERE rolname = current_user").fetchone()
        owner = connection.execute("SELECT pg_get_userbyid(datdba) FROM pg_database WHERE datname = current_database()").fetchone()[0]
        version = connection.info.server_version
    assert (role, superuser, owner) == ("playground", False, "playground")
    assert version >= 120000


def redis_command(url: str, *words: str) -> bytes:
    """One command in Redis's protocol (RESP), its raw answer."""
    parts = urllib.parse.urlsplit(url)
    request = f"*{len(words)}\r\n" + "".join(f"${len(word.encode())}\r\n{word}\r\n" for word in words)
    with socket.create_connection((parts.hostname, parts.port), timeout=5) as connection:
        connection.sendall(request.encode())
        return connection.recv(4096)


def test_redis_keeps_what_it_is_told(redis_url):
    assert redis_command(redis_url, "SET", "test:servers", "gardé") == b"+OK\r\n"
    assert redis_command(redis_url, "GET", "test:servers") == "$6\r\ngardé\r\n".encode()
    assert redis_command(redis_url, "DEL", "test:servers") == b":1\r\n"


def processes_under(folder: Path) -> list[str]:
    """The command lines of the running processes that name `folder` (a server's data)."""
    found = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            command = cmdline.read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:  # ended meanwhile
            continue
        if str(folder) in command:
            found.append(command)
    return found


def test_scripts_test_stops_before_the_tests_when_a_server_fails_and_leaves_none_running(tmp_path):
    """scripts/test with a redis-server that cannot start, after PostgreSQL has: it fails
    before pytest runs, and the PostgreSQL cluster it started is stopped and deleted. Its venv
    here only stands for the one already installed: pip and fetch-vocab do nothing, pytest
    leaves a mark, and tests.servers runs for real."""
    # The servers' folders go under TMPDIR, where PostgreSQL's own user must reach them.
    servers = Path(tempfile.mkdtemp(prefix="scripts-test-servers-"))
    servers.chmod(0o755)
    marker = tmp_path / "pytest-ran"
    (tmp_path / "venv" / "bin").mkdir(parents=True)
    (tmp_path / "bin").mkdir()
    python = tmp_path / "venv" / "bin" / "python"
    python.write_text(f"""#!/bin/sh
case "$1 $2" in
  "-m tests.servers") exec {sys.executable} "$@" ;;
  "-m pytest") touch {marker} ;;
esac
""")
    redis = tmp_path / "bin" / "redis-server"
    redis.write_text("#!/bin/sh\necho 'redis-server: cannot start here' >&2\nexit 1\n")
    for program in (python, redis):
        program.chmod(0o755)
    # Not the servers of a scripts/test that runs this test: those are not this run's to stop.
    environment = {name: value for name, value in os.environ.items() if name not in {POSTGRES_URL, REDIS_URL, SERVERS_DIR}}
    environment.update(VENV=str(tmp_path / "venv"), PATH=f"{tmp_path / 'bin'}:{os.environ['PATH']}", TMPDIR=str(servers))
    try:
        done = subprocess.run(["bash", str(ROOT / "scripts" / "test")], cwd=ROOT, env=environment, capture_output=True, text=True, timeout=300)
        assert done.returncode != 0, done.stdout + done.stderr
        assert "cannot start here" in done.stderr
        assert not marker.exists(), "pytest ran without its servers"
        assert list(servers.iterdir()) == [] and processes_under(servers) == []
    finally:
        for folder in servers.glob("playground-postgres-*"):
            PostgresServer(folder).remove()
        shutil.rmtree(servers, ignore_errors=True)
