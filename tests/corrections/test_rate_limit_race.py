"""The corrections rate limit holds for corrections recorded at once (SPEC §5
abuse limits): the count and the insert are one transaction's, one user's
at a time."""

from __future__ import annotations

import contextlib
import threading

import pytest
from django.db import connections

from corrections.models import Correction
from corrections.services import intake
from corrections.services.intake import RateLimited, correction_submit
from tests.concurrency import concurrent_writers


@concurrent_writers
@pytest.mark.django_db(transaction=True)
def test_two_corrections_recorded_at_once_do_not_pass_the_limit_together(
    student, course, settings, monkeypatch
):
    """Found by an outside test: both requests counted one below the limit
    before either inserted, and both were recorded."""
    settings.CORRECTIONS_RATE_LIMIT = "1/minute"
    met = threading.Barrier(2, timeout=2)
    insert = intake.correction_insert

    def insert_when_both_counted(**kwargs):
        # Both counted: the old code inserted twice. Or the barrier breaks: the
        # other is held behind this one's lock, and counts after this commits.
        with contextlib.suppress(threading.BrokenBarrierError):
            met.wait()
        return insert(**kwargs)

    monkeypatch.setattr(intake, "correction_insert", insert_when_both_counted)
    outcomes: list[object] = [None, None]

    def submit(index: int, text: str) -> None:
        try:
            outcomes[index] = correction_submit(user=student, course=course, content=text)[1]
        except RateLimited as refused:
            outcomes[index] = refused
        finally:
            connections.close_all()

    threads = [
        threading.Thread(target=submit, args=(i, t))
        for i, t in enumerate(["I prefer tables", "I prefer lists"])
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)

    assert Correction.objects.count() == 1
    assert sorted(type(outcome).__name__ for outcome in outcomes) == ["RateLimited", "bool"]
