"""Roster from the platform (NRPS; SPEC §12): ``lti_sync_roster COURSE``."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from feedback.models import Submission
from tests.factories import enroll, make_submission
from tests.lti.platform import INSTRUCTOR, ISSUER, LEARNER, MENTOR, TEACHING_ASSISTANT
from tutor.lti.models import Identity
from tutor.models import AuditEvent, Enrollment

pytestmark = pytest.mark.django_db


def member(user_id: str, *roles: str, status: str | None = None, **fields) -> dict:
    entry = {"user_id": user_id, "roles": list(roles) or [LEARNER], "name": f"Person {user_id}", **fields}
    if status is not None:
        entry["status"] = status
    return entry


def sync(course="se-101") -> tuple[str, str]:
    out, err = StringIO(), StringIO()
    call_command("lti_sync_roster", course, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def roles() -> dict[str, str]:
    return dict(
        Enrollment.objects.filter(user__lti_identities__issuer=ISSUER).values_list(
            "user__lti_identities__subject", "role"
        )
    )


def test_sync_enrols_members_with_their_roles(launched, course):
    launched.members = [
        member("teacher-1", INSTRUCTOR),
        member("s1", email="s1@example.test", given_name="Sam", family_name="One"),
        member("s2"),
        member("ta-1", TEACHING_ASSISTANT),
        member("forum-ta", TEACHING_ASSISTANT, LEARNER),  # Open edX's Community TA: a student
        member("observer", MENTOR),
    ]

    out, err = sync()

    assert roles() == {
        "teacher-1": "staff",
        "s1": "student",
        "s2": "student",
        "ta-1": "staff",
        "forum-ta": "student",
    }
    assert out == (
        "roster of se-101: 5 members, 4 enrolled, 0 changed role, 1 unchanged, 0 removed, 1 skipped\n"
    )
    assert "roster [" in err and "5/5" in err  # progress on stderr
    assert "skipped (no learner or staff role): observer" in err
    s1 = Identity.objects.get(subject="s1").user
    assert (s1.first_name, s1.last_name, s1.email) == ("Sam", "One", "s1@example.test")
    assert AuditEvent.objects.get(event="lti_roster_synced").extra["enrolled"] == 4
    # The roster was read with a token of the NRPS scope.
    token = next(r for r in launched.requests if r.path == "/token")
    assert (
        token.form()["scope"] == "https://purl.imsglobal.org/spec/lti-nrps/scope/contextmembership.readonly"
    )


def test_sync_again_changes_nothing(launched, course):
    launched.members = [member("teacher-1", INSTRUCTOR), member("s1"), member("s2")]
    sync()
    audited = AuditEvent.objects.filter(event="enrollment_changed").count()

    out, _ = sync()

    assert out.startswith("roster of se-101: 3 members, 0 enrolled, 0 changed role, 3 unchanged, 0 removed")
    assert AuditEvent.objects.filter(event="enrollment_changed").count() == audited


def test_sync_reads_every_page(launched, course):
    launched.page_size = 2
    launched.members = [member("teacher-1", INSTRUCTOR)] + [member(f"s{i}") for i in range(5)]

    sync()

    assert len(roles()) == 6
    assert len([r for r in launched.requests if r.path == "/memberships"]) == 3


def test_removed_members_lose_the_enrolment_but_keep_their_history(launched, course, task, settings):
    settings.LTI_ROSTER_MAX_REMOVAL_SHARE = 0.5  # 2 of 5 leave at once
    launched.members = [member("teacher-1", INSTRUCTOR), member("s1"), member("s2"), member("s3")]
    sync()
    s2 = Identity.objects.get(subject="s2").user
    make_submission(s2, task)
    by_hand = enroll(course, "enrolled-by-hand")  # not a member of the LMS: left alone

    launched.members = [member("teacher-1", INSTRUCTOR), member("s1"), member("s3", status="Inactive")]
    out, _ = sync()

    assert "2 removed" in out
    assert roles() == {"teacher-1": "staff", "s1": "student"}
    assert Submission.objects.filter(student=s2).count() == 1
    assert Identity.objects.filter(subject="s2").exists()
    assert Enrollment.objects.filter(user=by_hand, course=course).exists()
    removal = AuditEvent.objects.get(event="enrollment_changed", extra__username=s2.username, to_state="")
    assert removal.reason == "no longer in the LMS roster"


def test_role_changes_follow_the_roster(launched, course):
    launched.members = [member("teacher-1", INSTRUCTOR), member("s1")]
    sync()
    launched.members = [member("teacher-1", INSTRUCTOR), member("s1", TEACHING_ASSISTANT)]

    out, _ = sync()

    assert "1 changed role" in out
    assert roles()["s1"] == "staff"
    assert Identity.objects.get(subject="s1").user.is_staff


def test_a_failing_roster_service_changes_nothing(launched, course, monkeypatch):
    launched.members = [member("teacher-1", INSTRUCTOR), member("s1")]
    sync()
    launched.members = [member("teacher-1", INSTRUCTOR)]
    before = AuditEvent.objects.count()
    launched.script_memberships(503)

    with pytest.raises(CommandError, match="roster service answered 503 on page 1; nothing was changed"):
        sync()

    assert roles() == {"teacher-1": "staff", "s1": "student"}
    refusal = AuditEvent.objects.get(event="lti_roster_refused")
    assert (refusal.to_state, refusal.course_id) == ("http_503", course.pk)
    assert AuditEvent.objects.count() == before + 1  # the refusal alone


def test_a_course_never_launched_has_no_roster_url(registration, course):
    with pytest.raises(CommandError, match="no roster URL is known for course se-101"):
        sync()


def test_unknown_course_is_refused(db):
    with pytest.raises(CommandError, match="unknown course 'nope'"):
        sync("nope")


def test_members_without_a_usable_user_id_are_ignored(launched, course):
    launched.members = [
        member("teacher-1", INSTRUCTOR),
        {"roles": [LEARNER]},
        {"user_id": 5, "roles": [LEARNER]},
    ]

    out, _ = sync()

    assert roles() == {"teacher-1": "staff"}
    assert out.startswith("roster of se-101: 1 members")


def test_a_registration_with_a_bound_context_reads_only_its_roster(launched, registration, course):
    """A context launched before the binding (another LMS course of the same
    account-wide deployment) is not read: its members would enrol here."""
    from tutor.lti.models import Context

    Context.objects.create(
        registration=registration, context_id="other-ctx-9", memberships_url=launched.memberships_url
    )
    launched.members = [member("teacher-1", INSTRUCTOR), member("s1")]
    sync()
    assert sum(r.path == "/memberships" for r in launched.requests) == 2  # both contexts read, unbound

    Context.objects.filter(context_id="course-ctx-1").update(bound=True)
    sync()

    assert sum(r.path == "/memberships" for r in launched.requests) == 3  # the bound one alone
