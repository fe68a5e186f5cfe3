"""The code passes ruff with the rules of pyproject.toml ([tool.ruff])."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_ruff_finds_nothing():
    run = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "--output-format", "concise", "."], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, f"ruff check . found problems (fix them, or see [tool.ruff] in pyproject.toml):\n{run.stdout}{run.stderr}"
