"""Registering a platform for a course (SPEC §12): the command, its
validation and idempotence, and the admin (course-scoped for staff,
superusers edit)."""

from __future__ import annotations

from io import StringIO

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command
from django.test import Client

from tests.factories import enroll, make_course, make_user
from tutor.lti.models import Deployment, Registration
from tutor.models import AuditEvent

pytestmark = pytest.mark.django_db

ARGS = {
    "--issuer": "https://canvas.example.edu",
    "--client-id": "10000000000042",
    "--auth-url": "https://canvas.example.edu/api/lti/authorize_redirect",
    "--token-url": "https://canvas.example.edu/login/oauth2/token",
    "--jwks-url": "https://canvas.example.edu/api/lti/security/jwks",
}


def register(*deployments, course="se-101", **changes) -> tuple[str, str]:
    args = []
    for name, value in {**ARGS, **changes}.items():
        args += [name, value]
    for deployment in deployments or ("dep-1",):
        args += ["--deployment-id", deployment]
    args += ["--course", course]
    out, err = StringIO(), StringIO()
    call_command("lti_register", *args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def test_register_creates_the_registration_with_its_deployments(course):
    out, err = register("dep-1", "dep-2")

    registration = Registration.objects.get()
    assert registration.course == course
    assert (registration.issuer, registration.client_id) == (ARGS["--issuer"], ARGS["--client-id"])
    assert registration.jwks_url == ARGS["--jwks-url"]
    assert sorted(registration.deployments.values_list("deployment_id", flat=True)) == ["dep-1", "dep-2"]
    assert out == "https://canvas.example.edu client 10000000000042 for course se-101: registered\n"
    assert "/lti/login/" in err and "/lti/launch/" in err and "/lti/jwks/" in err
    assert "lti_keys generate" in err  # no tool key yet
    audit = AuditEvent.objects.get(event="lti_registered")
    assert (audit.to_state, audit.course_id) == ("created", course.pk)


def test_register_again_is_idempotent(course):
    register("dep-1")

    out, _ = register("dep-1")

    assert out.endswith(": unchanged\n")
    assert Registration.objects.count() == 1 and Deployment.objects.count() == 1
    assert AuditEvent.objects.filter(event="lti_registered").count() == 1


def test_register_again_updates_urls_and_adds_deployments(course):
    register("dep-1")

    out, err = register("dep-2", **{"--jwks-url": "https://canvas.example.edu/jwks-v2"})

    assert out.endswith(": updated (jwks_url, deployment dep-2)\n")
    assert "kept deployments not named here: dep-1" in err
    assert Registration.objects.get().jwks_url == "https://canvas.example.edu/jwks-v2"
    assert Deployment.objects.count() == 2


def test_a_registration_never_moves_to_another_course(course):
    make_course("other")
    register()

    with pytest.raises(CommandError, match="belongs to course 'se-101'"):
        register(course="other")
    assert Registration.objects.get().course == course


@pytest.mark.parametrize(
    "changes, message",
    [
        ({"--auth-url": "http://canvas.example.edu/auth"}, "auth_url must use https"),
        ({"--token-url": "not a url"}, "token_url must be an absolute https:// URL"),
        ({"--jwks-url": "ftp://canvas.example.edu/jwks"}, "jwks_url must be an absolute"),
        ({"--issuer": "canvas"}, "issuer must be the platform's issuer URL"),
        ({"--client-id": "  "}, "client_id must not be empty"),
        ({"--client-id": "x" * 256}, "client_id is longer than 255"),
    ],
)
def test_register_refuses_bad_values_and_changes_nothing(course, changes, message):
    with pytest.raises(CommandError, match=message):
        register(**changes)
    assert not Registration.objects.exists()
    assert not AuditEvent.objects.filter(event="lti_registered").exists()


def test_register_refuses_an_unknown_course(course):
    with pytest.raises(CommandError, match="unknown course 'nope'"):
        register(course="nope")


def test_register_refuses_an_empty_deployment_id(course):
    with pytest.raises(CommandError, match="deployment_id must not be empty"):
        register("")


def test_http_is_allowed_on_a_loopback_platform(course):
    register(**{"--auth-url": "http://127.0.0.1:8100/auth", "--token-url": "http://localhost:8100/token"})

    assert Registration.objects.get().auth_url == "http://127.0.0.1:8100/auth"


# --- admin -----------------------------------------------------------------------------------


@pytest.fixture
def two_registrations(course):
    register()
    make_course("other")
    register(course="other", **{"--client-id": "other-client"})
    return Registration.objects.get(course=course), Registration.objects.get(course__slug="other")


def staff_client(course) -> Client:
    call_command(
        "enroll", course.slug, "teacher", "--staff", "--create", stdout=StringIO(), stderr=StringIO()
    )
    client = Client()
    client.force_login(get_user_model().objects.get(username="teacher"))
    return client


def test_course_staff_see_only_their_registrations_and_cannot_edit(course, two_registrations):
    mine, theirs = two_registrations
    client = staff_client(course)

    listing = client.get("/admin/lti/registration/")

    assert listing.status_code == 200
    assert b"10000000000042" in listing.content and b"other-client" not in listing.content
    assert client.get(f"/admin/lti/registration/{mine.pk}/change/").status_code == 200
    assert (
        client.get(f"/admin/lti/registration/{theirs.pk}/change/").status_code == 302
    )  # not found: back to list
    assert client.post(f"/admin/lti/registration/{mine.pk}/change/", {"issuer": "x"}).status_code == 403
    assert client.get("/admin/lti/registration/add/").status_code == 403
    assert client.get("/admin/lti/toolkey/").status_code == 403
    assert client.get("/admin/lti/identity/").status_code == 403


def test_superuser_edits_a_registration_with_the_same_url_rule(course, two_registrations):
    mine, _ = two_registrations
    client = Client()
    client.force_login(make_user("root", is_staff=True, is_superuser=True))
    data = {
        "course": str(course.pk),
        "issuer": mine.issuer,
        "client_id": mine.client_id,
        "auth_url": "http://canvas.example.edu/auth",
        "token_url": mine.token_url,
        "jwks_url": mine.jwks_url,
        "active": "on",
        "deployments-TOTAL_FORMS": "0",
        "deployments-INITIAL_FORMS": "0",
    }

    refused = client.post(f"/admin/lti/registration/{mine.pk}/change/", data)

    assert refused.status_code == 200
    assert b"must use https" in refused.content
    data["auth_url"] = "https://canvas.example.edu/auth-v2"
    saved = client.post(f"/admin/lti/registration/{mine.pk}/change/", data)
    assert saved.status_code == 302
    mine.refresh_from_db()
    assert mine.auth_url == "https://canvas.example.edu/auth-v2"


def test_superuser_binds_a_context_seen_in_a_launch_in_the_admin(course, two_registrations):
    from tutor.lti.models import Context

    mine, theirs = two_registrations
    seen = Context.objects.create(registration=mine, context_id="ctx-7", title="Seen in a launch")
    Context.objects.create(registration=theirs, context_id="ctx-8", title="Another course's")
    client = Client()
    client.force_login(make_user("root", is_staff=True, is_superuser=True))
    page = client.get(f"/admin/lti/registration/{mine.pk}/change/").content.decode()
    assert "none: any LMS course" in page
    assert f"/admin/lti/context/?registration__id__exact={mine.pk}" in page
    listing = client.get(f"/admin/lti/context/?registration__id__exact={mine.pk}").content.decode()
    assert "ctx-7" in listing and "Seen in a launch" in listing and "ctx-8" not in listing

    done = client.post(
        "/admin/lti/context/", {"action": "bind", "_selected_action": [str(seen.pk)]}, follow=True
    )

    assert done.status_code == 200
    assert "1 LMS course(s) bound" in done.content.decode()
    seen.refresh_from_db()
    assert seen.bound is True
    audit = AuditEvent.objects.filter(event="lti_registered").latest("id")
    assert audit.extra["bound_contexts"] == ["ctx-7"] and audit.extra["all_bound_contexts"] == ["ctx-7"]
    assert "ctx-7" in client.get(f"/admin/lti/registration/{mine.pk}/change/").content.decode()
    # Binding again turns nothing and records nothing.
    client.post("/admin/lti/context/", {"action": "bind", "_selected_action": [str(seen.pk)]})
    assert AuditEvent.objects.filter(event="lti_registered").latest("id").pk == audit.pk


def test_an_lms_account_of_many_courses_is_bound_from_its_own_list(course, two_registrations):
    """A registration page listed every context in a form: past about 350
    of them its save was over the upload's field limit (a 400)."""
    from tutor.lti.models import Context

    mine, _ = two_registrations
    Context.objects.bulk_create(
        [Context(registration=mine, context_id=f"ctx-{n}", title=f"LMS course {n}") for n in range(400)]
    )
    client = Client()
    client.force_login(make_user("root", is_staff=True, is_superuser=True))
    data = {
        "course": str(course.pk),
        "issuer": mine.issuer,
        "client_id": mine.client_id,
        "auth_url": mine.auth_url,
        "token_url": "https://canvas.example.edu/login/oauth2/token-v2",
        "jwks_url": mine.jwks_url,
        "active": "on",
        "deployments-TOTAL_FORMS": "0",
        "deployments-INITIAL_FORMS": "0",
    }

    assert client.post(f"/admin/lti/registration/{mine.pk}/change/", data).status_code == 302
    chosen = Context.objects.get(context_id="ctx-399")
    client.post("/admin/lti/context/", {"action": "bind", "_selected_action": [str(chosen.pk)]})
    assert list(Context.objects.filter(bound=True).values_list("context_id", flat=True)) == ["ctx-399"]


def test_admin_changelists_open_for_superusers(course, two_registrations):
    client = Client()
    client.force_login(make_user("root", is_staff=True, is_superuser=True))
    for model in ("registration", "context", "resourcelink", "scorepost", "identity", "toolkey"):
        assert client.get(f"/admin/lti/{model}/").status_code == 200, model


def test_students_have_no_admin(course, two_registrations):
    client = Client()
    client.force_login(enroll(course, "alice"))

    assert client.get("/admin/lti/registration/").status_code == 302


def test_register_binds_the_named_lms_courses_and_warns_while_none_is_bound(course):
    from tutor.lti.models import Context

    _, err = register("dep-1")
    assert "no LMS course is bound" in err and "--context-id" in err

    out, err = register("dep-1", **{"--context-id": "ctx-1"})

    assert out.endswith(": updated (context ctx-1)\n")
    assert "no LMS course is bound" not in err
    assert list(Context.objects.values_list("context_id", "bound")) == [("ctx-1", True)]
    audit = AuditEvent.objects.filter(event="lti_registered").latest("id")
    assert audit.extra["bound_contexts"] == ["ctx-1"]
    # Again: unchanged; a context is never unbound by the command.
    assert register("dep-1")[0].endswith(": unchanged\n")
    assert Context.objects.get().bound is True


def test_register_binds_a_context_seen_in_a_launch(course):
    from tutor.lti.models import Context

    register("dep-1")
    registration = Registration.objects.get()
    Context.objects.create(registration=registration, context_id="ctx-1", title="Seen in a launch")

    register("dep-1", **{"--context-id": "ctx-1"})

    context = Context.objects.get()
    assert (context.title, context.bound) == ("Seen in a launch", True)


def test_register_refuses_an_overlong_context_id_and_changes_nothing(course):
    with pytest.raises(CommandError, match="context_id is longer than 255"):
        register("dep-1", **{"--context-id": "c" * 256})
    assert not Registration.objects.exists()


def test_superuser_sets_brightspace_audience_role_map_and_pending_scores_in_admin(course, two_registrations):
    mine, _ = two_registrations
    client = Client()
    client.force_login(make_user("root", is_staff=True, is_superuser=True))
    data = {
        "course": str(course.pk),
        "issuer": mine.issuer,
        "client_id": mine.client_id,
        "auth_url": mine.auth_url,
        "token_url": mine.token_url,
        "jwks_url": mine.jwks_url,
        "auth_audience": "https://api.brightspace.com/auth/token",
        "role_map": "Instructor=staff;Learner=boss",
        "pending_scores": "hold",
        "active": "on",
        "deployments-TOTAL_FORMS": "0",
        "deployments-INITIAL_FORMS": "0",
    }

    refused = client.post(f"/admin/lti/registration/{mine.pk}/change/", data)

    assert refused.status_code == 200
    assert b"write Role=staff, Role=student or Role=none" in refused.content
    data["role_map"] = "Instructor=staff;TeachingAssistant=staff;Learner=student"
    assert client.post(f"/admin/lti/registration/{mine.pk}/change/", data).status_code == 302
    mine.refresh_from_db()
    assert (mine.auth_audience, mine.role_map, mine.pending_scores) == (
        "https://api.brightspace.com/auth/token",
        "Instructor=staff;TeachingAssistant=staff;Learner=student",
        "hold",
    )
