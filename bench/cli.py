"""The command line's start (issue 32): the seed's reference loop against the whole process of
`python -m webapp replay` on the same chat, and what a small file's replay costs beside the
interpreter's own start.

    .venv/bin/python bench/cli.py [--repeat N] [--before DIR]

The chat is bench/transcript.py's generator cut at 1,597 messages, written to a file. The
command replays it in a process of its own with benchmark 2's settings (truncate-drop, the
estimate counter, window 32,000, line 0.8, KEEP 2, the seed's 150-character preview) and
prints its table; the seed's `compact()` loop (tests/seed_reference.py) runs in this process
on the same messages and must make as many calls as the table has rows. A child's figure is
its user + system CPU time from getrusage: the interpreter's start, the imports, reading the
file, replaying and printing. Each figure is the least of --repeat runs measured in
alternation, after one untimed run that compiles the bytecode (into a cache of its own, as an
installed package has it) and puts the token vocabulary in place. With --before, a checkout
of an earlier commit (`git archive COMMIT | tar -x -C DIR`) runs the same commands in the
same rounds, so a busy machine weighs on both alike.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.transcript import generate_transcript  # noqa: E402
from tests.seed_reference import SEED_PREVIEW, load_seed_compact, seed_requests  # noqa: E402

MESSAGES = 1597
WINDOW, THRESHOLD, KEEP = 32_000, 0.8, 2  # benchmark 2's (bench/run.py)
SMALL_FILE = ROOT / "tests" / "fixtures" / "transcripts" / "chat-tool-call.json"
GOAL = 10


def child_environment(root: Path, cache: Path) -> dict[str, str]:
    """This environment, the code of `root`, and the bytecode written to `cache`
    (PYTHONDONTWRITEBYTECODE would have every run compile every module again, which no
    installed copy does)."""
    environment = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
    return {**environment, "PYTHONPATH": str(root), "PYTHONPYCACHEPREFIX": str(cache)}


def child_cpu(command: list[str], environment: dict[str, str]) -> tuple[float, str]:
    """(user + system CPU seconds of the child, its output); a failure stops the benchmark."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    run = subprocess.run(command, cwd=environment["PYTHONPATH"], env=environment, capture_output=True, text=True, timeout=600)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if run.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed ({run.returncode}): {run.stderr[-2000:]}")
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), run.stdout


def best_of(runs: dict[tuple[str, str], Callable[[], float]], repeat: int) -> dict[tuple[str, str], float]:
    """The least time of each run over `repeat` rounds, each round running every one in turn,
    starting one further on each round, so that no run always follows the same one."""
    names = list(runs)
    best = {name: float("inf") for name in names}
    for round_number in range(repeat):
        start = round_number % len(names)
        for name in names[start:] + names[:start]:
            best[name] = min(best[name], runs[name]())
    return best


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=5, help="timed runs of each measure; the best is kept")
    parser.add_argument("--before", type=Path, help="a checkout of an earlier commit, measured in the same rounds")
    args = parser.parse_args(argv)
    trees = {"now": ROOT, **({"before": args.before.resolve()} if args.before else {})}

    transcript = generate_transcript(MESSAGES)
    system, script = transcript["messages"][0]["content"], transcript["messages"][1:]
    seed = load_seed_compact(system=system, window=WINDOW, threshold=THRESHOLD, keep=KEEP)
    with tempfile.TemporaryDirectory() as directory:
        chat = Path(directory) / "chat-1597.json"
        chat.write_text(json.dumps(transcript, ensure_ascii=False), encoding="utf-8")
        python = [sys.executable]
        replay_chat = [*python, "-m", "webapp", "replay", str(chat), "--strategy", "truncate-drop", "--counter", "estimate",
                       "--window", str(WINDOW), "--threshold", str(THRESHOLD), "--keep", str(KEEP), "--preview", str(SEED_PREVIEW)]
        commands = {
            "interpreter": [*python, "-c", "pass"],
            "import": [*python, "-c", "import webapp.cli"],
            "small": [*python, "-m", "webapp", "replay", str(SMALL_FILE)],
            "chat": replay_chat,
        }
        calls = len(seed_requests(script, seed))
        environments = {tree: child_environment(root, Path(directory) / f"pycache-{tree}") for tree, root in trees.items()}
        for tree, environment in environments.items():
            _, table = child_cpu(replay_chat, environment)  # untimed: bytecode and vocabulary in place
            for command in commands.values():
                child_cpu(command, environment)
            rows = sum(1 for line in table.splitlines() if line[:4].strip().isdigit())
            if rows != calls:
                raise SystemExit(f"{tree}: the command replayed {rows} calls, the seed's loop {calls}")

        def seed_loop() -> float:
            start = time.process_time()
            seed_requests(script, seed)
            return time.process_time() - start

        runs: dict[tuple[str, str], Callable[[], float]] = {("seed", "loop"): seed_loop}
        for tree, environment in environments.items():
            runs |= {(tree, name): (lambda command=command, environment=environment: child_cpu(command, environment)[0]) for name, command in commands.items()}
        times = best_of(runs, args.repeat)

    print(f"A {MESSAGES:,}-message chat, {calls} calls; truncate-drop, estimate, window {WINDOW:,}, line {THRESHOLD}, keep {KEEP}; CPU time, best of {args.repeat}.")
    print(f"\n8. The seed's reference loop vs `python -m webapp replay`, whole process. Goal: >= {GOAL}x")
    print(f"   {'seed loop (000_fd8adbc93eaf3a52.txt)':44} {times[('seed', 'loop')] * 1000:8.1f} ms")
    for tree in trees:
        ratio = times[("seed", "loop")] / times[(tree, "chat")]
        print(f"   {f'python -m webapp replay, {tree}':44} {times[(tree, 'chat')] * 1000:8.1f} ms  {ratio:4.1f}x: {'MET' if ratio >= GOAL else 'MISSED'}")
    print(f"\n   a small file ({SMALL_FILE.name}), whole process:" + "".join(f"{tree:>12}" for tree in trees))
    for name, words in (("interpreter", "python -c pass"), ("import", "python -c 'import webapp.cli'"), ("small", "python -m webapp replay FILE")):
        print(f"   {words:44}" + "".join(f"{times[(tree, name)] * 1000:9.1f} ms" for tree in trees))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
