"""The rules of erasure one by one (SPEC §13), on small rows: every model has
a rule, the immutability trigger lets exactly the erasure's scrub through,
a dry run writes nothing, the command's input is checked."""

from __future__ import annotations

import io

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import IntegrityError, transaction

from corrections.models import Fact, FactStatus, FactSupporter
from feedback.models import AttemptScrubPermit, ReviewAttempt
from feedback.rights import scrubbed_result
from tests.factories import criterion_entry, enroll, make_attempt, make_submission, review_result
from tutor.models import AuditEvent, Enrollment
from tutor.rights.erasure import student_erase
from tutor.rights.registry import rules
from tutor.rights.residue import project_models

pytestmark = pytest.mark.django_db


def test_every_model_of_the_project_has_an_erasure_rule():
    """A model added to tutor, tutor.lti, feedback, corrections or lessons
    needs a rule in its app's ``rights.py`` (what an erasure does to its rows)."""
    missing = [m._meta.label for m in project_models() if m._meta.label not in rules()]
    assert missing == [], f"no erasure rule registered for {missing}: add one to the app's rights.py"


def _failed_attempt(student, task):
    result = review_result(
        [
            criterion_entry("A1", "PASS", basis="self_report", reason="CI passed", evidence="exit 0"),
            criterion_entry("A2", "FAIL", reason="missing: undefined", evidence="first() returns a[0]"),
        ],
        next_step="Mention undefined.",
    )
    return make_attempt(make_submission(student, task), result=result)


def _update(attempt, **changes) -> None:
    with transaction.atomic():
        ReviewAttempt.objects.filter(pk=attempt.pk).update(**changes)


def test_a_terminal_attempt_refuses_a_scrub_without_a_permit(task, student):
    attempt = _failed_attempt(student, task)
    with pytest.raises(IntegrityError):
        _update(attempt, result=scrubbed_result(attempt.result))


@pytest.mark.parametrize(
    "change",
    [
        lambda r: {**r, "overall": "PASS"},
        lambda r: {**r, "criteria": [{**c, "status": "PASS"} for c in r["criteria"]]},
        lambda r: {**r, "criteria": [{**c, "basis": "staff"} for c in r["criteria"]]},
        lambda r: {**r, "criteria": r["criteria"][:1]},
    ],
    ids=["overall", "a status", "a basis", "a criterion dropped"],
)
def test_a_permit_never_lets_a_verdict_change(task, student, change):
    attempt = _failed_attempt(student, task)
    AttemptScrubPermit.objects.create(attempt_id=attempt.pk)
    with pytest.raises(IntegrityError):
        _update(attempt, result=change(scrubbed_result(attempt.result)))


def test_a_permit_never_lets_another_column_change(task, student):
    attempt = _failed_attempt(student, task)
    AttemptScrubPermit.objects.create(attempt_id=attempt.pk)
    with pytest.raises(IntegrityError):
        _update(attempt, result=scrubbed_result(attempt.result), status="invalid")


def test_a_permit_is_for_its_own_attempt_only(task, student):
    attempt, other = _failed_attempt(student, task), _failed_attempt(student, task)
    AttemptScrubPermit.objects.create(attempt_id=other.pk)
    with pytest.raises(IntegrityError):
        _update(attempt, result=scrubbed_result(attempt.result))


def test_a_permit_lets_the_scrub_through(task, student):
    attempt = _failed_attempt(student, task)
    AttemptScrubPermit.objects.create(attempt_id=attempt.pk)
    _update(attempt, result=scrubbed_result(attempt.result), error_detail="")
    attempt.refresh_from_db()
    assert attempt.result["overall"] == "FAIL"
    assert [
        (c["rubric_id"], c["status"], c["reason"], c["evidence"]) for c in attempt.result["criteria"]
    ] == [
        ("A1", "PASS", "", ""),
        ("A2", "FAIL", "", ""),
    ]
    assert attempt.result["next_step"] == ""


def test_a_dry_run_counts_and_writes_nothing(task, student):
    attempt = _failed_attempt(student, task)
    events = AuditEvent.objects.count()

    report = student_erase(user=student, dry_run=True)

    assert report.dry_run and report.residue == []
    assert report.counts["feedback.Submission"] == {"deleted": 0, "pseudonymised": 1}
    assert report.counts["auth.User"] == {"deleted": 1, "pseudonymised": 0}
    attempt.refresh_from_db()
    assert attempt.result["criteria"][1]["reason"] == "missing: undefined"
    assert Enrollment.objects.filter(user=student).exists()
    assert AuditEvent.objects.count() == events
    assert not type(student).objects.filter(username=report.pseudonym).exists()


def test_an_erasure_failing_after_every_part_changes_nothing(task, student, monkeypatch):
    """One transaction (issue 38): every part erased before the failure is rolled back."""
    import tutor.rights.erasure
    from tutor.rights.registry import parts

    attempt = _failed_attempt(student, task)
    events, users = AuditEvent.objects.count(), type(student).objects.count()

    class Failing:
        def erase(self, subject, ledger, *, dry_run):
            raise RuntimeError("the database went away")

    monkeypatch.setattr(tutor.rights.erasure, "parts", lambda: [*parts(), Failing()])
    with pytest.raises(RuntimeError):
        student_erase(user=student)

    attempt.refresh_from_db()
    assert attempt.result["criteria"][1]["reason"] == "missing: undefined"
    assert attempt.submission.student_id == student.pk
    assert Enrollment.objects.filter(user=student).exists()
    assert (AuditEvent.objects.count(), type(student).objects.count()) == (events, users)


def test_a_fact_others_support_stays_without_the_persons_supporter_row(course, student, other_student):
    from django.utils import timezone

    now = timezone.now()
    fact = Fact.objects.create(
        course=course, statement="the beam is 630 mm", statement_key="630mm", status=FactStatus.PROPOSED,
        valid_from=now, confirmed_at=now, supporter_count=2, proposed_by=student,
    )  # fmt: skip
    FactSupporter.objects.create(fact=fact, user=student)
    FactSupporter.objects.create(fact=fact, user=other_student)
    alone = Fact.objects.create(
        course=course, statement="the bolt is 8 mm", statement_key="8mm", topic_key="bolt",
        status=FactStatus.PROPOSED, valid_from=now, confirmed_at=now, supporter_count=1, proposed_by=student,
    )  # fmt: skip
    FactSupporter.objects.create(fact=alone, user=student)

    student_erase(user=student)

    fact.refresh_from_db()
    assert (fact.supporter_count, fact.proposed_by_id) == (1, None)
    assert list(fact.supporters.values_list("user__username", flat=True)) == ["bob"]
    assert not Fact.objects.filter(pk=alone.pk).exists()


def test_the_command_prints_the_plan_and_refuses_bad_input(course, student):
    out = io.StringIO()
    call_command("erase_student", "alice", "--course", "se-101", "--dry-run", stdout=out)
    assert "would erase alice (course se-101) as erased-" in out.getvalue()
    assert "tutor.Enrollment" in out.getvalue() and "1 deleted" in out.getvalue()
    with pytest.raises(CommandError, match="no such user"):
        call_command("erase_student", "nobody")
    with pytest.raises(CommandError, match="no such course"):
        call_command("erase_student", "alice", "--course", "nope")
    staff = enroll(course, "root-like", Enrollment.Role.STAFF)
    staff.is_superuser = True
    staff.save()
    with pytest.raises(CommandError, match="superuser"):
        call_command("erase_student", "root-like")


def test_the_command_erases_and_reports_the_residue_check(course, student):
    out = io.StringIO()
    call_command("erase_student", "alice", stdout=out)
    assert "erased alice (every course and the account)" in out.getvalue()
    assert "residue check: 0 hits" in out.getvalue()
    assert not type(student).objects.filter(username="alice").exists()


def test_a_text_of_several_lines_is_forgotten_in_the_courses_model_calls(course, other_student):
    """What JSON escapes in the stored request (a line break, a quote) is
    found there too: the lookup compared the raw text with the stored JSON."""
    from tutor.models import ModelCall
    from tutor.rights.own import texts_forget

    quoted = 'line one of "their" work\nline two of their work'
    call = ModelCall.objects.create(
        purpose="tutor",
        course=course,
        student=other_student,
        correlation_id="c1",
        model="m",
        request_messages=[{"role": "system", "content": f"Lesson:\n{quoted}\nend"}],
        status="ok",
        latency_ms=1,
    )

    assert texts_forget(texts=[quoted], course_ids=[course.pk], dry_run=False) == 1

    call.refresh_from_db()
    assert call.request_messages[0]["content"] == "Lesson:\n(erased)\nend"


def test_a_name_beyond_ascii_in_an_audit_events_data_is_replaced(course):
    """Django's JSON column escapes "é" as "\\u00e9" on SQLite: a lookup
    for the raw name missed it there and the event kept the person."""
    from tutor.audit import audit_record
    from tutor.models import AuditEvent

    person = enroll(course, "josé")
    person.first_name, person.last_name = "José", "Müller"
    person.save()
    with transaction.atomic():
        audit_record(
            actor=None, event=AuditEvent.Event.ENROLLMENT_CHANGED, extra={"note": "José Müller asked"}
        )

    report = student_erase(user=person)

    assert [hit.line() for hit in report.residue] == []
    assert all("Müller" not in str(extra) for extra in AuditEvent.objects.values_list("extra", flat=True))


def test_erasing_a_staff_members_only_staff_course_ends_their_admin_access(course, staff):
    """As removing the enrolment does: no staff enrolment left, no ``is_staff``
    and no course-staff group (the admin's view permissions)."""
    from django.test import Client

    assert staff.is_staff
    call_command("erase_student", "teacher", "--course", "se-101", stdout=io.StringIO())

    staff.refresh_from_db()
    assert (staff.is_staff, staff.groups.exists()) == (False, False)
    client = Client()
    client.force_login(staff)
    assert client.get("/admin/").status_code == 302  # to the admin's sign-in
