"""One empty transcript store of either kind, for the tests that hold for both (the `stores`
fixture of tests/conftest.py): the folder with its SQLite index (the default), and PostgreSQL
(an empty schema of the session's real server).

Apps and stores made here are closed when the test ends. Every app of a folder store shares
its folder, as the workers of one machine do; every app of a PostgreSQL store gets a folder of
its own, empty, as separate hosts have, so that what one app reads of another's paste can only
have come through the database.
"""

from __future__ import annotations

import itertools
from pathlib import Path

from webapp.core.inputs.store import StoredTranscripts, TranscriptStore
from webapp.core.inputs.store_index import disk_bytes
from webapp.core.inputs.store_rules import blocks

FOLDER, POSTGRESQL = "folder", "postgresql"


class Stores:
    def __init__(self, kind: str, folder: Path, url: str | None = None):
        self.kind = kind
        self.folder = folder
        self.url = url
        self._opened: list[StoredTranscripts] = []
        self._hosts = itertools.count(1)

    def config(self, **config) -> dict:
        """An app's configuration on this store."""
        if self.kind == FOLDER:
            return {"TRANSCRIPT_DIR": str(self.folder), **config}
        return {"TRANSCRIPT_DIR": str(self.folder.with_name(f"host-{next(self._hosts)}")), "TRANSCRIPT_STORE": self.url, **config}

    def app(self, **config):
        from webapp import create_app

        app = create_app({"TESTING": True, **self.config(**config)})
        self._opened.append(app.extensions["transcript_store"])
        return app

    def store(self, max_bytes: int = 100_000, max_total_bytes: int = 1_000_000, **limits) -> StoredTranscripts:
        if self.kind == FOLDER:
            store = TranscriptStore(self.folder, max_bytes=max_bytes, max_total_bytes=max_total_bytes, **limits)
        else:
            from webapp.core.inputs.store_postgres import PostgresStore

            store = PostgresStore(self.url, max_bytes=max_bytes, max_total_bytes=max_total_bytes, **limits)
        self._opened.append(store)
        return store

    def disk(self, name: str) -> int:
        """What one stored transcript takes, as the store counts it: its file's blocks on disk,
        or its body in whole 4 KiB blocks."""
        if self.kind == FOLDER:
            return disk_bytes(self.folder / f"{name}.json")
        return blocks(len(self.sql("SELECT data FROM bodies WHERE name = %s", name)[0][0]))

    def stored(self) -> set[str]:
        """The names whose bodies the store holds, read behind its back (the files, the rows)."""
        if self.kind == FOLDER:
            return {path.stem for path in self.folder.glob("t-*.json")}
        return {name for (name,) in self.sql("SELECT name FROM bodies")}

    def delete_body(self, name: str) -> None:
        """Delete a stored body behind the index, as an operator might by hand."""
        if self.kind == FOLDER:
            (self.folder / f"{name}.json").unlink()
        else:
            self.sql("DELETE FROM bodies WHERE name = %s", name)

    def sql(self, statement: str, *params) -> list[tuple]:
        import psycopg

        with psycopg.connect(self.url, autocommit=True) as connection:
            cursor = connection.execute(statement, params)
            return cursor.fetchall() if cursor.description else []

    def close(self) -> None:
        for store in self._opened:
            store.close()
