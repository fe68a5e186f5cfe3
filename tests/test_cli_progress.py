"""The command line's sweep shows a progress bar on the terminal once it has run a second, and
nothing where stderr is no terminal (a pipe, a log): run as a person runs it, in a terminal of
its own (a pseudo-terminal, 100 columns wide)."""

from __future__ import annotations

import fcntl
import json
import os
import pty
import struct
import subprocess
import sys
import termios

from bench.transcript import generate_transcript


def sweep_command(tmp_path) -> list[str]:
    chat = tmp_path / "long.json"
    chat.write_text(json.dumps(generate_transcript(400)), encoding="utf-8")
    return [sys.executable, "-m", "webapp", "sweep", str(chat), "--keeps", "2"]


def test_a_long_sweep_shows_a_progress_bar_on_the_terminal(tmp_path):
    terminal, child = pty.openpty()
    fcntl.ioctl(child, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))
    process = subprocess.Popen(sweep_command(tmp_path), stdout=subprocess.PIPE, stderr=child)
    os.close(child)
    shown = b""
    while True:
        try:
            chunk = os.read(terminal, 4096)
        except OSError:  # the command ended: its terminal is closed
            break
        if not chunk:
            break
        shown += chunk
    table = process.communicate()[0].decode()
    assert process.returncode == 0 and "advice:" in table, "the table goes to stdout, whole"
    frames = shown.decode(errors="replace").split("\r")
    steps = [frame for frame in frames if frame.startswith("sweep:") and " comparisons" in frame]
    assert steps, f"no progress bar on the terminal: {shown[-300:]!r}"
    assert steps[-1].split("|")[-1].strip().startswith("11/11"), "the bar ends at the sweep's last comparison"


def test_in_a_pipe_the_sweep_writes_no_bar(tmp_path):
    done = subprocess.run(sweep_command(tmp_path), capture_output=True, text=True, check=True)
    assert "comparisons" not in done.stderr and "advice:" in done.stdout
