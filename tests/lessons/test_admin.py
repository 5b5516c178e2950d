"""The lessons work queue in admin (SPEC §8): what needs a decision first,
course scoping, the draft's review aids, manual entry, skill candidates and
traces, constant query counts."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from lessons.models import Lesson, LessonStatus, RecalledLesson, RecallTrace, SkillCandidate
from lessons.services.lifecycle import lesson_approve
from tests.lessons.conftest import make_lesson, make_trace
from tutor.models import AuditEvent


def login(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def listed(response) -> list:
    return list(response.context["cl"].result_list)


CHANGELIST = reverse("admin:lessons_lesson_changelist")


@pytest.mark.django_db
def test_the_queue_shows_pending_drafts_by_default_and_the_other_queues_on_demand(course, staff):
    pending = make_lesson(course=course, status=LessonStatus.PENDING)
    quarantined = make_lesson(course=course, status=LessonStatus.QUARANTINED)
    injected = make_lesson(course=course)
    client = login(staff)

    assert listed(client.get(CHANGELIST)) == [pending]
    assert listed(client.get(CHANGELIST, {"queue": "quarantined"})) == [quarantined]
    assert set(listed(client.get(CHANGELIST, {"queue": "all"}))) == {pending, quarantined, injected}


@pytest.mark.django_db
def test_past_review_lessons_have_their_own_queue(course, staff):
    from datetime import timedelta

    from django.utils import timezone

    due = make_lesson(course=course, review_by=timezone.localdate() - timedelta(days=2))
    make_lesson(
        course=course, review_by=timezone.localdate() - timedelta(days=2), status=LessonStatus.RETIRED
    )
    make_lesson(course=course)

    assert listed(login(staff).get(CHANGELIST, {"queue": "review_due"})) == [due]


@pytest.mark.django_db
def test_course_staff_see_their_course_and_global_drafts_never_another_course(course, other_course, staff):
    mine = make_lesson(course=course, status=LessonStatus.PENDING)
    global_ = make_lesson(course=None, status=LessonStatus.PENDING)
    theirs = make_lesson(course=other_course, status=LessonStatus.PENDING, title="THEIR-DRAFT")
    client = login(staff)

    response = client.get(CHANGELIST)

    assert set(listed(response)) == {mine, global_}
    assert "THEIR-DRAFT" not in response.content.decode() and "other-101" not in response.content.decode()
    assert client.get(reverse("admin:lessons_lesson_change", args=[theirs.pk])).status_code == 302


@pytest.mark.django_db
def test_staff_approving_a_global_draft_is_refused_with_a_message(staff):
    lesson = make_lesson(course=None, status=LessonStatus.PENDING)

    response = login(staff).post(
        CHANGELIST, {"action": "approve", "_selected_action": [str(lesson.pk)]}, follow=True
    )

    assert "only superusers manage global lessons" in response.content.decode()
    lesson.refresh_from_db()
    assert lesson.status == "pending"


@pytest.mark.django_db
def test_a_draft_page_shows_redaction_marks_source_similar_lessons_and_its_trail(course, staff):
    similar = make_lesson(course=course, title="Check the empty array first", body="first([]) is undefined")
    draft = make_lesson(
        course=course,
        title="Check the empty array first!",
        body="first([]) is undefined, see ops@example.org",
        status=LessonStatus.PENDING,
    )
    lesson_approve(lesson=draft, actor=staff)

    page = login(staff).get(reverse("admin:lessons_lesson_change", args=[draft.pk])).content.decode()

    assert "1 (email ×1)" in page
    assert "Manual" in page
    assert reverse("admin:lessons_lesson_change", args=[similar.pk]) in page and "similarity" in page
    assert "lesson_approved by teacher: pending → approved" in page


@pytest.mark.django_db
def test_lessons_are_never_edited_or_deleted_in_admin(course, staff):
    lesson = make_lesson(course=course, status=LessonStatus.PENDING)
    client = login(staff)
    change = reverse("admin:lessons_lesson_change", args=[lesson.pk])

    client.post(change, {"title": "rewritten", "body": "rewritten"})
    deleted = client.post(reverse("admin:lessons_lesson_delete", args=[lesson.pk]), {"post": "yes"})

    lesson.refresh_from_db()
    assert lesson.title != "rewritten"
    assert deleted.status_code == 403 and Lesson.objects.filter(pk=lesson.pk).exists()


@pytest.mark.django_db
def test_staff_enter_a_lesson_in_admin_through_the_service(course, other_course, staff):
    client = login(staff)
    add = reverse("admin:lessons_lesson_add")
    form = {
        "course": str(course.pk),
        "title": "Mind the empty array",
        "body": "first([]) returns undefined; token=abcd1234efgh5678",
        "tags_text": "arrays\nedge cases",
        "symptoms_text": "returns undefined",
        "kind": "note",
        "review_by": "",
    }

    foreign = client.post(add, {**form, "course": str(other_course.pk)})
    global_ = client.post(add, {**form, "course": ""})
    created = client.post(add, form)

    assert foreign.status_code == 200 and global_.status_code == 200  # the form again, with errors
    assert created.status_code == 302, created.content.decode()[:2000]
    lesson = Lesson.objects.get()
    assert (lesson.status, lesson.source, lesson.created_by, lesson.course) == (
        "pending",
        "manual",
        staff,
        course,
    )
    assert lesson.tags == ["arrays", "edge cases"] and lesson.symptoms == ["returns undefined"]
    assert "abcd1234efgh5678" not in lesson.body and lesson.redactions == 1
    assert AuditEvent.objects.get(target_id=str(lesson.pk)).event == "lesson_created"


@pytest.mark.django_db
def test_skill_candidates_are_accepted_or_dismissed_with_an_audit_event(course, staff):
    accepted = SkillCandidate.objects.create(lesson=make_lesson(course=course, hit_count=3), hit_count=3)
    dismissed = SkillCandidate.objects.create(lesson=make_lesson(course=course, hit_count=4), hit_count=4)
    client = login(staff)
    url = reverse("admin:lessons_skillcandidate_changelist")

    assert set(listed(client.get(url))) == {accepted, dismissed}
    client.post(url, {"action": "accept", "_selected_action": [str(accepted.pk)]})
    client.post(url, {"action": "dismiss", "_selected_action": [str(dismissed.pk)]})
    again = client.post(
        url + "?status=all", {"action": "accept", "_selected_action": [str(dismissed.pk)]}, follow=True
    )

    accepted.refresh_from_db()
    dismissed.refresh_from_db()
    assert (accepted.status, accepted.decided_by, dismissed.status) == ("accepted", staff, "dismissed")
    assert "already been decided" in again.content.decode()
    assert list(
        AuditEvent.objects.filter(event__startswith="skill").order_by("id").values_list("event", flat=True)
    ) == [
        "skill_accepted",
        "skill_dismissed",
    ]
    assert listed(client.get(url)) == []  # the default view: open candidates


@pytest.mark.django_db
def test_a_trace_page_explains_every_decision(course, task, student, staff):
    lesson = make_lesson(course=course, title="the recalled one")
    trace = RecallTrace.objects.create(
        correlation_id="req-9",
        course=course,
        student=student,
        task=task,
        context={"tags": ["a"], "symptoms": [], "today": "2026-10-13"},
        params={},
        lines=[
            {
                "lesson": str(lesson.pk),
                "title": "the recalled one",
                "decision": "recalled",
                "score": 0.7,
                "components": {"tag": 1.0, "symptom": 0.0, "decay": 1.0},
                "tokens": 10,
            },
            {
                "lesson": "x",
                "title": "the draft",
                "decision": "filtered_status",
                "score": None,
                "components": None,
                "tokens": 5,
            },
        ],
        counts={"recalled": 1, "filtered_status": 1, "floor": 7},
        omitted={"floor": 7},
        used_tokens=10,
        budget_tokens=800,
    )
    RecalledLesson.objects.create(trace=trace, lesson=lesson, rank=1)
    client = login(staff)

    page = client.get(reverse("admin:lessons_recalltrace_change", args=[trace.pk])).content.decode()
    found = listed(client.get(reverse("admin:lessons_recalltrace_changelist"), {"q": "req-9"}))

    assert "<td>recalled</td><td>the recalled one</td><td>0.70</td>" in page
    assert "<td>filtered_status</td><td>the draft</td><td>-</td>" in page
    assert "floor" in page
    assert found == [trace]


@pytest.mark.django_db
@pytest.mark.parametrize("model", ["lesson", "skillcandidate", "recalltrace"])
def test_changelist_queries_do_not_grow_with_rows(
    course, task, student, staff, django_assert_num_queries, model
):
    client = login(staff)
    url = reverse(f"admin:lessons_{model}_changelist") + ("?queue=all" if model == "lesson" else "")

    def add(n: int):
        for _ in range(n):
            lesson = make_lesson(course=course, status=LessonStatus.PENDING)
            SkillCandidate.objects.create(lesson=lesson, hit_count=3)
            make_trace(student=student, task=task, counts={"recalled": 0})

    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    add(1)
    client.get(url)  # warm: content types, permissions
    with CaptureQueriesContext(connection) as few:
        client.get(url)
    add(30)
    with django_assert_num_queries(len(few)):
        assert client.get(url).status_code == 200


@pytest.mark.django_db
@pytest.mark.parametrize("model", ["lesson", "skillcandidate", "recalltrace"])
def test_a_superusers_changelist_counts_at_most_the_cap(course, task, student, superuser, model, monkeypatch):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from tutor import admin_scoping

    monkeypatch.setattr(admin_scoping, "ADMIN_COUNT_CAP", 3)
    for _ in range(6):
        lesson = make_lesson(course=course, status=LessonStatus.PENDING)
        SkillCandidate.objects.create(lesson=lesson, hit_count=3)
        make_trace(student=student, task=task)
    url = reverse(f"admin:lessons_{model}_changelist") + ("?queue=all" if model == "lesson" else "")

    with CaptureQueriesContext(connection) as queries:
        response = login(superuser).get(url)

    assert response.status_code == 200
    cl = response.context["cl"]
    assert isinstance(cl.paginator, admin_scoping.CappedCountPaginator)
    assert (cl.result_count, len(cl.result_list), cl.show_full_result_count) == (4, 6, False)
    counts = [q["sql"] for q in queries.captured_queries if "COUNT(" in q["sql"].upper()]
    assert counts and all("LIMIT" in sql.upper() for sql in counts)  # never a full COUNT
