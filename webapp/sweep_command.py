"""The command line's `sweep`: every strategy at every line and KEEP of a range, as a table,
JSON or CSV, and the advice. Imported only by that subcommand (webapp/cli.py)."""

from __future__ import annotations

import argparse
import json
import sys

from .core.analysis.comparison_data import left_out_warning
from .core.analysis.pricing import Pricing
from .core.analysis.sweep import Sweep, SweepRange, parse_keeps, runs_lower, sweep
from .core.analysis.sweep_data import point_row, sweep_json
from .core.engine.replays import Replays
from .core.output.serialize import csv_text
from .core.settings import Settings, SettingsError


def run_sweep(args: argparse.Namespace, scenario, settings: Settings, pricing: Pricing, replays: Replays) -> int:
    """The sweep as a table, JSON or CSV, its replays from `replays`. Raises SettingsError for
    a bad range."""
    try:
        keeps = parse_keeps(args.keeps)
    except ValueError:
        raise SettingsError([f"keeps: got {args.keeps!r}, expected whole numbers separated by commas"]) from None
    span = SweepRange(args.line_from, args.line_to, args.line_step, keeps)
    result = sweep(scenario, settings, pricing, span, replays)
    warning = left_out_warning(result.unavailable)
    if warning:
        print(warning, file=sys.stderr)
    if args.json:
        json.dump(sweep_json(result), sys.stdout, ensure_ascii=False, indent=1)
        print()
    elif args.csv:
        sys.stdout.write(csv_text([point_row(point) for point in result.points]))
    else:
        print(sweep_table(result))
    return 0


def sweep_table(result: Sweep) -> str:
    """The bill of every strategy at every line, one table per KEEP (x: unsafe), then the advice."""
    s = result.settings
    lines = [
        f"{result.scenario.text('title')} · window {s.window:,} · counter {s.counter} · "
        f"lines {result.span.line_from}% to {result.span.line_to}% by {result.span.line_step} · KEEP counts {s.keep_unit.replace('_', ' ')}",
        "bill in $ for the whole chat; x: unsafe (overflows, leaves the reply no room, loses a fact, sends a request an API refuses, or may break tool pairs);",
        "↓: a product that only lowers its line ran at its own line, lower than the one asked",
    ]
    for keep in result.keeps:
        lines += ["", f"keep {keep}:", f"  {'strategy':<23}" + "".join(f" {line:>8.0%}" for line in result.lines)]
        for key in result.keys:
            asked = [(line, result.at(key, keep, line)) for line in result.lines]
            cells = "".join(f" {_bill_cell(point, line):>8}" for line, point in asked)
            own = sorted({point.line for line, point in asked if runs_lower(point, line)})
            note = f"  (↓ its own line: {', '.join(f'{line:.0%}' for line in own)})" if own else ""
            lines.append(f"  {key:<23}{cells}{note}")
    lines += ["", "advice:", *(f"  {line}" for line in advice_lines(result))]
    return "\n".join(lines)


def _bill_cell(point, line: float) -> str:
    if point is None:
        return ""
    return f"{point.bill:.4f}" + ("" if point.safe else "x") + ("↓" if runs_lower(point, line) else "")


def advice_lines(result: Sweep) -> list[str]:
    """The cheapest safe point and how far it is from the current settings, in English."""
    advice = result.recommendation
    best, current = advice.best, advice.current
    if best is None:
        return ["no point of the sweep is safe: raise the window, or widen the range"]
    out = [
        f"cheapest safe point: {best.key} at line {best.line:.0%} ({best.settings.limit:,.0f} tokens), keep {best.keep}: "
        f"${best.bill:.4f}, {best.sent:,} tokens sent ({best.cached:,} from the cache), {best.compactions} compaction{'' if best.compactions == 1 else 's'}"
    ]
    if current is not None:
        state = "safe" if current.safe else "unsafe"
        out.append(f"your settings: {current.key} at line {current.line:.0%}, keep {current.keep}: ${current.bill:.4f} ({state})")
        if advice.changes:
            out.append("change: " + ", ".join(f"{name} {_setting(now)} -> {_setting(then)}" for name, (now, then) in advice.changes.items()))
            out.append(f"saves ${advice.saving:.4f}" if advice.saving >= 0 else f"costs ${-advice.saving:.4f} more, and is safe")
        else:
            out.append("your settings are the cheapest safe point")
    return out


def _setting(value) -> str:
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)
