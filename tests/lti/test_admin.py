"""The score outbox in admin (SPEC §8, §12): a work queue of scores the LMS
has not accepted, course-scoped, with a resend action."""

from __future__ import annotations

from io import StringIO

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.test import Client
from django.utils import timezone

from tests.factories import make_attempt, make_course, make_submission, make_task
from tests.lti.conftest import Browser, register
from tutor.lti.models import Identity, LinkMember, ResourceLink, ScorePost, ScoreStatus
from tutor.models import AuditEvent

pytestmark = pytest.mark.django_db


def score_row(link: ResourceLink, identity: Identity, status: str, given: int = 1) -> ScorePost:
    attempt = make_attempt(make_submission(identity.user, link.task))
    return ScorePost.objects.create(
        link=link,
        identity=identity,
        attempt=attempt,
        attempt_seq=attempt.attempt_seq,
        scored_at=attempt.created_at,
        score_given=given,
        score_maximum=3,
        activity_progress="Completed",
        grading_progress="FullyGraded",
        status=status,
        next_try_at=timezone.now(),
    )


@pytest.fixture
def rows(registration, platform, task):
    """Scores of this course (posted, failed, queued) and a failed one of another course."""
    Browser(platform).launch(sub="student-1")
    link = ResourceLink.objects.get()
    identity = Identity.objects.get()
    mine = {status: score_row(link, identity, status) for status in ("posted", "failed", "queued")}
    other_course = make_course("other")
    other_registration = register(platform, other_course, client_id="other-client")
    other_link = ResourceLink.objects.create(
        registration=other_registration,
        resource_link_id="x",
        task=make_task(other_course),
        lineitem_url="https://x",
    )
    LinkMember.objects.create(link=other_link, identity=identity, role="student")
    theirs = score_row(other_link, identity, "failed", given=2)
    return mine, theirs


def staff_client(slug: str = "se-101") -> Client:
    call_command("enroll", slug, "teacher", "--staff", "--create", stdout=StringIO(), stderr=StringIO())
    client = Client()
    client.force_login(get_user_model().objects.get(username="teacher"))
    return client


def listed(response) -> set[str]:
    return {str(pk) for pk in response.context["cl"].result_list.values_list("pk", flat=True)}


def test_queue_defaults_to_scores_not_accepted_and_is_course_scoped(rows):
    mine, theirs = rows
    client = staff_client()

    default = client.get("/admin/lti/scorepost/")
    everything = client.get("/admin/lti/scorepost/", {"queue": "all"})

    assert default.status_code == 200
    assert listed(default) == {str(mine["failed"].pk), str(mine["queued"].pk)}
    assert listed(everything) == {str(r.pk) for r in mine.values()}
    assert str(theirs.pk) not in listed(everything)


def test_resend_action_requeues_failed_scores_of_the_course(rows, platform):
    mine, _ = rows
    mine.pop("queued").delete()  # a newer score on its way would keep the failed one from a re-send
    client = staff_client()

    response = client.post(
        "/admin/lti/scorepost/",
        {"action": "requeue_failed", "_selected_action": [str(mine["failed"].pk), str(mine["posted"].pk)]},
        follow=True,
    )

    assert response.status_code == 200
    assert "1 score(s) queued again." in response.content.decode()
    mine["failed"].refresh_from_db()
    mine["posted"].refresh_from_db()
    # Queued again with fresh tries (its task is sent on commit, which this
    # test's transaction never reaches); a posted score is left alone.
    assert (mine["failed"].status, mine["failed"].tries) == (ScoreStatus.QUEUED, 0)
    assert mine["posted"].status == ScoreStatus.POSTED
    audit = AuditEvent.objects.get(event="lti_score_requeued")
    assert (audit.actor.username, audit.target_id) == ("teacher", str(mine["failed"].pk))


def test_score_list_query_count_is_constant(rows, django_assert_max_num_queries):
    mine, _ = rows
    link, identity = mine["posted"].link, mine["posted"].identity
    client = staff_client()
    client.get("/admin/lti/scorepost/", {"queue": "all"})  # warm the session and content types
    with django_assert_max_num_queries(12) as few:
        client.get("/admin/lti/scorepost/", {"queue": "all"})
    for _ in range(20):
        score_row(link, identity, "queued")

    with django_assert_max_num_queries(len(few.captured_queries)):
        client.get("/admin/lti/scorepost/", {"queue": "all"})
