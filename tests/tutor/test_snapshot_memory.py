"""A course's snapshots and Python's cyclic collector (``tutor.db.freezing``):
once a request that fully loaded one has finished, ``gc.freeze()``, so full
collections stop walking its tens of thousands of objects; that is safe only
because a snapshot holds no reference cycle -- reference counting alone frees
a replaced one -- and because each freeze first collects what the last one kept."""

from __future__ import annotations

import gc
import weakref

import pytest
from django.core.signals import request_finished

from corrections.selectors.course_snapshot import COURSE_FACTS, corrections_scope_keys, course_facts_load
from lessons.models import LessonStatus
from lessons.selectors.library import (
    LIBRARIES,
    lessons_changed,
    lessons_scope_keys,
    library_load,
    other_library_load,
)
from tests.lessons.conftest import make_lesson
from tutor.bench.corrections import bulk_facts
from tutor.db import freezing
from tutor.db.snapshots import forget_all

# Committed, as a deployment's rows are: a transaction that changed a scope reads it itself.
pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def library(course):
    for n in range(20):
        make_lesson(course=course, title=f"lesson {n}", tags=["loops", f"t{n}"], symptoms=[f"error {n}"])
    make_lesson(course=course, title="retired", status=LessonStatus.RETIRED)
    bulk_facts(course, [([f"word{n}", "loops"], f"fact {n}") for n in range(20)])
    return course


@pytest.fixture
def unfrozen(monkeypatch):
    forget_all()
    monkeypatch.setattr(freezing, "_FREEZE", freezing._Freeze())
    gc.unfreeze()
    yield
    gc.unfreeze()
    forget_all()


def finished() -> None:
    """A request has finished (the signal a WSGI server's response close sends)."""
    request_finished.send(sender=None)


@pytest.mark.parametrize("load", [library_load, other_library_load, course_facts_load])
def test_a_course_snapshot_holds_no_reference_cycle(library, load):
    """What a frozen snapshot holds is freed by reference counting when the
    snapshot is replaced; a cycle in it would be kept for good."""
    value = load(library.pk)  # the first load of a kind compiles its statements and fills caches
    del value
    gc.collect()
    gc.disable()
    try:
        value = load(library.pk)
        assert value is not None
        del value
        assert gc.collect() == 0
    finally:
        gc.enable()


def test_a_full_load_freezes_once_its_request_finished_and_a_change_applied_does_not(
    library, settings, unfrozen
):
    settings.TUTOR_GC_FREEZE = True

    assert LIBRARIES.get(lessons_scope_keys(library.pk), library.pk) is not None
    assert gc.get_freeze_count() == 0  # not inside the request
    finished()
    assert gc.get_freeze_count() > 0
    gc.unfreeze()

    lesson = make_lesson(course=library, title="approved later", tags=["loops"])
    lessons_changed(library.pk, other=False, rows=[lesson.pk])  # committed: published at once
    applied = LIBRARIES.get(lessons_scope_keys(library.pk), library.pk)
    finished()
    assert str(lesson.pk) in applied.by_id and gc.get_freeze_count() == 0


def test_freezes_come_at_most_once_a_minute_and_a_waiting_one_comes_later(
    library, settings, unfrozen, monkeypatch
):
    settings.TUTOR_GC_FREEZE = True
    clock = [1000.0]
    monkeypatch.setattr(freezing.time, "monotonic", lambda: clock[0])
    LIBRARIES.get(lessons_scope_keys(library.pk), library.pk)
    finished()
    gc.unfreeze()

    COURSE_FACTS.get(corrections_scope_keys(library.pk), library.pk)  # another full load, 10 s later
    clock[0] += 10
    finished()
    assert gc.get_freeze_count() == 0
    clock[0] += freezing.GC_FREEZE_EVERY_SECONDS
    finished()  # any request's end, once the minute is over
    assert gc.get_freeze_count() > 0


def test_a_freeze_starts_by_collecting_what_an_earlier_one_kept(library, settings, unfrozen):
    """Cyclic garbage frozen with a snapshot is not kept for good: the next
    freeze unfreezes and collects first."""
    settings.TUTOR_GC_FREEZE = True

    class Node:
        pass

    kept = Node()
    kept.self = kept
    alive = weakref.ref(kept)
    LIBRARIES.get(lessons_scope_keys(library.pk), library.pk)
    finished()
    del kept  # a cycle: frozen, reference counting cannot free it
    gc.collect()
    assert alive() is not None

    freezing._FREEZE.at -= freezing.GC_FREEZE_EVERY_SECONDS
    forget_all()
    LIBRARIES.get(lessons_scope_keys(library.pk), library.pk)  # the next full load
    finished()

    assert alive() is None


def test_without_the_setting_a_load_freezes_nothing(library, settings, unfrozen):
    settings.TUTOR_GC_FREEZE = False

    assert LIBRARIES.get(lessons_scope_keys(library.pk), library.pk) is not None
    finished()

    assert gc.get_freeze_count() == 0
