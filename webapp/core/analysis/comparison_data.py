"""A comparison as plain data, for the command line, the JSON twin and the CSV download: one
flat row per strategy (`summary_row`), one for what the session recorded (`recorded_row`), and
the whole comparison as JSON (`comparison_json`).
"""

from __future__ import annotations

from dataclasses import asdict

from .as_recorded import AsRecorded
from .compaction_cost import CompactionCost
from .compare import Column, Comparison, check_call
from .pricing import Pricing
from .verdict import english, verdict_notices


def summary_row(column: Column, call: int) -> dict[str, object]:
    """One strategy's figures as flat values (one CSV row), at `call` and for the whole chat."""
    at = column.call(call)
    hit = column.hits[call - 1]
    return {
        "strategy": column.strategy,
        "family": column.family,
        "keep_facts": column.keep_facts,
        "threshold": column.settings.effective_threshold,
        "line_tokens": round(column.settings.limit),
        "call": call,
        "tokens_at_call": at.tokens,
        "sent_at_call": at.sent_total,
        "cached_at_call": hit.cached,
        "sent_total": column.sent_total,
        "cached_total": column.cached_total,
        "written_total": column.written_total,
        "uncached_total": column.bill.uncached,
        "bill_usd": round(column.bill.cost, 6),
        "compactions": column.compactions,
        "futile_compactions": column.futile_compactions,
        "overflows": column.overflows,
        "no_room_for_reply": len(column.no_room_calls),
        "peak_tokens": column.peak_tokens,
        "summarizer_input": column.summarizer_input,
        "summarizer_output": column.summarizer_output,
        "cleared_tokens": sum(call.compaction.cleared_tokens for call in column.calls if call.compaction),
        "facts_lost": "; ".join(f"{fate.fact.label or fate.fact.text} from call {fate.lost_from}" for fate in column.facts_lost),
        # The values the agent used again (references.py): how many, and how many a call that
        # used one no longer had (they are also in facts_lost, as "value from call N").
        "references": len(column.references),
        "references_lost": len(column.references_lost),
        # What the compactions cost the prompt cache (compaction_cost.py): the tokens after each
        # first difference at the write price, the cost over leaving the request whole, and how
        # many compactions the session ends before they pay for themselves.
        "compaction_write_usd": round(sum(cost.write_cost for cost in column.costs.values()), 6),
        "compaction_extra_usd": round(sum(cost.extra_cost for cost in column.costs.values()), 6),
        "compactions_never_repaid": column.compactions_never_repaid,
        "valid_requests": column.valid_requests,
        # The harness pitfalls (engine/pitfalls.py): calls that compacted and stayed above the
        # line, compactions that saved under 10%, tokens a summary made the cache write again.
        "loop_compactions": len(column.pitfalls("loop")),
        "small_savings": len(column.pitfalls("small")),
        "cache_rewritten": sum(p["tokens"] for p in column.pitfalls("cache")),
        "pitfalls": pitfall_words(column),
    }


RECORDED_ABOUT = (
    "what the harness really sent, by the provider's own count: not a strategy, never the verdict; "
    "cache writes are not recorded (billed as uncached input); facts and API validity are not known"
)


def recorded_row(recorded: AsRecorded, call: int) -> dict[str, object]:
    """What the session recorded as one row with a strategy's fields (one CSV row): None for
    what the log cannot tell, and for call `call` when it recorded no figure."""
    at = recorded.call(call)
    return {
        "strategy": recorded.key,
        "family": recorded.family,
        "keep_facts": None,
        "threshold": None,
        "line_tokens": None,
        "call": call,
        "tokens_at_call": at.tokens,
        "sent_at_call": recorded.sent_at(call),
        "cached_at_call": at.cached,
        "sent_total": recorded.sent_total,
        "cached_total": recorded.cached_total,
        "written_total": None,
        "uncached_total": recorded.bill.uncached,
        "bill_usd": round(recorded.bill.cost, 6),
        "compactions": len(recorded.compactions),
        "futile_compactions": None,
        "overflows": len(recorded.overflow_calls),
        "no_room_for_reply": None,
        "peak_tokens": recorded.peak_tokens,
        "summarizer_input": None,
        "summarizer_output": None,
        "cleared_tokens": None,
        "facts_lost": None,
        "references": None,
        "references_lost": None,
        "compaction_write_usd": None,
        "compaction_extra_usd": None,
        "compactions_never_repaid": None,
        "valid_requests": None,
        "loop_compactions": None,
        "small_savings": None,
        "cache_rewritten": None,
        "pitfalls": RECORDED_ABOUT,
    }


def recorded_json(recorded: AsRecorded, call: int) -> dict[str, object]:
    """The recorded row, then how many calls recorded a figure, the harness's compactions and
    every call's figures (None where the log holds none)."""
    return {
        **recorded_row(recorded, call),
        "key": recorded.key,
        "recorded_calls": recorded.recorded_calls,
        "overflow_calls": recorded.overflow_calls,
        "harness_compactions": [
            {"before_call": item.number, "trigger": item.compaction.trigger, "tokens_before": item.compaction.tokens_before, "source": item.compaction.source}
            for item in recorded.compactions
        ],
        "calls": [
            {"call": item.number, "tokens": item.tokens, "cached": item.cached, "overflow": item.overflow, "compacted": item.compaction is not None}
            for item in recorded.calls
        ],
    }


def pitfall_words(column: Column) -> str:
    """The harness pitfalls of a column in one line of English, with their numbers."""
    words = []
    loops = column.pitfalls("loop")
    if loops:
        first = loops[0]
        words.append(
            f"compacts and stays above its line at {len(loops)} calls from call {first['call']} "
            f"(floor {first['floor']:,} + kept {first['kept']:,} > line {first['line']:,})"
        )
    small = column.pitfalls("small")
    if small:
        least = min(small, key=lambda p: p["percent"])
        words.append(f"{_compactions(len(small))} saved under 10% (least: {least['percent']}% at call {least['call']})")
    grew = column.pitfalls("grew")
    if grew:
        worst = max(grew, key=lambda p: p["grew"])
        words.append(f"{_compactions(len(grew))} made the request bigger (most: +{worst['grew']:,} tokens at call {worst['call']})")
    cache = column.pitfalls("cache")
    if cache:
        words.append(f"summary before unchanged messages: {sum(p['tokens'] for p in cache):,} tokens written to the cache again")
    refused = column.pitfalls("refused")
    if refused:
        words.append(f"summary refused (no smaller) at call {refused[0]['call']}; then only tool output is cut")
    return "; ".join(words)


def comparison_json(comparison: Comparison, call: int | None = None) -> dict[str, object]:
    """The whole comparison at `call` (default the last): the scenario, the settings and prices,
    each strategy's figures, and the verdict with its sentences in English."""
    call = check_call(comparison, call)
    verdict = comparison.verdict
    recorded = {"as_recorded": recorded_json(comparison.recorded, call)} if comparison.recorded else {}
    return {
        "scenario": comparison.scenario.id,
        "title": comparison.scenario.text("title"),
        "settings": comparison.settings.model_dump(exclude={"strategy", "keep_facts"}),
        "real_window": comparison.settings.real_window,
        "pricing": pricing_json(comparison.pricing),
        "call": call,
        "call_count": comparison.call_count,
        "strategies": [strategy_json(column, call) for column in comparison.columns],
        **recorded,
        # Columns left out because the summarizer failed (why is in the server's log).
        "unavailable": sorted(comparison.unavailable),
        "verdict": {
            "winner": verdict.winner,
            "ties": verdict.ties,
            "fewest_tokens": verdict.fewest_tokens,
            "text": english(verdict_notices(comparison)),
        },
    }


def left_out_warning(unavailable: dict[str, str]) -> str | None:
    """The command line's warning when the summarizer failed: the columns left out, and why."""
    if not unavailable:
        return None
    return f"warning: the summarizer failed, so these columns are left out: {', '.join(sorted(unavailable))} ({next(iter(unavailable.values()))})"


def pricing_json(pricing: Pricing) -> dict[str, object]:
    """The prices, with the cache model's shares and where its figures come from."""
    return {
        **pricing.model_dump(),
        "cached_share": pricing.share,
        "write_share": pricing.model.write_share,
        "source": pricing.model.source,
    }


def strategy_json(column: Column, call: int) -> dict[str, object]:
    """One strategy: its summary row, then its facts, its faulty calls and every call's figures."""
    row = summary_row(column, call)
    row.update(
        key=column.key,
        facts_lost=[{"label": fate.fact.label, "text": fate.fact.text, "lost_from": fate.lost_from} for fate in column.facts_lost],
        facts=facts_json(column, call),
        references_lost=[
            {
                "value": fate.reference.value,
                "kind": fate.reference.kind,
                "from_message": fate.reference.source,
                "from_call": fate.reference.source_call,
                "used_at_call": fate.lost_from,
                "uses": list(fate.reference.uses),
            }
            for fate in column.references_lost
        ],
        compaction_costs=[cost_json(cost) for cost in column.costs.values()],
        overflow_calls=column.overflow_calls,
        invalid_calls={str(number): problems for number, problems in column.invalid.items()},
        calls=calls_json(column),
    )
    return row


def cost_json(cost: CompactionCost) -> dict[str, object]:
    """One compaction's cost to the prompt cache; `break_even` is None when the session ends first."""
    return {
        **asdict(cost),
        "write_cost": round(cost.write_cost, 6),
        "extra_cost": round(cost.extra_cost, 6),
        "saving_per_call": round(cost.saving_per_call, 6),
    }


def facts_json(column: Column, call: int) -> list[dict[str, object]]:
    """Each critical fact: when it is needed, whether it is sent at `call`, and when it was lost."""
    return [
        {
            "label": fate.fact.label,
            "text": fate.fact.text,
            "needed_from_call": fate.fact.needed_from_call,
            "present_at_call": fate.present[call - 1],
            "lost_from": fate.lost_from,
        }
        for fate in column.facts
    ]


def calls_json(column: Column) -> list[dict[str, object]]:
    """Every call's request: its size, what the cache served and wrote, and what went wrong."""
    return [
        {
            "call": item.number,
            "tokens": item.tokens,
            "sent_total": item.sent_total,
            "cached": hit.cached,
            "written": hit.written,
            "compacted": item.compaction is not None and item.compaction.changed,
            "provider_tokens": item.provider_tokens,
            "overflow": item.overflow,
            "no_room_for_reply": item.no_room_for_reply,
            "valid": item.valid,
            "facts_present": [fate.present[item.number - 1] for fate in column.facts],
        }
        for item, hit in zip(column.calls, column.hits)
    ]


def _compactions(count: int) -> str:
    return f"{count} compaction" + ("" if count == 1 else "s")
