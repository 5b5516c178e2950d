"""A course's snapshots and Python's cyclic collector (``tutor.db.snapshots._frozen``):
a full load ends with ``gc.freeze()``, so full collections stop walking its
tens of thousands of objects; that is safe only because a snapshot holds no
reference cycle -- reference counting alone frees a replaced one."""

from __future__ import annotations

import gc

import pytest

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
def unfrozen():
    forget_all()
    yield
    gc.unfreeze()
    forget_all()


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


def test_a_full_load_freezes_and_a_change_applied_does_not(library, settings, unfrozen):
    settings.TUTOR_GC_FREEZE = True
    gc.unfreeze()
    assert gc.get_freeze_count() == 0

    assert LIBRARIES.get(lessons_scope_keys(library.pk), library.pk) is not None
    frozen = gc.get_freeze_count()
    assert frozen > 0
    gc.unfreeze()

    lesson = make_lesson(course=library, title="approved later", tags=["loops"])
    lessons_changed(library.pk, other=False, rows=[lesson.pk])  # committed: published at once
    applied = LIBRARIES.get(lessons_scope_keys(library.pk), library.pk)
    assert str(lesson.pk) in applied.by_id and gc.get_freeze_count() == 0

    COURSE_FACTS.get(corrections_scope_keys(library.pk), library.pk)
    assert gc.get_freeze_count() > 0


def test_without_the_setting_a_load_freezes_nothing(library, settings, unfrozen):
    settings.TUTOR_GC_FREEZE = False
    gc.unfreeze()

    assert LIBRARIES.get(lessons_scope_keys(library.pk), library.pk) is not None

    assert gc.get_freeze_count() == 0
