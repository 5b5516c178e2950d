"""Launch edges a course team meets (SPEC §12): an LMS clock that is off by
seconds (``LTI_CLOCK_LEEWAY``), and roles read as the LMS means them (the
role map; Open edX's forum moderators stay students; staff launches audited)."""

from __future__ import annotations

import re
import time

import pytest
from django.core.management import call_command

from tests.lti.platform import CONTENT_DEVELOPER, INSTRUCTOR, LEARNER, MENTOR, TEACHING_ASSISTANT
from tests.lti.test_launch import assert_refused, counts
from tests.tutor.test_settings import start
from tutor.lti.models import Identity
from tutor.lti.rolemap import RoleMapError, parse_role_map
from tutor.models import AuditEvent, Enrollment

pytestmark = pytest.mark.django_db


def skewed_launch(browser, platform, seconds: int, **claims):
    """A launch whose token the platform minted with its clock ``seconds`` ahead."""
    login = browser.login()
    now = int(time.time()) + seconds  # whole seconds, as platforms write iat
    body = platform.claims(nonce=login.nonce, **claims)
    body.update(iat=now, exp=now + 300)
    return browser.post_launch(platform.sign(body), login.state)


@pytest.mark.parametrize("seconds", [2, 30, 59, -45])
def test_a_platform_clock_off_by_less_than_the_leeway_launches(
    registration, browser, platform, task, seconds
):
    response = skewed_launch(browser, platform, seconds)

    assert response.status_code == 302, response.content
    assert response["Location"] == f"/?task={task.pk}"


def test_a_platform_clock_far_ahead_is_refused_saying_by_how_much(registration, browser, platform, task):
    before = counts()

    response = skewed_launch(browser, platform, 130)

    # iat floored, then rounded up: 130 s, or a second or two less when a loaded
    # machine takes that long between minting the token and checking it.
    assert_refused(response, 403, " s ahead of the tutor")
    said = re.search(r"clock is (\d+) s ahead of the tutor", response.content.decode())
    assert said and 127 <= int(said[1]) <= 130, response.content.decode()
    assert "60 s allowed" in response.content.decode()
    assert "synchronise their clocks" in response.content.decode()
    refusal = AuditEvent.objects.get(event="lti_launch_refused")
    assert refusal.to_state == "clock_skew"
    assert refusal.course_id == task.course_id
    assert refusal.actor_label == registration.issuer
    assert refusal.extra == {"claim": "iat", "skew_seconds": int(said[1]), "leeway": 60}
    assert counts() == {**before, "audit": before["audit"] + 1}  # nothing else was written


def test_the_leeway_is_a_setting(registration, browser, platform, task, settings):
    settings.LTI_CLOCK_LEEWAY = 0

    response = skewed_launch(browser, platform, 3)
    # "3 s ahead", or "2 s" when a loaded machine takes more than a second to check it.
    assert_refused(response, 403, " s ahead")
    assert re.search(r"clock is [23] s ahead", response.content.decode())

    settings.LTI_CLOCK_LEEWAY = 120
    assert skewed_launch(browser, platform, 100).status_code == 302


def test_a_not_before_in_the_future_is_a_clock_difference_too(registration, browser, platform, task):
    response = browser.launch(nbf=int(time.time()) + 400)

    assert_refused(response, 403, "s ahead")
    assert AuditEvent.objects.get(event="lti_launch_refused").extra["claim"] == "nbf"


def test_a_token_signed_by_another_key_is_no_clock_question(registration, browser, platform):
    from tests.lti.platform import rsa_key

    login = browser.login()
    now = int(time.time()) + 500
    body = platform.claims(nonce=login.nonce)
    body.update(iat=now, exp=now + 300)

    response = browser.post_launch(platform.sign(body, key=rsa_key()), login.state)

    assert_refused(response, 403, "could not be verified")
    assert not AuditEvent.objects.filter(event="lti_launch_refused").exists()


# --- roles ------------------------------------------------------------------------------------


def role_of(sub: str) -> str:
    return Enrollment.objects.get(user__lti_identities__subject=sub).role


def test_open_edx_forum_moderators_are_students(registration, browser, task):
    # Open edX sends a forum Community TA or Group Moderator as Learner + TeachingAssistant.
    response = browser.launch(sub="community-ta", roles=[LEARNER, TEACHING_ASSISTANT])

    assert response["Location"] == f"/?task={task.pk}"
    assert role_of("community-ta") == "student"
    assert not Identity.objects.get(subject="community-ta").user.is_staff


@pytest.mark.parametrize(
    ("roles", "expected"),
    [
        ([INSTRUCTOR], "staff"),
        ([TEACHING_ASSISTANT], "staff"),
        ([CONTENT_DEVELOPER], "staff"),
        ([LEARNER, INSTRUCTOR], "staff"),
        ([LEARNER], "student"),
        ([LEARNER, TEACHING_ASSISTANT], "student"),
    ],
)
def test_the_default_role_map(registration, browser, task, roles, expected):
    browser.launch(sub="p1", roles=roles)

    assert role_of("p1") == expected


def test_a_registration_role_map_overrides_the_setting(registration, browser, task):
    registration.role_map = "TeachingAssistant=staff;Mentor=student;Learner=student"
    registration.save(update_fields=["role_map"])

    browser.launch(sub="ta", roles=[LEARNER, TEACHING_ASSISTANT])
    from tests.lti.conftest import Browser

    Browser(browser.platform).launch(sub="mentor", roles=[MENTOR])

    assert role_of("ta") == "staff"
    assert role_of("mentor") == "student"
    launch = AuditEvent.objects.get(event="lti_launched", to_state="staff")
    assert (launch.extra["role_rule"], launch.extra["role_map"]) == ("TeachingAssistant", "registration")


def test_the_setting_maps_roles_for_every_registration_without_its_own(registration, browser, task, settings):
    settings.LTI_ROLE_MAP = "Learner+TeachingAssistant=none;Learner=student"

    response = browser.launch(sub="p1", roles=[LEARNER, TEACHING_ASSISTANT])

    assert response.status_code == 403
    assert not Enrollment.objects.filter(user__lti_identities__subject="p1").exists()


def test_a_launch_granting_staff_is_audited_with_its_roles_claim(registration, browser, task):
    claim = [INSTRUCTOR, "http://purl.imsglobal.org/vocab/lis/v2/institution/person#Faculty"]

    browser.launch(sub="teacher-1", roles=claim)

    launch = AuditEvent.objects.get(event="lti_launched")
    assert launch.to_state == "staff"
    assert launch.extra["lms_roles"] == claim
    assert launch.extra["role_rule"] == "Instructor"
    assert launch.extra["role_map"] == "setting"


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("Learner", "write Role=staff"),
        ("Learner=teacher", "write Role=staff"),
        ("Learner=student;Bad Name=staff", "is not a role name"),
        ("", "at least one rule"),
        (";;", "at least one rule"),
    ],
)
def test_a_bad_role_map_is_refused_naming_the_part(text, problem):
    with pytest.raises(RoleMapError, match=problem):
        parse_role_map(text)


def test_a_bad_role_map_setting_stops_start_up():
    result = start(LTI_ROLE_MAP="Instructor=boss")

    assert result.returncode != 0
    assert "ImproperlyConfigured: LTI_ROLE_MAP" in result.stderr


@pytest.mark.parametrize(
    ("variable", "value"),
    [("LTI_PENDING_SCORES", "later"), ("LTI_ROSTER_MAX_REMOVAL_SHARE", "1.5"), ("LTI_CLOCK_LEEWAY", "-1")],
)
def test_bad_lti_settings_stop_start_up(variable, value):
    result = start(**{variable: value})

    assert result.returncode != 0
    assert "ImproperlyConfigured" in result.stderr and variable in result.stderr


def test_lti_register_sets_a_role_map_and_refuses_a_bad_one(platform, course, tool_key):
    from django.core.management import CommandError

    from tests.lti.platform import CLIENT_ID, DEPLOYMENT_ID, ISSUER

    args = [
        "lti_register",
        f"--issuer={ISSUER}",
        f"--client-id={CLIENT_ID}",
        f"--deployment-id={DEPLOYMENT_ID}",
        f"--auth-url={platform.auth_url}",
        f"--token-url={platform.token_url}",
        f"--jwks-url={platform.jwks_url}",
        f"--course={course.slug}",
    ]
    with pytest.raises(CommandError, match="is not a role name"):
        call_command(*args, "--role-map=Bad Role=staff")
    call_command(*args, "--role-map=TeachingAssistant=staff;Learner=student")

    from tutor.lti.models import Registration

    assert Registration.objects.get().role_map == "TeachingAssistant=staff;Learner=student"


def test_a_role_map_written_around_the_checks_refuses_the_launch_instead_of_guessing(
    registration, browser, task
):
    from tutor.lti.models import Registration

    Registration.objects.filter(pk=registration.pk).update(role_map="Learner=maybe")

    response = browser.launch(sub="p1")

    assert_refused(response, 403, "role map is not valid")
    assert not Enrollment.objects.filter(user__lti_identities__subject="p1").exists()
