"""The servers the tests run against are real (tests/servers.py): a PostgreSQL the app reaches
as a role of its own that is no superuser, and a Redis that keeps what it is told."""

from __future__ import annotations

import socket
import urllib.parse


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
