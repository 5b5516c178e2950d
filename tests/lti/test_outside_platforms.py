"""The tool driven by platform code nobody here wrote (SPEC §12):
``lti1p3platform`` 0.1.8 and Open edX's ``lti_consumer.lti_1p3``
(tests/lti/outside.py). Launches and roles, roster paging in both ``Link``
forms with upper-case and cursor URLs, a roster read failing halfway, a
platform clock 30 s ahead, a score the platform stored but answered late,
and a token request checked for its audience (Brightspace's rule)."""

from __future__ import annotations

from io import StringIO

import jwt
import pytest
from django.core.management import CommandError, call_command
from django.test import Client

from tests.lti.outside import Lti1p3Platform, OpenEdxPlatform
from tests.lti.platform import INSTRUCTOR, LEARNER, TEACHING_ASSISTANT
from tests.lti.test_scores import PASS_REPORT, model_reply, sweep_later
from tutor.lti.models import Identity, Registration, ScorePost, ScoreStatus
from tutor.lti.selectors import published_jwks
from tutor.lti.services.registrations import registration_register
from tutor.models import AuditEvent, Enrollment

pytestmark = pytest.mark.django_db(transaction=True)

BRIGHTSPACE_AUDIENCE = "https://api.brightspace.com/auth/token"


@pytest.fixture
def lti1p3(course, task, tool_key):
    platform = Lti1p3Platform().start()
    registration_register(**platform.registration_values(course))
    platform.trust_tool(published_jwks())
    yield platform
    platform.stop()


@pytest.fixture
def openedx(course, task, tool_key, settings):
    settings.PLATFORM_NAME = "Open edX (test)"  # the consumer names the platform in every launch
    platform = OpenEdxPlatform().start()
    registration_register(**platform.registration_values(course))
    platform.trust_tool_key(tool_key.public_pem)
    yield platform
    platform.stop()


def launch(platform, client: Client, *, sub: str, staff: bool = False, **kwargs):
    if isinstance(platform, OpenEdxPlatform):
        return platform.launch(client, sub=sub, role="staff" if staff else "student", **kwargs)
    return platform.launch(client, sub=sub, roles=[INSTRUCTOR] if staff else [LEARNER], **kwargs)


@pytest.fixture(params=["lti1p3platform", "openedx"])
def outside(request):
    return request.getfixturevalue("lti1p3" if request.param == "lti1p3platform" else "openedx")


def roster_roles() -> dict[str, str]:
    return dict(
        Enrollment.objects.filter(user__lti_identities__isnull=False).values_list(
            "user__lti_identities__subject", "role"
        )
    )


def submit(client: Client, task, report: str) -> dict:
    response = client.post(
        "/api/submissions/",
        {"task": str(task.pk), "evidence": {"report": report, "ci": {"status": "passed", "exit_code": 0}}},
        content_type="application/json",
    )
    assert response.status_code == 201, response.content
    return response.json()


# --- launches ----------------------------------------------------------------------------------------


def test_a_student_launch_lands_on_the_task(outside, task):
    response = launch(outside, Client(), sub="student-1")

    assert response.status_code == 302, response.content
    assert response["Location"] == f"/?task={task.pk}"
    assert Enrollment.objects.get(user__lti_identities__subject="student-1").role == "student"


def test_a_staff_launch_lands_on_the_tasks_review_queue(outside, task):
    response = launch(outside, Client(), sub="teacher-1", staff=True)

    assert response["Location"] == f"/admin/feedback/reviewattempt/?submission__task__id__exact={task.pk}"
    staff_launch = AuditEvent.objects.get(event="lti_launched", to_state="staff")
    assert any(role.endswith("#Instructor") for role in staff_launch.extra["lms_roles"])


@pytest.mark.parametrize(
    ("role", "expected"),
    [("Community TA", "student"), ("Group Moderator", "student"), ("instructor", "staff")],
)
def test_open_edx_roles_mean_what_open_edx_means(openedx, task, role, expected):
    response = openedx.launch(Client(), sub="p1", role=role)

    assert response.status_code == 302, response.content
    assert Enrollment.objects.get(user__lti_identities__subject="p1").role == expected


def test_lti1p3platform_learner_and_teaching_assistant_is_a_student(lti1p3, task):
    lti1p3.launch(Client(), sub="p1", roles=[LEARNER, TEACHING_ASSISTANT])

    assert Enrollment.objects.get(user__lti_identities__subject="p1").role == "student"


def test_a_platform_clock_30_s_ahead_launches(outside, task):
    outside.clock_offset = 30

    response = launch(outside, Client(), sub="student-1")

    assert response.status_code == 302, response.content
    assert not AuditEvent.objects.filter(event="lti_launch_refused").exists()


def test_a_platform_clock_far_ahead_is_refused_as_a_clock_difference(outside, task):
    outside.clock_offset = 600

    response = launch(outside, Client(), sub="student-1")

    assert response.status_code == 403
    assert "s ahead of the tutor" in response.content.decode()
    assert AuditEvent.objects.get(event="lti_launch_refused").extra["claim"] == "iat"


# --- rosters ------------------------------------------------------------------------------------------


def members(n: int) -> list[dict]:
    people = [{"user_id": "teacher-1", "roles": [INSTRUCTOR], "name": "Teacher"}]
    return people + [{"user_id": f"s{i:02d}", "roles": [LEARNER], "name": f"S {i}"} for i in range(n - 1)]


def sync(course_slug: str = "se-101", *flags) -> tuple[str, str]:
    out, err = StringIO(), StringIO()
    call_command("lti_sync_roster", course_slug, *flags, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def test_a_roster_of_4_pages_in_the_unquoted_link_form_syncs_all_members(lti1p3, task):
    """lti1p3platform writes ``Link: <…>; rel=next``; its page URLs have an
    upper-case path and a case-sensitive cursor (a lower-cased URL is a 404)."""
    lti1p3.page_size = 2
    lti1p3.members = members(8)
    launch(lti1p3, Client(), sub="teacher-1", staff=True)

    out, err = sync()

    assert len(roster_roles()) == 8
    assert "8 members, 7 enrolled" in out
    assert "in 4 page(s)" in err
    assert lti1p3.paths("memberships") == ["/Ctx/Course-ABC/memberships"] * 4


def test_a_roster_of_4_pages_in_the_quoted_link_form_syncs_all_members(openedx, task):
    openedx.page_size = 2
    openedx.members = members(8)
    launch(openedx, Client(), sub="teacher-1", staff=True)

    out, err = sync()

    assert len(roster_roles()) == 8
    assert "in 4 page(s)" in err
    assert openedx.paths("Memberships") == ["/api/lti_consumer/v1/lti/7/Memberships"] * 4


def test_a_roster_read_failing_halfway_changes_nobody_and_exits_non_zero(outside, task):
    outside.page_size = 2
    outside.members = members(8)
    launch(outside, Client(), sub="teacher-1", staff=True)
    sync()
    before = roster_roles()
    outside.members = members(8)[:1] + [{"user_id": f"n{i}", "roles": [LEARNER]} for i in range(7)]
    outside.failing_pages = {3}

    with pytest.raises(CommandError, match="answered 500 on page 3; nothing was changed"):
        sync()

    assert roster_roles() == before
    assert AuditEvent.objects.get(event="lti_roster_refused").to_state == "http_500"


# --- scores ---------------------------------------------------------------------------------------


def test_a_score_stored_but_answered_late_ends_posted_with_one_score_in_the_platform(
    outside, task, fake_llm, settings
):
    settings.LTI_HTTP_TIMEOUT = 2  # the late answer must miss it, the retry must not (a busy CI machine)
    client = Client()
    launch(outside, client, sub="student-1")
    fake_llm.reply(model_reply("PASS"))
    outside.script_score_delays(4)

    submit(client, task, PASS_REPORT)
    assert ScorePost.objects.get().status == ScoreStatus.QUEUED  # the tool gave up waiting
    sweep_later(3600)

    row = ScorePost.objects.get()
    assert (row.status, row.confirmed_by_refusal) == (ScoreStatus.POSTED, True)
    assert row.last_http_status == (409 if isinstance(outside, Lti1p3Platform) else 400)
    [score] = outside.accepted()
    assert (score["userId"], score["scoreGiven"], score["scoreMaximum"]) == ("student-1", 3, 3)


def test_scores_reach_the_platform_with_one_token(outside, task, fake_llm):
    client = Client()
    launch(outside, client, sub="student-1")
    fake_llm.reply(model_reply("PASS"), model_reply("PASS"))

    submit(client, task, PASS_REPORT)
    submit(client, task, PASS_REPORT + " twice")

    assert [s["scoreGiven"] for s in outside.accepted()] == [3, 3]
    assert len(outside.token_requests()) == 1


# --- Brightspace's audience ---------------------------------------------------------------------------------


def test_a_token_request_carries_the_audience_the_platform_names(lti1p3, task, course, fake_llm):
    lti1p3.token_audience = BRIGHTSPACE_AUDIENCE  # the platform checks aud against its own audience
    client = Client()
    launch(lti1p3, client, sub="student-1")
    fake_llm.reply(model_reply("PASS"), model_reply("PASS"))

    submit(client, task, PASS_REPORT)  # aud = the token URL: refused
    row = ScorePost.objects.get()
    assert (row.status, row.last_http_status) == (ScoreStatus.FAILED, 401)
    assert "Invalid audience" in row.last_answer

    values = lti1p3.registration_values(course)
    call_command(
        "lti_register",
        f"--issuer={values['issuer']}",
        f"--client-id={values['client_id']}",
        f"--deployment-id={lti1p3.deployment_id}",
        f"--auth-url={values['auth_url']}",
        f"--token-url={values['token_url']}",
        f"--jwks-url={values['jwks_url']}",
        f"--course={course.slug}",
        f"--auth-audience={BRIGHTSPACE_AUDIENCE}",
        stdout=StringIO(),
        stderr=StringIO(),
    )
    assert Registration.objects.get(issuer=lti1p3.issuer).auth_audience == BRIGHTSPACE_AUDIENCE
    submit(client, task, PASS_REPORT + " again")

    assert len(lti1p3.accepted()) == 1
    first, second = lti1p3.token_requests()
    audiences = [
        jwt.decode(r.form()["client_assertion"], options={"verify_signature": False})["aud"]
        for r in (first, second)
    ]
    assert audiences == [lti1p3.token_url, BRIGHTSPACE_AUDIENCE]
    assert Identity.objects.filter(subject="student-1").exists()
