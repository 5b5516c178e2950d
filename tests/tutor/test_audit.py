"""The audit trail (SPEC §8): one row per human decision, in the change's own
transaction, with actor, from/to and the correlation id; none for a refusal."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.db import transaction
from django.test import Client
from django.urls import reverse

from feedback.models import ReviewAttempt
from tests.factories import course_data, enroll, make_attempt, make_course, make_submission, make_user
from tutor.audit import audit_record
from tutor.models import AuditEvent, Course, Enrollment


def events(name: str):
    return list(AuditEvent.objects.filter(event=name).order_by("id"))


def verdict(client, submission, body, cid="cid-verdict"):
    return client.post(
        f"/api/submissions/{submission.pk}/verdicts/", body, format="json", HTTP_X_CORRELATION_ID=cid
    )


def test_staff_verdict_over_the_api_is_audited_with_actor_states_and_correlation_id(
    task, student, staff, staff_client
):
    submission = make_submission(student, task)
    make_attempt(submission)  # every criterion PASS

    response = verdict(
        staff_client, submission, {"criteria": [{"rubric_id": "A1", "status": "FAIL", "reason": "CI is red"}]}
    )

    assert response.status_code == 201
    (event,) = events("staff_verdict")
    assert event.actor == staff and event.actor_label == staff.username
    assert (event.from_state, event.to_state) == ("PASS", "FAIL")
    assert event.correlation_id == "cid-verdict"
    assert response["X-Correlation-ID"] == "cid-verdict"
    assert event.target_id == response.json()["id"]
    assert event.course_id == task.course_id
    assert event.extra["criteria"] == [
        {"rubric_id": "A1", "from": "PASS", "from_basis": "check", "to": "FAIL"}
    ]
    assert "CI is red" in event.reason


def test_refused_verdict_writes_no_audit_row(task, student, staff_client):
    submission = make_submission(student, task)
    make_attempt(submission)

    response = verdict(
        staff_client, submission, {"criteria": [{"rubric_id": "Z9", "status": "PASS", "reason": "x"}]}
    )

    assert response.status_code == 400
    assert response.json()["errors"][0]["attr"] == "criteria.0.rubric_id"
    assert not AuditEvent.objects.filter(event="staff_verdict").exists()


def test_forced_review_is_audited_and_a_retry_is_not(
    task, student, staff, staff_client, student_client, settings
):
    settings.TUTOR_LLM_BASE_URL = None
    submission = make_submission(student, task)
    make_attempt(submission, "unavailable")

    retry = student_client.post(f"/api/submissions/{submission.pk}/reviews/", {}, format="json")
    forced = staff_client.post(
        f"/api/submissions/{submission.pk}/reviews/",
        {"force": True},
        format="json",
        HTTP_X_CORRELATION_ID="cid-f",
    )

    assert (retry.status_code, forced.status_code) == (201, 201)
    (event,) = events("review_forced")
    assert (event.actor, event.target_id, event.correlation_id) == (staff, forced.json()["id"], "cid-f")


def test_enrolment_changes_are_audited_once_per_change(db):
    course = make_course("se-101")
    out = {"stdout": StringIO(), "stderr": StringIO()}

    call_command("enroll", "se-101", "carol", "--create", **out)
    call_command("enroll", "se-101", "carol", **out)  # same role: no change, no row
    call_command("enroll", "se-101", "carol", "--staff", **out)

    rows = events("enrollment_changed")
    assert [(e.from_state, e.to_state) for e in rows] == [("", "student"), ("student", "staff")]
    assert {e.actor_label for e in rows} == {"operator"}
    assert all(e.course_id == course.pk and e.correlation_id for e in rows)
    assert rows[0].correlation_id != rows[1].correlation_id  # one id per command run


def test_refused_enrolment_writes_nothing(db):
    make_course("se-101")
    before = AuditEvent.objects.count()

    with pytest.raises(CommandError):
        call_command("enroll", "se-101", "nobody", stdout=StringIO(), stderr=StringIO())

    assert AuditEvent.objects.count() == before


def test_course_import_and_rubric_bump_are_audited(db, tmp_path):
    data = course_data("se-101")
    path = tmp_path / "course.json"
    path.write_text(json.dumps(data))
    out = {"stdout": StringIO(), "stderr": StringIO()}

    call_command("import_course", str(path), **out)
    call_command("import_course", str(path), **out)  # unchanged: no row
    data["tasks"][0]["rubric"]["version"] = "2026.2"
    data["tasks"][0]["rubric"]["criteria"][0]["text"] = "CI passes on main"
    path.write_text(json.dumps(data))
    call_command("import_course", str(path), **out)

    imported = events("course_imported")
    assert [e.to_state for e in imported] == ["created", "updated"]
    assert imported[1].extra["rubric_bumped"] == ["t1"]
    (bump,) = events("rubric_bumped")
    assert (bump.from_state, bump.to_state) == ("2026.1", "2026.2")
    assert bump.course_id == Course.objects.get(slug="se-101").pk


def test_a_refused_import_leaves_no_audit_row(db, tmp_path):
    data = course_data("se-101")
    path = tmp_path / "course.json"
    path.write_text(json.dumps(data))
    call_command("import_course", str(path), stdout=StringIO())
    before = AuditEvent.objects.count()
    data["tasks"][0]["rubric"]["criteria"][0]["text"] = "changed without a bump"
    path.write_text(json.dumps(data))

    with pytest.raises(CommandError, match="criteria changed: bump the rubric version"):
        call_command("import_course", str(path), stdout=StringIO())

    assert AuditEvent.objects.count() == before


@pytest.mark.django_db(transaction=True)
def test_audit_record_refuses_to_run_outside_a_transaction():
    with pytest.raises(RuntimeError, match="inside the transaction"):
        audit_record(actor=None, event="staff_verdict")


def test_audit_rows_roll_back_with_the_change(db):
    course = make_course("se-101")

    class Refused(Exception):
        pass

    with pytest.raises(Refused), transaction.atomic():
        audit_record(actor=None, event=AuditEvent.Event.RUBRIC_BUMPED, target=course)
        raise Refused

    assert not AuditEvent.objects.filter(event="rubric_bumped").exists()


def test_audit_admin_is_read_only_and_scoped_to_the_staff_members_courses(db):
    mine, theirs = make_course("mine"), make_course("theirs")
    teacher = enroll(mine, "teacher", Enrollment.Role.STAFF)
    enroll(theirs, "other-teacher", Enrollment.Role.STAFF)
    client = Client()
    client.force_login(teacher)
    url = reverse("admin:tutor_auditevent_changelist")

    response = client.get(url)
    listed = {e.course_id for e in response.context["cl"].result_list}
    filtered = client.get(url + "?event=enrollment_changed").context["cl"].result_list

    assert response.status_code == 200
    assert listed == {mine.pk}
    assert {e.extra["username"] for e in filtered} == {"teacher"}
    event = AuditEvent.objects.filter(course=mine).first()
    page = client.get(reverse("admin:tutor_auditevent_change", args=[event.pk]))
    assert page.status_code == 200 and b'name="_save"' not in page.content
    other = AuditEvent.objects.filter(course=theirs).first()
    assert client.get(reverse("admin:tutor_auditevent_change", args=[other.pk])).status_code == 302


def test_admin_verdict_and_api_verdict_share_one_audited_service(task, student, staff):
    submission = make_submission(student, task)
    make_attempt(submission)
    client = Client()
    client.force_login(staff)
    attempt = submission.attempts.get()

    client.post(
        reverse("admin:feedback_reviewattempt_verdict", args=[attempt.pk]),
        {"status_A2": "FAIL", "reason_A2": "does not name undefined"},
    )

    (event,) = events("staff_verdict")
    created = ReviewAttempt.objects.get(pk=event.target_id)
    assert created.kind == "staff_verdict" and created.requested_by == staff


def test_superuser_sees_global_audit_rows(db):
    root = make_user("root", is_superuser=True, is_staff=True)
    with transaction.atomic():
        audit_record(actor=None, event=AuditEvent.Event.LESSON_IMPORTED, reason="global library")
    client = Client()
    client.force_login(root)

    response = client.get(reverse("admin:tutor_auditevent_changelist"))

    assert [e.reason for e in response.context["cl"].result_list] == ["global library"]


def test_enrolments_changed_in_admin_go_through_the_audited_service(db):
    course = make_course("se-101")
    carol = make_user("carol")
    root = make_user("root", is_superuser=True, is_staff=True)
    client = Client()
    client.force_login(root)
    add = reverse("admin:tutor_enrollment_add")

    client.post(add, {"user": carol.pk, "course": course.pk, "role": "staff"})
    enrollment = Enrollment.objects.get(user=carol, course=course)
    client.post(reverse("admin:tutor_enrollment_change", args=[enrollment.pk]), {"role": "student"})
    client.post(reverse("admin:tutor_enrollment_delete", args=[enrollment.pk]), {"post": "yes"})

    rows = [
        (e.from_state, e.to_state, e.actor)
        for e in events("enrollment_changed")
        if e.extra["username"] == "carol"
    ]
    assert rows == [("", "staff", root), ("staff", "student", root), ("student", "", root)]
    carol.refresh_from_db()
    assert not carol.is_staff  # admin access followed the staff enrolment out
    assert not Enrollment.objects.filter(user=carol).exists()
