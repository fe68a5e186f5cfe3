"""`compaction-playground record`: a recording endpoint between an agent and its model
provider. The agent's base URL points at it; it forwards each call to the upstream unchanged
(proxy.py) and writes the run as a transcript the playground replays (recording.py), with the
provider's own usage for every call. Not part of the core: it does network I/O."""

from __future__ import annotations

import signal
import sys
import threading
from pathlib import Path

from ..core.inputs.transcripts import transcript_id
from .proxy import RecordingServer, Upstream, UpstreamError
from .recording import Recording

__all__ = ["RecordingServer", "Upstream", "UpstreamError", "Recording", "start", "record"]

PLAYGROUND = "http://127.0.0.1:8000"
# On stop, how long the calls still being answered are waited for.
SETTLE_SECONDS = 5.0


def start(upstream: str, out: Path, host: str = "127.0.0.1", port: int = 8090, timeout: float = 600.0, log=None) -> RecordingServer:
    """A recording server bound to (host, port), not yet serving; UpstreamError for a bad
    upstream address, OSError when the port cannot be had."""
    target = Upstream.parse(upstream)
    return RecordingServer((host, port), target, Recording(out, target.address, log), timeout)


def record(upstream: str, out: Path, host: str, port: int, timeout: float) -> int:
    """Serve until Ctrl-C or SIGTERM, then say how to open what was recorded."""
    try:
        server = start(upstream, out, host, port, timeout, log=lambda line: print(line, flush=True))
    except UpstreamError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    except OSError as error:
        print(f"error: cannot listen on {host}:{port}: {error.strerror or error}", file=sys.stderr)
        return 2
    server.recording.write()
    print(f"Recording to {out}: point the agent at {server.url} (OPENAI_BASE_URL={server.url}); calls go to {server.recording.upstream}. Ctrl-C stops.", flush=True)

    def stop(signum, frame):
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, stop) if threading.current_thread() is threading.main_thread() else None
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
    server.recording.settle(SETTLE_SECONDS)
    print(stopped_words(server.recording), flush=True)
    return 0


def stopped_words(recording: Recording) -> str:
    """What was recorded, and the two ways to open it."""
    calls = recording.calls
    counted = sum(1 for call in calls if call.get("usage"))
    compacted = sum(1 for call in calls if call.get("compaction"))
    link = f"{PLAYGROUND}/play/{transcript_id(recording.path.read_bytes())}"
    return "\n".join([
        f"Recorded {_many(len(calls), 'call')} in {recording.path} ({counted} with the provider's usage, {_many(compacted, 'compaction')} by the agent).",
        f"  replay it:   compaction-playground replay {recording.path}",
        f"  in the browser: compaction-playground serve, upload {recording.path} at {PLAYGROUND}/transcripts/new; its link is {link}",
    ])


def _many(count: int, word: str) -> str:
    return f"{count} {word}" + ("" if count == 1 else "s")
