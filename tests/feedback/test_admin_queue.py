"""Django admin as the staff work queue (SPEC §8): the "needs a decision"
default, the verdict and re-review actions, course scoping and constant
query counts."""

from __future__ import annotations

import django.db
import django.test.utils
import pytest
from django.test import Client
from django.urls import reverse

from feedback.models import AttemptKind, AttemptStatus, ReviewAttempt, Submission
from tests.factories import (
    criterion_entry,
    enroll,
    make_attempt,
    make_course,
    make_submission,
    make_task,
    make_user,
    review_result,
)
from tutor.coursefile import course_import, validate_course
from tutor.models import AuditEvent, Enrollment

ATTEMPTS = reverse("admin:feedback_reviewattempt_changelist")
SUBMISSIONS = reverse("admin:feedback_submission_changelist")


def verdict_url(attempt) -> str:
    return reverse("admin:feedback_reviewattempt_verdict", args=[attempt.pk])


def need_review() -> dict:
    return review_result(
        [
            criterion_entry("A1", "PASS", basis="ci"),
            criterion_entry("A2", "PASS"),
            criterion_entry("A3", "NEED_REVIEW", basis="none", reason="semantic review not configured"),
            criterion_entry("L1", "NEED_REVIEW", kind="learning", basis="none"),
        ],
        next_step="Ask staff to check A3: Explanation is correct",
    )


def failed() -> dict:
    return review_result(
        [
            criterion_entry("A1", "FAIL", basis="ci"),
            criterion_entry("A2", "PASS"),
            criterion_entry("A3", "PASS", basis="model"),
            criterion_entry("L1", "PASS", kind="learning"),
        ]
    )


def passed() -> dict:
    return review_result(
        [
            criterion_entry(cid, "PASS", kind="learning" if cid == "L1" else "acceptance")
            for cid in ("A1", "A2", "A3", "L1")
        ],
        next_step="",
    )


@pytest.fixture
def staff_client(staff):
    client = Client()
    client.force_login(staff)
    return client


@pytest.fixture
def queue(course, task):
    """One student per case; ``expected`` are the attempts that need a decision."""
    rows = {}

    def student(name):
        return enroll(course, name)

    # Reviewed under rules that changed since: made first, then the rubric is bumped.
    rows["stale"] = make_attempt(make_submission(student("stale"), task), result=failed())
    data = {
        "slug": course.slug,
        "title": course.title,
        "tasks": [
            {
                "slug": task.slug,
                "title": task.title,
                "rubric": {"version": "2026.2", "criteria": task.current_rubric.criteria},
            }
        ],
    }
    course_import(spec=validate_course(data))
    task = make_task(course)  # with the new current rubric

    rows["need_review"] = make_attempt(make_submission(student("need-review"), task), result=need_review())
    rows["failed"] = make_attempt(make_submission(student("failed"), task), result=failed())
    rows["unavailable"] = make_attempt(make_submission(student("down"), task), AttemptStatus.UNAVAILABLE)
    rows["invalid"] = make_attempt(make_submission(student("broken"), task), AttemptStatus.INVALID)
    rows["pending"] = make_attempt(make_submission(student("pending"), task), AttemptStatus.QUEUED)
    # An older submission that needed review, replaced by a passing one.
    mover = student("mover")
    rows["old_submission"] = make_attempt(make_submission(mover, task), result=need_review())
    rows["replaced_by_pass"] = make_attempt(make_submission(mover, task), result=passed())
    # On one submission: a NEED_REVIEW attempt, then a newer completed PASS.
    settled = make_submission(student("settled"), task)
    rows["older_attempt"] = make_attempt(settled, result=need_review())
    rows["newer_attempt_pass"] = make_attempt(settled, result=passed())
    expected = {rows[k].pk for k in ("need_review", "unavailable", "invalid", "stale")}
    return rows, expected


def listed(response) -> set:
    assert response.status_code == 200
    return {row.pk for row in response.context["cl"].result_list}


def test_queue_lists_exactly_the_reviews_that_need_a_decision(queue, admin_client):
    rows, expected = queue

    assert listed(admin_client.get(ATTEMPTS)) == expected
    assert listed(admin_client.get(ATTEMPTS + "?decision=stale_rules")) == {rows["stale"].pk}
    assert listed(admin_client.get(ATTEMPTS + "?decision=need_review")) == {rows["need_review"].pk}
    assert listed(admin_client.get(ATTEMPTS + "?decision=all")) == set(
        ReviewAttempt.objects.values_list("pk", flat=True)
    )
    submissions = listed(admin_client.get(SUBMISSIONS))
    assert submissions == {ReviewAttempt.objects.get(pk=pk).submission_id for pk in expected}


def test_queue_shows_overall_and_what_waits_not_raw_json(queue, admin_client):
    rows, _ = queue

    content = admin_client.get(ATTEMPTS).content.decode()

    assert "NEED_REVIEW" in content
    assert "A3, L1 wait for staff" in content  # the NEED_REVIEW row: what staff decide
    assert "invalid" in content  # a review that ended invalid says so
    assert '"criteria"' not in content


def test_attempt_page_renders_the_criteria_as_a_table(queue, admin_client):
    attempt = queue[0]["need_review"]

    response = admin_client.get(reverse("admin:feedback_reviewattempt_change", args=[attempt.pk]))

    content = response.content.decode()
    assert '<table class="criteria-table">' in content
    assert "semantic review not configured" in content
    assert "Ask staff to check A3" in content


def test_staff_verdict_through_the_form_creates_an_attempt_and_an_audit_row(queue, staff, staff_client):
    attempt = queue[0]["need_review"]

    form = staff_client.get(verdict_url(attempt))
    assert form.status_code == 200
    assert b"A3" in form.content
    response = staff_client.post(
        verdict_url(attempt),
        {
            "status_A3": "PASS",
            "reason_A3": "Explains the empty-array case correctly",
            "status_L1": "PASS",
            "reason_L1": "Reflects on the empty array",
            "next_step": "",
        },
        HTTP_X_CORRELATION_ID="verdict-cid-1",
    )

    assert response.status_code == 302
    created = ReviewAttempt.objects.filter(
        submission=attempt.submission, kind=AttemptKind.STAFF_VERDICT
    ).get()
    a3 = next(c for c in created.result["criteria"] if c["rubric_id"] == "A3")
    assert (a3["status"], a3["basis"], a3["reason"]) == (
        "PASS",
        "staff",
        "Explains the empty-array case correctly",
    )
    assert created.result["overall"] == "PASS"
    assert created.result["next_step"] == ""  # PASS: the old "Ask staff to check A3" is dropped
    event = AuditEvent.objects.get(event="staff_verdict")
    assert (event.actor, event.from_state, event.to_state) == (staff, "NEED_REVIEW", "PASS")
    assert event.correlation_id == "verdict-cid-1"
    assert event.course_id == attempt.submission.task.course_id
    assert event.target_id == str(created.pk)
    # Settled (both criteria that waited for staff): the student's latest
    # review is no longer in the queue.
    assert attempt.pk not in listed(staff_client.get(ATTEMPTS))
    assert created.pk not in listed(staff_client.get(ATTEMPTS))
    messages = [str(m) for m in response.wsgi_request._messages]
    assert any("Staff verdict recorded" in m for m in messages)


def test_verdict_without_a_reason_is_refused_and_changes_nothing(queue, staff_client):
    attempt = queue[0]["need_review"]
    before = ReviewAttempt.objects.count()

    response = staff_client.post(verdict_url(attempt), {"status_A3": "FAIL", "reason_A3": ""})

    assert response.status_code == 200
    assert b"A verdict needs a reason" in response.content
    assert ReviewAttempt.objects.count() == before
    assert not AuditEvent.objects.filter(event="staff_verdict").exists()


def test_verdict_action_opens_the_form_for_one_selected_review(queue, staff_client):
    attempt = queue[0]["need_review"]

    response = staff_client.post(ATTEMPTS, {"action": "give_verdict", "_selected_action": [attempt.pk]})

    assert response.status_code == 302
    assert response["Location"] == verdict_url(attempt)


def test_forced_rereview_action_queues_a_fresh_attempt_and_audits_it(queue, staff, staff_client, settings):
    settings.TUTOR_LLM_BASE_URL = None
    attempt = queue[0]["unavailable"]

    response = staff_client.post(ATTEMPTS, {"action": "force_rereview", "_selected_action": [attempt.pk]})

    assert response.status_code == 302
    fresh = ReviewAttempt.objects.filter(submission=attempt.submission).order_by("-attempt_seq").first()
    assert fresh.pk != attempt.pk and fresh.forced and fresh.reused_from_id is None
    event = AuditEvent.objects.get(event="review_forced")
    assert (event.actor, event.target_id) == (staff, str(fresh.pk))


def test_staff_of_another_course_can_neither_list_nor_open_nor_decide(queue):
    attempt = queue[0]["need_review"]
    other_course = make_course("other-202")
    outsider = enroll(other_course, "outsider", Enrollment.Role.STAFF)
    client = Client()
    client.force_login(outsider)

    assert listed(client.get(ATTEMPTS + "?decision=all")) == set()
    assert listed(client.get(SUBMISSIONS + "?decision=all")) == set()
    assert client.get(verdict_url(attempt)).status_code == 404
    before = ReviewAttempt.objects.count()
    response = client.post(verdict_url(attempt), {"status_A3": "PASS", "reason_A3": "sneaky"})
    assert response.status_code == 404
    client.post(ATTEMPTS, {"action": "force_rereview", "_selected_action": [attempt.pk]})
    assert ReviewAttempt.objects.count() == before
    assert not AuditEvent.objects.filter(event__in=["staff_verdict", "review_forced"]).exists()


def test_a_student_with_admin_flags_cannot_use_the_verdict_form(queue):
    attempt = queue[0]["need_review"]
    lurker = make_user("lurker", is_staff=True)
    client = Client()
    client.force_login(lurker)

    assert client.get(verdict_url(attempt)).status_code == 404


def _fill(task, count, start=0):
    for i in range(start, start + count):
        student = enroll(task.course, f"bulk{i}")
        make_attempt(make_submission(student, task), result=need_review())


@pytest.mark.parametrize("url", [ATTEMPTS, SUBMISSIONS], ids=["attempts", "submissions"])
def test_queue_query_count_does_not_grow_with_rows(db, admin_client, url):
    task = make_task(make_course("bulk-101"))
    _fill(task, 1)
    admin_client.get(url)  # warm the session and content-type caches

    with django.test.utils.CaptureQueriesContext(django.db.connection) as one:
        assert admin_client.get(url).status_code == 200
    _fill(task, 199, start=1)
    with django.test.utils.CaptureQueriesContext(django.db.connection) as many:
        response = admin_client.get(url)
    assert response.status_code == 200
    assert response.context["cl"].result_count == 200
    assert len(many) == len(one), [q["sql"][:120] for q in many.captured_queries]


def test_submission_list_never_loads_the_evidence(db, admin_client):
    task = make_task(make_course("heavy-101"))
    student = enroll(task.course, "heavy")
    make_attempt(make_submission(student, task, {"report": "Z" * 50_000}), result=need_review())

    with django.test.utils.CaptureQueriesContext(django.db.connection) as captured:
        response = admin_client.get(SUBMISSIONS)

    assert response.status_code == 200
    assert Submission.objects.count() == 1
    selects = [q["sql"] for q in captured.captured_queries if "feedback_submission" in q["sql"]]
    assert selects and all('"feedback_submission"."evidence"' not in sql for sql in selects)
