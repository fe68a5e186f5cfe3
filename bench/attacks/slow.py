"""Slow clients: connections that trickle their headers, trickle their body, or send nothing,
against `compaction-playground serve` as the README runs it.

Each connection sends one piece every 3 s (a header line, or 10 bytes of a 900 KB body it
announced) and never finishes; a connection the server closes is opened again at once, as a
patient attacker would, and counted as dropped. The question: does the home page stay within
5x its idle p99 with --connections of them (default 16, 64 and 256)?
"""

from __future__ import annotations

import argparse
import selectors
import socket
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

from bench.attacks import Attack, Row
from bench.attacks.probe import under_load
from bench.attacks.served import readme_server

PACE = 3.0  # seconds between two pieces of one connection
BODY_SIZE = 900_000  # announced, never sent

OPENINGS = {
    "slow-headers": b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n",
    "slow-bodies": (b"POST /transcripts HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/x-www-form-urlencoded\r\n"
                    b"Content-Length: %d\r\n\r\ntranscript=" % BODY_SIZE),
    "idle-connections": b"",
}
PIECES = {"slow-headers": b"X-Trickle: 1\r\n", "slow-bodies": b"a" * 10, "idle-connections": b""}


class SlowClients:
    """`count` connections of one kind, each sending its next piece every PACE seconds."""

    def __init__(self, port: int, kind: str, count: int):
        self.port, self.kind, self.count = port, kind, count
        self.dropped = 0
        self.lifetimes: list[float] = []
        self.opened = 0

    def open(self) -> tuple[socket.socket, float] | None:
        try:
            connection = socket.create_connection(("127.0.0.1", self.port), timeout=5)
            connection.sendall(OPENINGS[self.kind])
        except OSError:
            return None
        connection.setblocking(False)
        self.opened += 1
        return connection, time.monotonic()

    def __call__(self, stop: threading.Event) -> Counter:
        statuses: Counter = Counter()
        connections = [c for c in (self.open() for _ in range(self.count)) if c]
        while not stop.wait(PACE):
            alive = []
            for connection, since in connections:
                if self.answered(connection, statuses) or not self.send(connection):
                    self.dropped += 1
                    self.lifetimes.append(time.monotonic() - since)
                    connection.close()
                    again = self.open()
                    if again:
                        alive.append(again)
                else:
                    alive.append((connection, since))
            connections = alive
        for connection, _ in connections:
            connection.close()
        return statuses

    def send(self, connection: socket.socket) -> bool:
        try:
            if PIECES[self.kind]:
                connection.send(PIECES[self.kind])
            return True
        except OSError:
            return False

    @staticmethod
    def answered(connection: socket.socket, statuses: Counter) -> bool:
        """Whether the server answered or closed this connection (its status counted)."""
        with selectors.DefaultSelector() as selector:
            selector.register(connection, selectors.EVENT_READ)
            if not selector.select(0):
                return False
        try:
            data = connection.recv(4096)
        except OSError:
            return True
        if data.startswith(b"HTTP/"):
            statuses[int(data.split(b" ", 2)[1])] += 1
        return True

    def note(self) -> str:
        if not self.dropped:
            return f"{self.opened} connections, none dropped"
        return f"{self.opened} connections, {self.dropped} dropped (median after {sorted(self.lifetimes)[len(self.lifetimes) // 2]:.0f} s)"


def slow_attacks(kind: str):
    def run(options: argparse.Namespace) -> list[Row]:
        with tempfile.TemporaryDirectory(prefix="attack-slow-") as folder, readme_server(Path(folder) / "serve.log") as (port, _):
            rows = []
            for count in options.connections:
                load = SlowClients(port, kind, count)
                rows.append(under_load(f"{count} {kind}", port, load, duration=options.duration, idle=options.idle,
                                       timeout=options.timeout, note=load.note))
                time.sleep(PACE)  # the last ones closed before the next count's idle probe
            return rows
    return run


ATTACKS = [
    Attack("slow-headers", "connections sending one header line every 3 s, never ending their headers", slow_attacks("slow-headers")),
    Attack("slow-bodies", "POSTs announcing 900 KB and sending 10 B every 3 s", slow_attacks("slow-bodies")),
    Attack("idle-connections", "connections that open and send nothing", slow_attacks("idle-connections")),
]
