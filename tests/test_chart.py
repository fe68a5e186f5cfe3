"""The comparison chart's geometry: every strategy drawn once, at its engine sizes, labels
apart, and lines told apart without colour."""

from __future__ import annotations

import pytest
from hypothesis import given, settings as hypothesis_settings, strategies as st

from webapp.core.drawing.chart import LABEL_GAP, request_chart, small_well
from webapp.core.analysis.compare import compare
from webapp.core.inputs.library import open_scenario

BIKE = compare(open_scenario("bike-shop"))


def test_every_column_is_drawn_once_at_its_engine_sizes():
    chart = request_chart(BIKE, 3)
    drawn = [key for series in chart.series for key in series.keys]
    assert sorted(drawn) == sorted(column.key for column in BIKE.columns)
    for series in chart.series:
        for key in series.keys:
            assert [p.tokens for p in series.points] == [c.tokens for c in BIKE.column(key).calls]


def test_strategies_sending_the_same_requests_share_one_line_and_label():
    chart = request_chart(BIKE, 6)
    shared = next(series for series in chart.series if "truncate" in series.keys)
    # by-layer on a chat with no retrieved documents compacts its history as truncate-drop does.
    assert shared.keys == ("truncate", "truncate-drop", "by-layer")
    assert shared.names == "truncate, truncate-drop, by-layer"


def test_lines_differ_by_dash_and_marker_not_only_colour():
    chart = request_chart(BIKE, 6)
    assert len({(s.dash, s.marker) for s in chart.series}) == len(chart.series)


def test_higher_requests_are_drawn_higher_and_rules_sit_at_window_and_line():
    chart = request_chart(BIKE, 6)
    points = [p for s in chart.series for p in s.points]
    for a in points:
        for b in points:
            if a.tokens > b.tokens:
                assert a.y < b.y
    window, line = chart.rules
    assert window.tokens == 8000 and line.tokens == 6400 and window.y < line.y
    assert chart.top <= window.y <= chart.bottom


@given(call=st.integers(1, 6), width=st.integers(420, 1400), height=st.integers(200, 700))
@hypothesis_settings(max_examples=50, deadline=None)
def test_end_labels_never_overlap_and_stay_inside(call, width, height):
    chart = request_chart(BIKE, call, width=width, height=height)
    labels = sorted(chart.series, key=lambda s: s.label_y)
    for a, b in zip(labels, labels[1:]):
        assert b.label_y - a.label_y >= LABEL_GAP * len(a.lines) - 1e-9
    for s in labels:
        assert chart.top <= s.label_y and s.label_y + LABEL_GAP * (len(s.lines) - 1) <= chart.bottom + 1e-9
    assert chart.left <= chart.current_x <= chart.right


def test_small_well_stacks_the_request_floor_first_on_a_scale_shared_by_every_column():
    for column in BIKE.columns:
        well = small_well(BIKE, column, 5)
        call = column.call(5)
        assert [b.id for b in well.bricks] == ["floor", *(b.id for b in call.blocks)]
        stacked = sum(b.height for b in well.bricks)
        assert stacked / (well.bottom_y - well.rim_y) == pytest.approx(
            (column.result.floor_tokens + sum(column.result.block_tokens(b) for b in call.blocks)) / 8000
        )
        assert all(a.y == pytest.approx(b.y + b.height) for a, b in zip(well.bricks, well.bricks[1:]))
        assert well.rim_y < well.line_y < well.bottom_y
        assert well.overflow == call.overflow


def test_small_well_of_an_overflowing_request_rises_above_the_rim_inside_the_picture():
    tight = compare(open_scenario("bike-shop"), open_scenario("bike-shop").settings.model_copy(update={"window": 5000}))
    column = tight.column("none")
    last = column.calls[-1]
    assert last.overflow
    well = small_well(tight, column, last.number)
    assert well.overflow
    assert well.bricks[-1].y < well.rim_y
    assert well.bricks[-1].y >= well.top_y


def test_a_runaway_request_is_cut_at_the_top_and_does_not_shrink_the_other_wells():
    scenario = open_scenario("bike-shop")
    tight = compare(scenario, scenario.settings.model_copy(update={"window": 2000}))
    none = small_well(tight, tight.column("none"), 6)  # 6,583 tokens in a 2,000-token window
    assert none.cut and none.bricks[-1].y == none.top_y
    assert sum(b.height for b in none.bricks) == pytest.approx(none.bottom_y - none.top_y)
    # The window keeps most of the picture: 1 / (1 + headroom) of its height.
    assert (none.bottom_y - none.rim_y) / (none.bottom_y - none.top_y) == pytest.approx(1 / 1.6)
    assert not small_well(tight, tight.column("drop"), 1).cut


def test_a_line_drawn_for_a_bigger_window_than_the_models_is_pinned_above_the_chart():
    scenario = open_scenario("real-window")
    comparison = compare(scenario)
    settings = comparison.settings
    assert settings.limit > settings.real_window  # the lesson: the line is never reached
    chart = request_chart(comparison, 6)
    window, line = chart.rules
    assert window.tokens == settings.real_window and not window.above
    assert line.above and line.y == chart.top
    overflowing = [p for s in chart.series for p in s.points if p.overflow]
    assert overflowing and all(p.y < window.y for p in overflowing)
    well = small_well(comparison, comparison.columns[0], 6)
    assert well.line_y == well.top_y < well.rim_y



def test_a_long_list_of_names_wraps_into_lines_that_fit_the_label_area():
    comparison = compare(open_scenario("real-window"))  # every strategy but Ollama's (at num_ctx 4,096) sends the same requests
    series = max(request_chart(comparison, 6).series, key=lambda series: len(series.lines))
    assert ", ".join(series.lines).replace(",,", ",") == series.names
    assert len(series.lines) > 1 and all(len(line) <= 25 for line in series.lines)



def test_call_ticks_start_at_1_end_at_the_last_call_and_never_crowd():
    long = compare(open_scenario("long-haul"))
    chart = request_chart(long, 1)
    calls = [tick.value for tick in chart.x_ticks]
    assert calls[0] == 1 and calls[-1] == long.call_count
    gaps = [b.at - a.at for a, b in zip(chart.x_ticks, chart.x_ticks[1:])]
    assert min(gaps) >= max(gaps) / 2
