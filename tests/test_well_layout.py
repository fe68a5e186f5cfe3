"""The well's pure layout (webapp/core/drawing/well.py), without Flask: a picture that is a measurement,
the hammer where compaction struck, traces where messages were dropped, labels that never
overlap, and what a replay derives once."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from webapp.core.inputs.library import open_scenario
from webapp.core.engine.replay import replay
from webapp.core.drawing.block_versions import first_version, latest_version, tool_names
from webapp.core.drawing.well import layout
from webapp.core.drawing.well_labels import place_labels
from webapp.core.drawing.well_parts import BOTTOM, HAMMER_BESIDE_KEEP, HAMMER_HALF, LABEL_GAP, NORMAL, PROJECTOR, TOP, Mark, Shape
from webapp.core.drawing.well_scale import HEADROOM, ZOOM_BELOW, nice_ceiling, scale_of, zoom_range

BIKE = open_scenario("bike-shop")
LONG = open_scenario("long-haul")


def run(scenario, **changes):
    return replay(scenario, scenario.settings.model_copy(update=changes))


def test_heights_are_tokens_on_one_scale_for_every_call():
    result = run(BIKE)
    scale, headroom = scale_of(result)
    # the window and its headroom fill the drawing between the top band and the bottom margin
    assert scale * result.settings.window + headroom == pytest.approx(NORMAL.height - TOP - BOTTOM)
    rims = set()
    for number in range(1, len(result.calls) + 1):
        well = layout(result, number)
        rims.add(well.rim_y)
        call = result.calls[number - 1]
        blocks = [shape for shape in well.shapes if shape.kind != "floor"]
        assert [shape.id for shape in blocks] == [block.id for block in call.blocks]
        for shape in blocks:
            assert shape.height == pytest.approx(result.block_tokens(shape.block) * scale)
        # stacked without gaps, floor first, from the bottom up
        for below, above in zip(well.shapes, well.shapes[1:]):
            assert above.y + above.height == pytest.approx(below.y)
        assert well.shapes[0].y + well.shapes[0].height == pytest.approx(well.bottom_y)
        assert well.threshold_y == pytest.approx(well.bottom_y - result.settings.limit * scale)
    assert len(rims) == 1  # stepping never rescales the picture


def test_headroom_above_the_rim_is_bounded():
    result = run(LONG, strategy="none")
    scale, headroom = scale_of(result)
    assert max(call.tokens for call in result.calls) > result.settings.window * (1 + HEADROOM)
    assert headroom == pytest.approx(result.settings.window * HEADROOM * scale)


def test_the_hammer_strikes_on_the_compaction_call_only():
    result = run(BIKE)
    wells = {number: layout(result, number) for number in range(1, 7)}
    assert [number for number, well in wells.items() if well.animated] == [5]
    hit = wells[5]
    truncated = next(shape for shape in hit.shapes if shape.state == "truncated")
    assert hit.hammer_y == pytest.approx(truncated.y)
    assert truncated.was == pytest.approx(result.block_tokens(first_version(result, truncated.id)))
    assert truncated.was > truncated.tokens
    assert hit.ghosts and hit.before_y < hit.stack_top_y  # the stack stood higher before
    assert not any(shape.arriving for shape in hit.shapes)  # the hammer call settles, nothing falls
    sent_before = {block.id for block in result.calls[4].blocks}
    assert [shape.id for shape in wells[6].shapes if shape.arriving] == [b.id for b in result.calls[5].blocks if b.id not in sent_before]


def test_dropped_messages_leave_a_trace_with_their_tokens():
    result = run(BIKE, strategy="drop")
    well = layout(result, 5)
    assert [trace.ids for trace in well.traces] == [["m2", "m3", "m4"]]
    expected = sum(result.block_tokens(latest_version(result, i, 5)) for i in ("m2", "m3", "m4"))
    assert well.traces[0].tokens == pytest.approx(expected)
    assert well.hammer_y == pytest.approx(well.traces[0].y)


def test_keep_zone_spans_the_protected_requests():
    result = run(BIKE)
    call = result.calls[4]
    well = layout(result, 5)
    kept = [shape for shape in well.shapes[1:] if shape.in_keep]
    assert [shape.id for shape in kept] == [block.id for block in call.blocks[call.keep_start :]]
    assert well.keep_top == pytest.approx(well.stack_top_y)
    assert well.keep_bottom == pytest.approx(kept[0].y + kept[0].height)


def test_labels_never_overlap_and_the_selected_block_keeps_its_label():
    result = run(LONG)
    for number in (1, 20, 40, 64):
        chosen = result.calls[number - 1].blocks[0].id
        well = layout(result, number, selected=chosen)
        placed = sorted(item.label_y for item in [*well.shapes, *well.traces] if item.label_y is not None)
        assert all(b - a >= LABEL_GAP - 1e-9 for a, b in zip(placed, placed[1:]))
        assert well.unlabelled == sum(1 for shape in well.shapes if shape.label_y is None)
        assert next(shape for shape in well.shapes if shape.id == chosen).label_y is not None
        assert [shape.id for shape in well.shapes if shape.selected] == [chosen]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.floats(0, 500), st.floats(0.1, 40)), max_size=60))
def test_placed_labels_stay_in_bounds_apart_and_in_order(boxes):
    shapes = [Shape(f"m{i}", "user", "original", 1, False, y, h) for i, (y, h) in enumerate(boxes)]
    unlabelled = place_labels(shapes, top=8, bottom=530)
    placed = [shape for shape in shapes if shape.label_y is not None]
    assert unlabelled == len(shapes) - len(placed)
    ys = [shape.label_y for shape in sorted(placed, key=lambda shape: -shape.mid)]
    assert all(8 - 1e-9 <= y <= 530 + 1e-9 for y in ys)
    assert all(a - b >= LABEL_GAP - 1e-9 for a, b in zip(ys, ys[1:]))  # bottom-up, never closer


@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(st.floats(0, 500), st.floats(0.1, 40), st.integers(0, 2)), max_size=40))
def test_labels_of_several_lines_keep_every_line_in_bounds_and_apart(boxes):
    # a plain block's label is one line; a cut one's has a line for its note, or two
    shapes = [Shape(f"m{i}", "tool", "truncated" if notes else "original", 1, False, y, h, lines=1 + notes) for i, (y, h, notes) in enumerate(boxes)]
    asked = {shape.id: shape.lines for shape in shapes}
    place_labels(shapes, top=8, bottom=440)
    placed = sorted((shape for shape in shapes if shape.label_y is not None), key=lambda shape: shape.label_y)
    # each label's lines, from its first to its last, in the column and clear of the next label
    for shape in placed:
        assert 8 - 1e-9 <= shape.label_y and shape.label_y + (shape.lines - 1) * LABEL_GAP <= 440 + 1e-9
    for above, below in zip(placed, placed[1:]):
        assert below.label_y - above.label_y >= above.lines * LABEL_GAP - 1e-9
    # a crowded column leaves plain blocks unlabelled before it puts notes on no line of their
    # own, and does that before it leaves out a cut block's label
    if any(shape.lines < asked[shape.id] for shape in shapes):
        assert all(shape.label_y is None for shape in shapes if shape.state == "original")
    if any(shape.label_y is None for shape in shapes if shape.state == "truncated"):
        assert all(shape.lines == 1 for shape in shapes)
    assert all(1 <= shape.lines <= asked[shape.id] for shape in shapes)


def test_what_the_hammer_did_is_a_line_of_its_own_under_the_label():
    result = run(BIKE)
    well = layout(result, 5)
    cut = next(shape for shape in well.shapes if shape.state == "truncated")
    assert cut.lines == 2 and cut.was > cut.tokens
    tool_pairs = open_scenario("tool-pairs")
    well = layout(replay(tool_pairs, tool_pairs.settings), 5)
    orphans = [shape for shape in well.shapes if shape.orphan]
    assert orphans and all(shape.lines == 2 for shape in orphans)
    assert well.traces and all(trace.lines == 2 and trace.label_y is not None for trace in well.traces)


@pytest.mark.parametrize("lesson", ["bike-shop", "tool-pairs", "receipt", "summary-forgets", "long-haul", "coding-agent"])
@pytest.mark.parametrize("size", [NORMAL, PROJECTOR])
def test_the_hammer_never_rests_on_the_keep_bracket(lesson, size):
    scenario = open_scenario(lesson)
    result = replay(scenario, scenario.settings)
    struck = 0
    for number in range(1, len(result.calls) + 1):
        well = layout(result, number, size=size)
        if well.hammer_y is None or well.keep_bottom is None or well.zoom is not None:
            continue
        struck += 1
        head = (well.hammer_y - HAMMER_HALF, well.hammer_y + HAMMER_HALF)
        beside = well.hammer_x == HAMMER_BESIDE_KEEP
        assert beside or head[0] >= well.keep_bottom or head[1] <= well.keep_top, f"{lesson} call {number}"
        assert head[1] <= well.height  # and it stays in the drawing
    assert struck


def test_versions_follow_a_block_through_the_replay():
    result = run(BIKE)
    assert latest_version(result, "m3", 4).state == "original"
    assert latest_version(result, "m3", 5).state == "truncated"
    assert first_version(result, "m3").state == "original"
    assert latest_version(result, "m9", 1) is None  # not in the history yet
    assert tool_names(result)  # every tool call id named
    assert tool_names(result) is tool_names(result)  # derived once per replay


def test_a_stack_that_is_a_sliver_gets_a_zoomed_view_and_a_tall_one_none():
    result = run(BIKE)
    first, hammer = layout(result, 1), layout(result, 5)
    assert hammer.zoom is None  # 39% of the window reads as it is
    zoom = first.zoom
    assert zoom is not None
    stack = result.floor_tokens + sum(result.block_tokens(b) for b in result.calls[0].blocks)
    assert stack < ZOOM_BELOW * result.settings.window <= zoom.tokens * 100
    # the zoomed stack fills most of its view, so each block can be selected
    assert first.bottom_y - first.stack_top_y > 0.6 * (first.bottom_y - zoom.top_y)
    for shape in first.shapes:
        assert shape.zoom_height == pytest.approx(shape.height * zoom.factor)
        assert shape.zoom_height >= 20  # call 1's two blocks: targets, not slivers
    assert zoom.factor == pytest.approx(zoom.tokens and (first.bottom_y - zoom.top_y) / zoom.tokens / scale_of(result)[0])


def test_truncated_blocks_keep_their_label_among_many():
    result = run(LONG)
    crowded = [layout(result, number) for number in range(30, 65, 7)]
    assert any(well.unlabelled for well in crowded)
    for well in crowded:
        assert all(shape.label_y is not None for shape in well.shapes if shape.state == "truncated")


def test_the_real_window_lesson_shows_the_128000_line_and_the_stack_against_the_model():
    scenario = open_scenario("real-window")
    result = replay(scenario, scenario.settings)
    well = layout(result, 6)
    assert well.overflow
    assert {mark.kind for mark in well.marks} >= {"window", "line", "model", "zero"}
    assert well.zoom is not None
    model = next(mark for mark in well.zoom.marks if mark.kind == "model")
    assert model.tokens == 8000
    # in the zoom the stack's top stands above the model's window: the overflow is visible
    assert well.stack_top_y < model.y - 5
    assert well.gulp_y < TOP  # "Gulp" in the band no label enters
    assert all(item.label_y >= TOP for item in [*well.shapes, *well.zoom.marks] if item.label_y is not None)


def test_axis_labels_are_pushed_apart_when_the_line_sits_at_the_rim():
    scenario = open_scenario("reply-room")
    result = replay(scenario, scenario.settings)
    well = layout(result, 5)
    window, line = (next(mark for mark in well.marks if mark.kind == kind) for kind in ("window", "line"))
    assert abs(window.y - line.y) < NORMAL.axis_gap  # 4,096 and 98% are a few pixels apart
    assert abs(window.label_y - line.label_y) >= NORMAL.axis_gap - 1e-9


def test_projector_size_is_taller_with_wider_label_lines():
    result = run(LONG)
    for number in (1, 30, 64):
        well = layout(result, number, size=PROJECTOR)
        assert well.height == PROJECTOR.height and well.projector
        placed = sorted(item.label_y for item in [*well.shapes, *well.traces, *(well.zoom.marks if well.zoom else [])] if item.label_y is not None)
        assert all(b - a >= PROJECTOR.label_gap - 1e-9 for a, b in zip(placed, placed[1:]))


@given(st.floats(0.001, 1e9))
def test_nice_ceiling_is_round_and_just_above(value):
    nice = nice_ceiling(value)
    assert value * (1 - 1e-9) <= nice <= value * 4 / 3 * (1 + 1e-9)  # the widest step: 1.5 to 2
    mantissa = nice / 10 ** math.floor(math.log10(nice) + 1e-12)
    assert any(mantissa == pytest.approx(step) for step in (1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10))


def test_zoom_range_keeps_a_nearby_level_in_view():
    assert zoom_range(5000, 10000, [8000]) is None  # half the well: no zoom
    assert zoom_range(1000, 128000, [102400]) == 1200  # the far line stays out
    assert zoom_range(6000, 128000, [8000, 102400]) == 10000  # the model's window, near, stays in


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(0, 500), max_size=12), st.floats(10, 60))
def test_marks_are_labelled_apart_within_bounds(levels, gap):
    marks = [Mark("line", 0, y) for y in levels]
    place_labels(marks, top=20, bottom=520, gap=gap)
    placed = sorted(mark.label_y for mark in marks if mark.label_y is not None)
    assert all(20 - 1e-9 <= y <= 520 + 1e-9 for y in placed)
    assert all(b - a >= gap - 1e-9 for a, b in zip(placed, placed[1:]))


def test_pages_cut_together_get_one_band_around_them():
    """by-layer compresses a call's retrieved pages as one unit: the thin cut blocks sit side by
    side and their bands merge, where two outlines overlapped into a double box before."""
    result = run(open_scenario("workshop-manuals"))
    well = layout(result, 8)
    thin = sorted((shape for shape in well.shapes if shape.cut and shape.shown_height < 8), key=lambda shape: shape.shown_y)
    assert len(thin) == 2 and thin[0].shown_y + thin[0].shown_height == pytest.approx(thin[1].shown_y, abs=0.2)
    [(top, height)] = well.cut_bands
    assert top <= thin[0].shown_y and top + height >= thin[1].shown_y + thin[1].shown_height


def test_the_resting_hammer_never_covers_an_axis_label():
    """The hammer rests left of the well, where the axis labels are: no label lies under its
    head (the lowest, 0, gives way when the hammer strikes at the very bottom)."""
    from webapp.core.drawing.well_parts import HAMMER_HALF
    from webapp.core.inputs.library import scenario_library

    for scenario in scenario_library().scenarios.values():
        for strategy in (scenario.settings.strategy, "codex-cli", "truncate-drop"):
            result = replay(scenario, scenario.settings.model_copy(update={"strategy": strategy}))
            for number in range(1, len(result.calls) + 1):
                well = layout(result, number)
                if well.hammer_y is None:
                    continue
                rest = well.hammer_y  # where it ends, after striking at hammer_y + hammer_settle
                for mark in well.marks:
                    label = mark.label_y if mark.label_y is not None else mark.y
                    # an axis label is a figure (12 px type) over its caption: label-12 to label+24
                    assert not (label - 12 < rest + HAMMER_HALF and rest - HAMMER_HALF < label + 24), (scenario.id, strategy, number, mark.kind)


def leader_spans(well) -> list[tuple[float, float]]:
    """The heights each axis leader line runs over, from its label to its level (_well.html draws one when they are more than 2 px apart)."""
    return [(min(mark.y, mark.label_y), max(mark.y, mark.label_y)) for mark in well.marks if mark.label_y is not None and abs(mark.label_y - mark.y) > 2]


@pytest.mark.parametrize("size", [NORMAL, PROJECTOR])
def test_keeps_name_lies_clear_of_the_axis_leaders_and_the_hammer(size):
    """Beside a plain well KEEP's name shares the lane between the axis and the well with the
    leader lines of axis labels pushed off their level (the alert and target lines crowd the
    red line) and with the resting hammer: it moves along the bracket, or just past its end,
    to where none of them runs, and stays in the drawing; with nothing in the way it is at the
    bracket's middle."""
    from webapp.core.inputs.library import scenario_library

    moved = 0
    for scenario in scenario_library().scenarios.values():
        for changes in ({}, {"alert": 0.7, "target": 0.75}):
            result = replay(scenario, scenario.settings.model_copy(update=changes))
            for number in range(1, len(result.calls) + 1):
                well = layout(result, number, size=size)
                if well.keep_top is None or well.zoom is not None:
                    continue
                name = (well.keep_name_y - size.keep_half, well.keep_name_y + size.keep_half)
                spans = leader_spans(well)
                if well.hammer_y is not None and well.hammer_x != HAMMER_BESIDE_KEEP:
                    spans.append((well.hammer_y - HAMMER_HALF, well.hammer_y + HAMMER_HALF))
                where = (scenario.id, changes, number)
                assert all(end < name[0] or start > name[1] for start, end in spans), where
                assert TOP <= name[0] and name[1] <= well.bottom_y, where
                middle = (well.keep_top + well.keep_bottom) / 2
                if all(end < middle - size.keep_half or start > middle + size.keep_half for start, end in spans):
                    assert well.keep_name_y == middle, where
                else:
                    moved += 1
    assert moved  # the workshop-manuals lesson's alert and target lines push its labels off


@pytest.mark.parametrize("size", [NORMAL, PROJECTOR])
def test_a_runaway_stack_keeps_keep_and_the_leaders_out_of_the_top_band(size):
    """Without compaction long-haul and harnesses stack far over the window: the drawing cuts
    the stack at the top band, where "Gulp!" is written. KEEP is cut there too, its name (pushed
    past a short bracket's end when need be) lies under the band and within the drawing, and no
    block's leader line starts above the band (they ran up across "Gulp!")."""
    from webapp.core.settings import with_strategy

    runaway = cut_off = 0
    for scenario in (LONG, open_scenario("harnesses")):
        result = replay(scenario, with_strategy(scenario.settings, scenario.settings, "none"))
        for number in range(1, len(result.calls) + 1):
            well = layout(result, number, size=size)
            where = (scenario.id, number)
            runaway += well.stack_top_y < TOP
            if well.keep_top is not None:
                assert TOP <= well.keep_top <= well.keep_bottom <= well.bottom_y, where
                assert TOP <= well.keep_name_y - size.keep_half and well.keep_name_y + size.keep_half <= well.bottom_y, where
            assert all(shape.leader_y >= TOP for shape in well.shapes if shape.label_y is not None), where
            cut_off += any(shape.anchor < TOP for shape in well.shapes if shape.label_y is not None)
    assert runaway >= 20 and cut_off >= 20  # long-haul's calls from 42 on, harnesses' from 24 on
