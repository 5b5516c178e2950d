"""LTI 1.3 launches against a simulated platform (SPEC §12): login
initiation, id_token validation by pylti1p3, identity and enrolment."""

from __future__ import annotations

import re
import time
from urllib.parse import parse_qs, urlsplit

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from tests.lti.conftest import LAUNCH_URL, Browser
from tests.lti.platform import (
    CLAIM,
    CLIENT_ID,
    CONTENT_DEVELOPER,
    INSTITUTION_STUDENT,
    INSTRUCTOR,
    ISSUER,
    LEARNER,
    MENTOR,
    TEACHING_ASSISTANT,
    rsa_key,
)
from tutor.lti.models import Context, Identity, LinkMember, LoginNonce, ResourceLink
from tutor.models import AuditEvent, Enrollment

User = get_user_model()


def counts() -> dict[str, int]:
    """Rows a launch may create: a refused launch must leave all of them as they were."""
    return {
        "users": User.objects.count(),
        "identities": Identity.objects.count(),
        "enrollments": Enrollment.objects.count(),
        "contexts": Context.objects.count(),
        "links": ResourceLink.objects.count(),
        "members": LinkMember.objects.count(),
        "audit": AuditEvent.objects.count(),
    }


def session_user(client: Client):
    from django.contrib.auth import SESSION_KEY

    user_id = client.session.get(SESSION_KEY)
    return User.objects.get(pk=user_id) if user_id else None


# --- the whole launch -------------------------------------------------------------------


def test_full_launch_creates_enrols_signs_in_and_lands_on_the_task(registration, browser, task, platform):
    login = browser.login()
    # The login initiation sends the browser to the platform's auth URL (OIDC).
    assert login.query["client_id"] == CLIENT_ID
    assert login.query["redirect_uri"] == LAUNCH_URL
    assert login.query["response_type"] == "id_token"
    assert login.query["response_mode"] == "form_post"
    assert login.query["scope"] == "openid"
    assert login.query["prompt"] == "none"
    assert login.query["login_hint"] == "hint-1"
    # The state is bound to this browser by a cookie.
    assert browser.client.cookies[f"lti1p3-{login.state}"].value == login.state

    response = browser.post_launch(platform.id_token(nonce=login.nonce, sub="student-1"), login.state)

    assert response.status_code == 302
    assert response["Location"] == f"/?task={task.pk}"
    identity = Identity.objects.get(issuer=ISSUER, subject="student-1")
    user = identity.user
    assert session_user(browser.client) == user
    assert (user.first_name, user.last_name, user.email) == ("Ada", "Lovelace", "ada@example.test")
    assert not user.has_usable_password()
    assert Enrollment.objects.get(user=user, course=task.course).role == Enrollment.Role.STUDENT
    link = ResourceLink.objects.get(registration=registration, resource_link_id="link-1")
    assert link.task == task
    assert link.lineitem_url == platform.lineitem_url("item-1")
    assert Context.objects.get(registration=registration).memberships_url == platform.memberships_url
    member = LinkMember.objects.get(link=link, identity=identity)
    assert (member.role, member.launch_count) == ("student", 1)
    launched = AuditEvent.objects.get(event="lti_launched")
    assert launched.actor == user and launched.course_id == task.course_id
    assert launched.extra["task"] == "t1" and launched.extra["deployment_id"] == "deployment-1"
    enrolled = AuditEvent.objects.get(event="enrollment_changed", extra__username=user.username)
    assert (enrolled.from_state, enrolled.to_state) == ("", "student")
    # The platform's key set was fetched to check the signature.
    assert [r.path for r in platform.requests] == ["/jwks"]


def test_signed_in_session_reaches_the_api(registration, browser, task, platform):
    assert browser.launch().status_code == 302

    response = browser.client.get("/api/tasks/")

    assert response.status_code == 200
    assert [t["id"] for t in response.json()["results"]] == [str(task.pk)]


def test_second_launch_reuses_the_user(registration, browser, platform):
    browser.launch(sub="student-1")
    first = Identity.objects.get(subject="student-1").user
    other_browser = Browser(platform)

    response = other_browser.launch(sub="student-1", given_name="Ada M.")

    assert response.status_code == 302
    assert User.objects.filter(lti_identities__subject="student-1").count() == 1
    assert session_user(other_browser.client) == first
    first.refresh_from_db()
    assert first.first_name == "Ada M."
    assert LinkMember.objects.get(identity__subject="student-1").launch_count == 2
    assert Enrollment.objects.filter(user=first).count() == 1
    # Enrolment unchanged: audited once.
    assert AuditEvent.objects.filter(event="enrollment_changed", extra__username=first.username).count() == 1


def test_the_same_email_from_another_sub_is_another_person(registration, browser, platform):
    browser.launch(sub="student-1", email="same@example.test")
    Browser(platform).launch(sub="student-2", email="same@example.test")

    users = User.objects.filter(email="same@example.test")
    assert users.count() == 2
    assert {u.lti_identities.get().subject for u in users} == {"student-1", "student-2"}


@pytest.mark.parametrize("role", [INSTRUCTOR, TEACHING_ASSISTANT, CONTENT_DEVELOPER, "Instructor"])
def test_staff_launch_makes_course_staff_and_opens_the_tasks_review_queue(registration, browser, task, role):
    response = browser.launch(sub="teacher-1", roles=[role])

    assert response.status_code == 302
    assert response["Location"] == f"/admin/feedback/reviewattempt/?submission__task__id__exact={task.pk}"
    user = Identity.objects.get(subject="teacher-1").user
    assert Enrollment.objects.get(user=user, course=task.course).role == Enrollment.Role.STAFF
    user.refresh_from_db()
    assert user.is_staff and not user.is_superuser
    assert browser.client.get("/admin/").status_code == 200


def test_instructor_who_is_also_learner_is_staff(registration, browser, task):
    browser.launch(sub="teacher-1", roles=[LEARNER, INSTRUCTOR])

    assert Enrollment.objects.get(user__lti_identities__subject="teacher-1").role == Enrollment.Role.STAFF


def test_staff_launch_needs_no_task(registration, browser):
    response = browser.launch(sub="teacher-1", roles=[INSTRUCTOR], task=None)

    assert response.status_code == 302 and response["Location"] == "/admin/"
    assert not ResourceLink.objects.exists()


def test_a_learner_launched_again_as_instructor_becomes_staff(registration, browser, platform, task):
    browser.launch(sub="person-1", roles=[LEARNER])
    Browser(platform).launch(sub="person-1", roles=[INSTRUCTOR])

    enrollment = Enrollment.objects.get(user__lti_identities__subject="person-1")
    assert enrollment.role == Enrollment.Role.STAFF
    changes = AuditEvent.objects.filter(event="enrollment_changed").order_by("id")
    assert [(e.from_state, e.to_state) for e in changes] == [("", "student"), ("student", "staff")]


def test_login_by_post_works_like_get(registration, browser, platform, task):
    login = browser.login(method="post")

    response = browser.post_launch(platform.id_token(nonce=login.nonce), login.state)

    assert response.status_code == 302 and response["Location"] == f"/?task={task.pk}"


def test_launch_url_answers_without_trailing_slash(registration, browser, platform, task):
    login = browser.login()
    token = platform.id_token(nonce=login.nonce)

    response = browser.client.post("/lti/launch", {"id_token": token, "state": login.state})

    assert response.status_code == 302 and response["Location"] == f"/?task={task.pk}"


def test_login_first_shows_the_cookie_check_page(registration, browser):
    response = browser.client.get(
        "/lti/login/",
        {"iss": ISSUER, "login_hint": "hint-1", "client_id": CLIENT_ID, "target_link_uri": LAUNCH_URL},
    )

    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/html")
    body = response.content.decode()
    # The page continues the login with the same parameters plus the marker.
    assert "lti1p3_new_window" in body and "login_hint" in body
    assert "Open the tutor in a new window." in body
    assert not LoginNonce.objects.exists()


def test_login_for_a_tool_url_setting_uses_it_as_redirect_uri(registration, browser, settings):
    settings.LTI_TOOL_URL = "https://tutor.example.edu/"

    login = browser.login()

    assert login.query["redirect_uri"] == "https://tutor.example.edu/lti/launch/"


# --- refused launches: a 4xx page, nothing created ---------------------------------------


def assert_refused(response, status: int, text: str) -> None:
    assert response.status_code == status, response.content
    assert response["Content-Type"].startswith("text/html")
    body = response.content.decode()
    assert "The tutor could not open from the LMS" in body
    assert text in body, body


def test_token_signed_by_another_key_is_refused(registration, browser, platform):
    login = browser.login()
    before = counts()
    forged = platform.sign(platform.claims(nonce=login.nonce), key=rsa_key(), kid=platform.kid)

    response = browser.post_launch(forged, login.state)

    assert_refused(response, 403, "Signature verification failed")
    assert counts() == before
    assert session_user(browser.client) is None


def test_token_with_an_unknown_kid_is_refused(registration, browser, platform):
    login = browser.login()
    before = counts()

    response = browser.post_launch(
        platform.sign(platform.claims(nonce=login.nonce), kid="other-kid"), login.state
    )

    assert_refused(response, 403, "the key that signed it is not one of the LMS")
    assert counts() == before


def test_expired_token_is_refused_as_a_clock_difference(registration, browser, platform):
    login = browser.login()
    before = counts()
    body = platform.claims(nonce=login.nonce)
    body.update(iat=int(time.time()) - 600, exp=int(time.time()) - 300)

    response = browser.post_launch(platform.sign(body), login.state)

    assert_refused(response, 403, "had expired when it arrived")
    assert re.search(r"about 60\d s behind", response.content.decode())
    # Nothing but the refusal's own audit row.
    assert counts() == {**before, "audit": before["audit"] + 1}


def test_token_without_exp_is_refused(registration, browser, platform):
    login = browser.login()
    body = platform.claims(nonce=login.nonce)
    del body["exp"]

    response = browser.post_launch(platform.sign(body), login.state)

    assert_refused(response, 403, "exp")
    assert not Identity.objects.exists()


def test_wrong_aud_is_refused(registration, browser, platform):
    login = browser.login()
    before = counts()

    response = browser.post_launch(platform.id_token(nonce=login.nonce, aud="someone-else"), login.state)

    assert_refused(response, 403, "Registration not found")
    assert counts() == before


def test_several_audiences_need_this_tool_as_azp(registration, browser, platform):
    login = browser.login()
    before = counts()

    response = browser.post_launch(
        platform.id_token(nonce=login.nonce, aud=[CLIENT_ID, "another-client"], azp="another-client"),
        login.state,
    )

    assert_refused(response, 403, "authorized party")
    assert counts() == before


def test_unknown_deployment_is_refused(registration, browser, platform):
    login = browser.login()
    before = counts()

    response = browser.post_launch(
        platform.id_token(nonce=login.nonce, deployment_id="not-registered"), login.state
    )

    assert_refused(response, 403, "Unable to find deployment")
    assert counts() == before
    assert registration.deployments.count() == 1  # no deployment row appears for it


def test_replayed_nonce_is_refused(registration, browser, platform):
    login = browser.login()
    token = platform.id_token(nonce=login.nonce)
    assert browser.post_launch(token, login.state).status_code == 302
    before = counts()

    # The same token and state again, from the same browser (its state cookie is still there).
    response = browser.post_launch(token, login.state)

    assert_refused(response, 403, "Invalid Nonce")
    assert counts() == before


def test_nonce_the_tool_never_issued_is_refused(registration, browser, platform):
    login = browser.login()
    before = counts()

    response = browser.post_launch(platform.id_token(nonce="made-up-nonce"), login.state)

    assert_refused(response, 403, "Invalid Nonce")
    assert counts() == before


def test_state_not_matching_the_browser_is_refused(registration, browser, platform):
    login = browser.login()
    before = counts()
    token = platform.id_token(nonce=login.nonce)

    # Another browser (no state cookie) posts the token.
    response = Browser(platform).post_launch(token, login.state)

    assert_refused(response, 403, "State not found")
    assert counts() == before


def test_token_from_one_login_with_the_state_of_another_is_refused(registration, browser, platform):
    """Login CSRF: a token obtained for login A, posted with the state (and
    cookie) of login B in this browser, does not sign anyone in."""
    first = browser.login()
    second = browser.login()
    before = counts()

    response = browser.post_launch(platform.id_token(nonce=first.nonce), second.state)

    assert_refused(response, 403, "already used or has expired")
    assert counts() == before


def test_expired_login_is_refused(registration, browser, platform, settings):
    login = browser.login()
    LoginNonce.objects.update(expires_at="2000-01-01T00:00:00Z")
    before = counts()

    response = browser.post_launch(platform.id_token(nonce=login.nonce), login.state)

    assert_refused(response, 403, "Invalid Nonce")
    assert counts() == before


@pytest.mark.parametrize(
    "roles", [[MENTOR], [INSTITUTION_STUDENT], [], ["urn:lti:role:ims/lis/Learner/Other"]]
)
def test_unknown_role_is_refused(registration, browser, platform, roles):
    login = browser.login()
    before = counts()

    response = browser.post_launch(platform.id_token(nonce=login.nonce, roles=roles), login.state)

    assert_refused(response, 403, "cannot use the tutor")
    assert counts() == before
    assert session_user(browser.client) is None


def test_task_the_course_does_not_have_is_refused(registration, browser, platform):
    login = browser.login()
    before = counts()

    response = browser.post_launch(platform.id_token(nonce=login.nonce, task="no-such-task"), login.state)

    assert_refused(response, 404, "has no task &#x27;no-such-task&#x27;")
    assert counts() == before


def test_task_of_another_course_is_refused(registration, browser, platform):
    from tests.factories import make_course

    make_course("other-course")  # has a task t1 too, but it is not this registration's course
    login = browser.login()
    before = counts()

    response = browser.post_launch(platform.id_token(nonce=login.nonce, task="t2"), login.state)

    assert_refused(response, 404, "has no task")
    assert counts() == before


def test_student_launch_without_task_is_refused(registration, browser, platform):
    login = browser.login()
    before = counts()

    response = browser.post_launch(platform.id_token(nonce=login.nonce, task=None), login.state)

    assert_refused(response, 400, "custom parameter task")
    assert counts() == before


def test_deep_linking_message_is_refused(registration, browser, platform):
    login = browser.login()
    body = platform.claims(nonce=login.nonce)
    body["https://purl.imsglobal.org/spec/lti/claim/message_type"] = "LtiDeepLinkingRequest"
    body["https://purl.imsglobal.org/spec/lti-dl/claim/deep_linking_settings"] = {
        "deep_link_return_url": "https://lms.example.test/return",
        "accept_types": ["ltiResourceLink"],
        "accept_presentation_document_targets": ["iframe"],
    }
    before = counts()

    response = browser.post_launch(platform.sign(body), login.state)

    assert response.status_code == 400
    assert counts() == before


def test_inactive_registration_is_refused(registration, browser, platform):
    registration.active = False
    registration.save(update_fields=["active"])

    response = browser.client.get(
        "/lti/login/", {"iss": ISSUER, "login_hint": "h", "client_id": CLIENT_ID, "lti1p3_new_window": "1"}
    )

    assert_refused(response, 403, "not registered")
    assert not LoginNonce.objects.exists()


@pytest.mark.parametrize(
    "params",
    [
        {"login_hint": "h", "client_id": CLIENT_ID},  # no issuer
        {"iss": ISSUER, "client_id": CLIENT_ID},  # no login hint
        {"iss": "https://unknown.example.test", "login_hint": "h"},
        {"iss": ISSUER, "login_hint": "h", "client_id": "other-client"},
    ],
)
def test_bad_login_initiation_is_refused(registration, browser, params):
    response = browser.client.get("/lti/login/", {**params, "lti1p3_new_window": "1"})

    assert_refused(response, 403, "login request was refused")
    assert not LoginNonce.objects.exists()


@pytest.mark.parametrize(
    "data",
    [
        {},
        {"state": "x"},
        {"id_token": "not-a-jwt", "state": "x"},
        {"id_token": "a.b.c", "state": "x"},
    ],
)
def test_malformed_launch_post_is_refused(registration, browser, data):
    login = browser.login()
    data = {**data, "state": login.state} if "state" in data else data

    response = browser.client.post("/lti/launch/", data)

    assert 400 <= response.status_code < 500
    assert response["Content-Type"].startswith("text/html")


def test_token_whose_body_is_not_an_object_is_refused(registration, browser, platform):
    import base64
    import json

    login = browser.login()
    header = base64.urlsafe_b64encode(json.dumps({"alg": "RS256", "kid": platform.kid}).encode()).rstrip(b"=")
    body = base64.urlsafe_b64encode(b"[1, 2]").rstrip(b"=")
    token = f"{header.decode()}.{body.decode()}.c2ln"

    response = browser.post_launch(token, login.state)

    assert response.status_code == 403


def test_launch_by_get_is_not_allowed(registration, browser):
    response = browser.client.get("/lti/launch/")

    assert response.status_code == 405


def test_refusal_pages_may_be_framed_by_the_lms(registration, browser, platform):
    response = Browser(platform).post_launch("a.b.c", "state-x")

    assert "X-Frame-Options" not in response


def test_new_launch_in_the_same_browser_signs_out_the_previous_user(registration, browser, platform):
    browser.launch(sub="student-1")
    first = session_user(browser.client)

    browser.launch(sub="student-2")

    assert session_user(browser.client) != first
    assert session_user(browser.client).lti_identities.get().subject == "student-2"


def test_launch_redirect_location_query_names_the_task_uuid(registration, browser, task):
    response = browser.launch()

    query = parse_qs(urlsplit(response["Location"]).query)
    assert query == {"task": [str(task.pk)]}


@pytest.mark.parametrize(
    "claims",
    [{"sub": "s" * 256}, {"resource_link_id": "r" * 256}],
)
def test_overlong_ids_are_refused_not_cut(registration, browser, platform, claims):
    login = browser.login()
    before = counts()

    response = browser.post_launch(platform.id_token(nonce=login.nonce, **claims), login.state)

    assert_refused(response, 400, "longer than 255 characters")
    assert counts() == before


def test_nul_characters_are_refused_before_any_lookup(registration, browser):
    login = browser.client.get("/lti/login/", {"iss": "https://lms\x00.example.test", "login_hint": "h"})
    launch = browser.client.post("/lti/launch/", {"id_token": "a\x00b", "state": "s"})

    assert_refused(login, 400, "NUL character")
    assert_refused(launch, 400, "NUL character")


@pytest.mark.parametrize(
    ("claims", "named"),
    [
        ({"sub": "student-\ud800"}, "sub contains a lone surrogate"),
        ({"name": "Eve \ud800"}, "name contains a lone surrogate"),
        ({"given_name": "Eve\udfff"}, "given_name contains a lone surrogate"),
        ({"email": "eve\x00@example.test"}, "email contains a NUL"),
        ({"resource_link_id": "link\x00-1"}, "resource_link.id contains a NUL"),
        ({CLAIM + "context": {"id": "ctx\ud800", "title": "t"}}, "context.id contains a lone surrogate"),
        ({CLAIM + "context": {"id": "ctx", "title": "t\x00"}}, "context.title contains a NUL"),
        ({"task": "t1\ud800"}, "custom.task contains a lone surrogate"),
        ({"deployment_id": "dep\x00"}, "deployment_id contains a NUL"),
        ({"iss": "https://lms\x00.example.test"}, "iss contains a NUL"),
        ({"roles": ["x\ud800"]}, "roles.0 contains a lone surrogate"),
    ],
)
def test_a_claim_no_id_name_or_nonce_can_hold_is_refused_before_any_lookup(
    registration, browser, platform, claims, named
):
    """A NUL or a lone surrogate (escaped in the token's JSON) in any claim:
    a 400 page naming the claim, and nothing stored -- PostgreSQL refuses a
    NUL in a query, and a lone surrogate cannot be encoded."""
    login = browser.login()
    before = counts()

    response = browser.post_launch(platform.id_token(nonce=login.nonce, **claims), login.state)

    assert_refused(response, 400, f"claim {named}")
    assert counts() == before
    assert LoginNonce.objects.get(nonce=login.nonce).used_at is None  # the login can still be used


def test_unreadable_multipart_body_is_a_400_page(registration, browser):
    response = browser.client.generic(
        "POST", "/lti/launch/", b"id_token=0&state=0", content_type="multipart/form-data"
    )

    assert_refused(response, 400, "not a readable form")


# --- bound LMS courses: a deployment for a whole LMS account -------------------------------


def other_lms_course(context_id: str = "other-ctx-9") -> dict:
    return {CLAIM + "context": {"id": context_id, "title": "Another LMS course"}}


def test_any_lms_course_launches_while_none_is_bound(registration, browser):
    response = browser.launch(sub="teacher-9", roles=[INSTRUCTOR], task=None, **other_lms_course())

    assert response.status_code == 302
    assert Context.objects.get(context_id="other-ctx-9").bound is False


@pytest.mark.parametrize(
    "roles, claims, shown",
    [
        ([INSTRUCTOR], other_lms_course(), "other-ctx-9"),
        ([LEARNER], other_lms_course(), "other-ctx-9"),
        ([INSTRUCTOR], {CLAIM + "context": None}, "missing"),
        # Refused for the context before the task is looked at: nothing of
        # the course (its tasks) is told to another LMS course.
        ([LEARNER], {**other_lms_course(), "task": None}, "other-ctx-9"),
        ([LEARNER], {**other_lms_course(), "task": "no-such-task"}, "other-ctx-9"),
        (["http://purl.imsglobal.org/vocab/lis/v2/membership#Mentor"], other_lms_course(), "other-ctx-9"),
    ],
    ids=[
        "instructor-elsewhere",
        "learner-elsewhere",
        "no-context",
        "learner-elsewhere-no-task",
        "learner-elsewhere-unknown-task",
        "mentor-elsewhere",
    ],
)
def test_once_a_context_is_bound_launches_from_any_other_are_refused(
    registration, browser, platform, roles, claims, shown
):
    Context.objects.create(registration=registration, context_id="course-ctx-1", bound=True)
    before = counts()

    response = browser.launch(sub="teacher-9", roles=roles, **claims)

    assert_refused(response, 403, "not linked to the tutor&#x27;s course se-101")
    assert f"its context id is {shown}" in response.content.decode()
    assert counts() == before
    assert session_user(browser.client) is None
    # The bound LMS course still launches.
    assert Browser(platform).launch(sub="teacher-1", roles=[INSTRUCTOR], task=None).status_code == 302


def bind_in_admin(registration, context_id: str, action: str = "bind"):
    """A superuser ticks one LMS course in admin's LTI contexts and runs the action."""
    admin = Client()
    admin.force_login(get_user_model().objects.create_superuser(f"root-{action}-{time.monotonic_ns()}"))
    context = Context.objects.get(registration=registration, context_id=context_id)
    response = admin.post(
        "/admin/lti/context/", {"action": action, "_selected_action": [str(context.pk)]}, follow=True
    )
    assert response.status_code == 200
    return [str(m) for m in response.context["messages"]]


def test_binding_names_who_came_in_from_other_lms_courses_before(registration, browser, platform):
    """Binding refuses later launches from other LMS courses; those already
    let in as staff are named, with the roster sync that removes them."""
    assert (
        browser.launch(sub="teacher-9", roles=[INSTRUCTOR], task=None, **other_lms_course()).status_code
        == 302
    )
    assert Browser(platform).launch(sub="teacher-1", roles=[INSTRUCTOR], task=None).status_code == 302
    outsider = Identity.objects.get(subject="teacher-9").user
    insider = Identity.objects.get(subject="teacher-1").user

    shown = bind_in_admin(registration, "course-ctx-1")

    assert Context.objects.get(context_id="course-ctx-1").bound is True
    [warning] = [m for m in shown if "still enrolled" in m]
    assert outsider.username in warning and insider.username not in warning
    assert "lti_sync_roster se-101" in warning
    audit = AuditEvent.objects.filter(event="lti_registered").latest("id")
    assert audit.extra["bound_contexts"] == ["course-ctx-1"] and audit.actor.is_superuser
    # The outsider's next launch is refused; the enrolment waits for the roster sync.
    refused = Browser(platform).launch(sub="teacher-9", roles=[INSTRUCTOR], task=None, **other_lms_course())
    assert refused.status_code == 403


def test_unbinding_the_last_lms_course_says_the_registration_is_open_again(registration, browser, platform):
    Context.objects.create(registration=registration, context_id="course-ctx-1", bound=True)

    shown = bind_in_admin(registration, "course-ctx-1", action="unbind")

    assert Context.objects.get(context_id="course-ctx-1").bound is False
    assert any("no LMS course is bound now" in m for m in shown)
    assert (
        browser.launch(sub="teacher-9", roles=[INSTRUCTOR], task=None, **other_lms_course()).status_code
        == 302
    )


def test_course_staff_see_their_lms_courses_but_cannot_bind(registration, browser, platform, course):
    from tests.factories import enroll

    assert (
        browser.launch(sub="teacher-9", roles=[INSTRUCTOR], task=None, **other_lms_course()).status_code
        == 302
    )
    staff = enroll(course, "staff-1", role="staff")
    staff.is_staff = True
    staff.save()
    client = Client()
    client.force_login(staff)
    page = client.get("/admin/lti/context/")
    context = Context.objects.get(context_id="other-ctx-9")

    assert page.status_code == 200 and b"other-ctx-9" in page.content
    client.post("/admin/lti/context/", {"action": "bind", "_selected_action": [str(context.pk)]})
    context.refresh_from_db()
    assert context.bound is False


def test_lti_register_binding_names_who_came_in_from_other_lms_courses(registration, browser):
    from io import StringIO

    from django.core.management import call_command

    assert (
        browser.launch(sub="teacher-9", roles=[INSTRUCTOR], task=None, **other_lms_course()).status_code
        == 302
    )
    outsider = Identity.objects.get(subject="teacher-9").user
    args = ["--issuer", registration.issuer, "--client-id", registration.client_id, "--course", "se-101"]
    for name in ("auth_url", "token_url", "jwks_url"):
        args += ["--" + name.replace("_", "-"), getattr(registration, name)]
    for deployment in registration.deployments.values_list("deployment_id", flat=True):
        args += ["--deployment-id", deployment]
    err = StringIO()

    call_command("lti_register", *args, "--context-id", "course-ctx-1", stdout=StringIO(), stderr=err)

    assert "1 user(s) enrolled in se-101 by launches from other LMS courses" in err.getvalue()
    assert outsider.username in err.getvalue() and "lti_sync_roster se-101" in err.getvalue()
