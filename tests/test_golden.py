"""The app answers the recorded URLs as it did when they were recorded (tests/golden.py).

A failure lists the URLs whose answer changed. If the change was meant, record again with
`.venv/bin/python -m tests.golden update` and say in the commit why each answer changed;
`python -m tests.golden dump DIR` on both revisions shows the differences.
"""

from __future__ import annotations

from tests import golden


def test_every_recorded_url_answers_as_recorded():
    recorded = golden.stored()
    now = golden.answers(golden.make_client(), [{"url": each["url"], "send": each["send"]} for each in recorded])
    changed = [
        f"{was['url']} {was['send'] or ''}: status {was['status']} -> {new['status']}, {was['bytes']} -> {new['bytes']} bytes"
        + ("" if was["headers"] == new["headers"] else f", headers {was['headers']} -> {new['headers']}")
        for was, new in zip(recorded, now)
        if (was["status"], was["headers"], was["sha256"]) != (new["status"], new["headers"], new["sha256"])
    ]
    assert len(recorded) > 300
    assert not changed, f"{len(changed)} of {len(recorded)} answers changed:\n" + "\n".join(changed[:40])
