"""Attacks on the playground as `compaction-playground serve` runs it, one entry point for all:
each one's home page p99 under the attack ÷ its idle p99 (goal: at most 5x) and the count of
5xx answers anyone got. 127.0.0.1 only; each attack stops by itself after --duration.

    .venv/bin/python bench/attack.py                   # every attack
    .venv/bin/python bench/attack.py --list
    .venv/bin/python bench/attack.py cost --attackers 8 --duration 30

The attacks live in bench/attacks/, one module each (registered in bench/attacks/__init__.py).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.attacks import GOAL, registry  # noqa: E402


def numbers(text: str) -> list[int]:
    return [int(part) for part in text.split(",")]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("attacks", nargs="*", help="the attacks to run, by name (default: every one; --list names them)")
    parser.add_argument("--list", action="store_true", help="name every attack and what it does, and stop")
    parser.add_argument("--duration", type=float, default=30, help="seconds of each attack (default 30)")
    parser.add_argument("--idle", type=int, default=50, help="idle probes of the home page before each (default 50)")
    parser.add_argument("--timeout", type=float, default=20, help="seconds a probe waits for an answer (default 20)")
    parser.add_argument("--attackers", type=numbers, default=[8], help="cost attackers at once, e.g. 2,4,8 (default 8)")
    parser.add_argument("--distinct", type=int, default=0, help="cost: distinct 543 KB transcripts for the memory run after (default 0: none; 30 as bench/worst_case.py did)")
    parser.add_argument("--connections", type=numbers, default=[16, 64, 256], help="slow connections at once (default 16,64,256)")
    args = parser.parse_args(argv)
    attacks = registry()
    if args.list:
        for attack in attacks.values():
            print(f"{attack.name:18} {attack.summary}")
        return 0
    unknown = [name for name in args.attacks if name not in attacks]
    if unknown:
        parser.error(f"no attack named {', '.join(unknown)}; --list names them")
    rows = [row for name in args.attacks or attacks for row in attacks[name].run(args)]
    print(f"{'attack':34}{'idle p99':>10}{'attack p99':>12}{'p99/idle':>10}{'5xx':>6}  goal")
    for row in rows:
        print(f"{row.attack:34}{row.idle_p99 * 1000:8.0f}ms{row.attack_p99 * 1000:10.0f}ms{row.ratio:9.1f}x{row.server_errors:>6}"
              f"  {'MET' if row.met else 'MISSED'}{'  ' + row.note if row.note else ''}")
    print(f"goal: the home page's p99 within {GOAL:g}x idle and no 5xx")
    return 0 if all(row.met for row in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
