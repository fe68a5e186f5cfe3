"""The cyclic garbage collector is held off while a comparison or a sweep replays
(webapp/core/collector.py), and comes back on however they end, in every thread."""

from __future__ import annotations

import gc
import threading

import pytest

from webapp.core.analysis.compare import compare
from webapp.core.collector import LONGEST_HOLD_SECONDS, CollectorHold
from webapp.core.analysis.sweep import SweepRange, sweep
from webapp.core.engine.replay import replay
from webapp.core.inputs.library import open_scenario
from webapp.core.time_budget import BudgetExceeded, within


@pytest.fixture(autouse=True)
def collector_on():
    gc.enable()
    yield
    gc.enable()


def test_a_comparison_replays_with_the_collector_off_and_turns_it_back_on():
    seen = []

    def watched(scenario, settings):
        seen.append(gc.isenabled())
        return replay(scenario, settings)

    compare(open_scenario("bike-shop"), run=watched)
    assert seen and not any(seen)
    assert gc.isenabled()


def test_a_sweep_stopped_by_its_budget_turns_the_collector_back_on():
    with within(cpu_seconds=0, wall_seconds=60), pytest.raises(BudgetExceeded):
        sweep(open_scenario("long-haul"))
    assert gc.isenabled()


def test_a_collector_turned_off_before_stays_off():
    gc.disable()
    compare(open_scenario("bike-shop"))
    assert not gc.isenabled()


def test_the_collector_stays_off_until_the_last_thread_computing_ends():
    started, finish = threading.Event(), threading.Event()
    during: list[bool] = []

    def waiting(scenario, settings):
        started.set()
        finish.wait(30)
        return replay(scenario, settings)

    slow = threading.Thread(target=compare, args=(open_scenario("bike-shop"),), kwargs={"run": waiting})
    slow.start()
    assert started.wait(30)
    compare(open_scenario("bike-shop"))  # starts and ends while the slow one runs
    during.append(gc.isenabled())
    finish.set()
    slow.join(30)
    assert during == [False]
    assert gc.isenabled()


def test_a_sweep_leaves_no_reference_cycle_behind():
    """Why holding the collector off is safe: what a sweep makes is freed by reference
    counting alone, so the collector finds nothing once it is gone."""
    scenario = open_scenario("long-haul")
    sweep(scenario, span=SweepRange(keeps=(2,)))  # the chat's own measures, kept on it, made first
    gc.collect()
    gc.disable()
    made = sweep(scenario, span=SweepRange(keeps=(2,)))
    assert made.points
    del made
    assert gc.collect() == 0


def test_computations_that_keep_overlapping_still_let_the_collector_run_now_and_then():
    now = [0.0]
    hold = CollectorHold(clock=lambda: now[0])
    runs: list[str] = []

    def seen(phase, info):
        if phase == "start":
            runs.append(phase)

    gc.callbacks.append(seen)
    try:
        hold.take()
        hold.take()
        hold.give_back()  # the other one still computes, and not for long yet
        assert runs == [] and not gc.isenabled()
        hold.take()
        now[0] = LONGEST_HOLD_SECONDS + 1
        hold.give_back()  # held off for too long: one collection, and it stays held off
        assert runs == ["start"] and not gc.isenabled()
        hold.give_back()
        assert gc.isenabled()
    finally:
        gc.callbacks.remove(seen)
