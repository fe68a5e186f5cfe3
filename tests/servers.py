"""Real PostgreSQL and Redis servers for the tests (never mocks), each on a free loopback port.

A test session uses the servers that scripts/test started and named in the environment
(`TEST_POSTGRES_URL`, `TEST_REDIS_URL`), or starts throwaway ones itself (the fixtures in
tests/conftest.py), so a single test file runs alone too. A test that stops its server (the
faults of tests/test_postgres_store.py) starts one of its own.

PostgreSQL: a throwaway cluster made with Debian's `initdb` and run with `pg_ctl` (about a
second), in a folder of its own under the temporary directory; as root it runs as the
`postgres` user, since PostgreSQL refuses to run as root. The tests connect as `playground`,
a role that owns its database and is no superuser, as the app would in production. fsync is
off (a crash of the machine would lose the cluster, which is thrown away anyway); commits
still wait for their WAL to reach the operating system, so a server killed outright loses no
commit it acknowledged.

Redis: `redis-server` with no persistence, daemonized with a pid file.

    python -m tests.servers start      # prints `export` lines (scripts/test evals them)
    python -m tests.servers stop DIR   # stops the servers started in DIR
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse
import uuid
from collections.abc import Iterator
from pathlib import Path

from bench.server import free_port

ROLE = "playground"
POSTGRES_URL = "TEST_POSTGRES_URL"
REDIS_URL = "TEST_REDIS_URL"
SERVERS_DIR = "TEST_SERVERS_DIR"


def postgres_bin(program: str) -> str:
    """Debian keeps PostgreSQL's programs under /usr/lib/postgresql/<version>/bin, off PATH."""
    found = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{program}"), key=lambda path: int(Path(path).parts[4]))
    path = found[-1] if found else shutil.which(program)
    if path is None:
        raise RuntimeError(f"{program} is missing: scripts/test installs Debian's postgresql package")
    return path


def owned_folder(prefix: str, user: str | None) -> Path:
    """A new folder under the temporary directory that `user` (None: this process's) owns."""
    folder = Path(tempfile.mkdtemp(prefix=prefix))
    if user is not None:
        account = pwd.getpwnam(user)
        os.chown(folder, account.pw_uid, account.pw_gid)
    return folder


class PostgresServer:
    """A throwaway PostgreSQL cluster on 127.0.0.1:`port`, with the role and database
    `playground`; `url` connects to it. Stop it and start it again: its data stays."""

    def __init__(self, folder: Path | None = None, durable: bool = False):
        # PostgreSQL refuses to run as root: as root, the cluster is the postgres user's.
        self.user = "postgres" if os.geteuid() == 0 else None
        # Durable: fsync as production runs it (benchmarks); the tests' cluster goes without.
        self.durable = durable
        self.folder = folder or owned_folder("playground-postgres-", self.user)
        self.data = self.folder / "data"
        self.port = int((self.folder / "port").read_text()) if (self.folder / "port").exists() else free_port()
        self.url = f"postgresql://{ROLE}@127.0.0.1:{self.port}/{ROLE}"

    def _run(self, *command: str) -> None:
        prefix = ["runuser", "-u", self.user, "--"] if self.user else []
        done = subprocess.run([*prefix, *command], capture_output=True, text=True, cwd=self.folder)
        if done.returncode:
            raise RuntimeError(f"{' '.join(command)} failed: {done.stdout}{done.stderr}")

    def start(self) -> PostgresServer:
        created = self.data.exists()
        if not created:
            self._run(postgres_bin("initdb"), "--pgdata", str(self.data), "--username", "postgres", "--auth", "trust",
                      "--encoding", "UTF8", "--locale", "C", "--no-sync")
            (self.folder / "port").write_text(str(self.port))
        settings = f"-c port={self.port} -c listen_addresses=127.0.0.1 -c unix_socket_directories={self.folder}"
        if not self.durable:
            settings += " -c fsync=off -c full_page_writes=off"
        self._run(postgres_bin("pg_ctl"), "--pgdata", str(self.data), "--log", str(self.folder / "postgres.log"),
                  "--options", settings, "--wait", "start")
        if not created:
            self.sql(f"CREATE ROLE {ROLE} LOGIN", f"CREATE DATABASE {ROLE} OWNER {ROLE}")
        return self

    def running(self) -> bool:
        prefix = ["runuser", "-u", self.user, "--"] if self.user else []
        return subprocess.run([*prefix, postgres_bin("pg_ctl"), "--pgdata", str(self.data), "status"],
                              capture_output=True, cwd=self.folder).returncode == 0

    def stop(self, mode: str = "fast") -> None:
        """Stop the server: `fast` as an operator does, `immediate` as a crash does (no
        checkpoint; the next start replays the log)."""
        self._run(postgres_bin("pg_ctl"), "--pgdata", str(self.data), "--mode", mode, "--wait", "stop")

    def remove(self) -> None:
        with contextlib.suppress(RuntimeError):
            self.stop("immediate")
        shutil.rmtree(self.folder, ignore_errors=True)

    def sql(self, *statements: str, user: str = "postgres", database: str = "postgres") -> None:
        import psycopg

        with psycopg.connect(host="127.0.0.1", port=self.port, user=user, dbname=database, autocommit=True) as connection:
            for statement in statements:
                connection.execute(statement)


def with_settings(url: str, **settings: str) -> str:
    """`url` whose connections start with these settings (libpq's `options`, added to any)."""
    parts = urllib.parse.urlsplit(url)
    query = dict(urllib.parse.parse_qsl(parts.query))
    query["options"] = " ".join([*filter(None, [query.get("options")]), *(f"-c{name}={value}" for name, value in settings.items())])
    # Spaces as %20: libpq reads a URL's percent escapes, not form encoding's "+".
    return urllib.parse.urlunsplit(parts._replace(query=urllib.parse.urlencode(query, quote_via=urllib.parse.quote)))


@contextlib.contextmanager
def empty_schema(url: str):
    """A new, empty schema of the database at `url`, dropped afterwards: yields the URL whose
    connections use it, so that each test has an empty store on one shared server."""
    import psycopg

    schema = f"test_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(url, autocommit=True) as connection:
        connection.execute(f"CREATE SCHEMA {schema}")
    try:
        yield with_settings(url, search_path=schema)
    finally:
        with psycopg.connect(url, autocommit=True) as connection:
            connection.execute(f"DROP SCHEMA {schema} CASCADE")


REDIS_DATABASES = 256  # one per pytest-xdist worker (conftest.py, redis_url), on however many cores


class RedisServer:
    """A throwaway redis-server on 127.0.0.1:`port`, without persistence; `url` connects to it."""

    def __init__(self, folder: Path | None = None):
        self.folder = folder or owned_folder("playground-redis-", None)
        self.port = int((self.folder / "port").read_text()) if (self.folder / "port").exists() else free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> RedisServer:
        program = shutil.which("redis-server") or "/usr/bin/redis-server"
        if not Path(program).exists():
            raise RuntimeError("redis-server is missing: scripts/test installs Debian's redis-server package")
        (self.folder / "port").write_text(str(self.port))
        subprocess.run([program, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                        "--databases", str(REDIS_DATABASES), "--daemonize", "yes", "--dir", str(self.folder), "--pidfile", str(self.folder / "redis.pid"),
                        "--logfile", str(self.folder / "redis.log")], check=True)
        deadline = time.monotonic() + 10
        while not self.answers():
            if time.monotonic() > deadline:
                raise RuntimeError(f"redis-server did not answer on port {self.port}: {self.folder / 'redis.log'}")
            time.sleep(0.05)
        return self

    def answers(self) -> bool:
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", self.port), timeout=1) as connection:
            connection.sendall(b"PING\r\n")
            return connection.recv(16).startswith(b"+PONG")
        return False

    def stop(self) -> None:
        pid_file = self.folder / "redis.pid"
        with contextlib.suppress(FileNotFoundError, ProcessLookupError, ValueError):
            os.kill(int(pid_file.read_text()), signal.SIGTERM)
        deadline = time.monotonic() + 10
        while self.answers() and time.monotonic() < deadline:
            time.sleep(0.05)

    def remove(self) -> None:
        self.stop()
        shutil.rmtree(self.folder, ignore_errors=True)


def started(server_class):
    """A throwaway server, started; in a test, a failure that says what to install where the
    machine lacks it (scripts/test installs both)."""
    import pytest

    try:
        return server_class().start()
    except RuntimeError as error:
        pytest.fail(str(error))


def session_server(variable: str, server_class) -> Iterator[str]:
    """For a session fixture: the URL in `variable` (scripts/test's server), else a throwaway
    server's, removed when the session ends."""
    if os.environ.get(variable):
        yield os.environ[variable]
        return
    server = started(server_class)
    yield server.url
    server.remove()


@contextlib.contextmanager
def production_server(folder: Path, workers: int = 2, **environment: str):
    """`compaction-playground serve` (gunicorn, its asyncio workers) as an operator starts it,
    with `environment` added to this process's, its log in `folder`; yields its base URL."""
    from bench.server import wait_until_answering

    port = free_port()
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / "gunicorn.log", "w") as log:
        process = subprocess.Popen([sys.executable, "-m", "webapp", "serve", "--port", str(port), "--workers", str(workers)], cwd=folder,
                                   env={**os.environ, "CONTROL_SOCKET": str(folder / "gunicorn.ctl"), **environment}, stdout=subprocess.DEVNULL, stderr=log)
    try:
        wait_until_answering(port, "/", process, 120, f"compaction-playground serve did not start: {folder / 'gunicorn.log'}")
        yield f"http://127.0.0.1:{port}"
    finally:
        process.terminate()
        process.wait(30)


def main(arguments: list[str]) -> int:
    if arguments[:1] == ["start"]:
        postgres, redis = PostgresServer(), RedisServer()
        try:
            postgres.start()
            redis.start()
        except BaseException:  # no export line: nobody would stop what did start
            postgres.remove()
            redis.remove()
            raise
        print(f"export {POSTGRES_URL}={postgres.url} {REDIS_URL}={redis.url}"
              f" {SERVERS_DIR}={postgres.folder}:{redis.folder}")
        return 0
    if arguments[:1] == ["stop"] and len(arguments) == 2:
        postgres_folder, redis_folder = arguments[1].split(":")
        PostgresServer(Path(postgres_folder)).remove()
        RedisServer(Path(redis_folder)).remove()
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
