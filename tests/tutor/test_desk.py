"""The staff desk (SPEC §8, turn 3): /admin/ opens on one card per work queue
with its count and the age of its oldest item, scoped to the person's
courses; each card opens its queue on exactly those rows, and a row's
buttons clear it."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from corrections.models import CaseStatus, FactStatus
from feedback.models import RegradeStatus
from lessons.models import LessonStatus, SkillCandidate
from tests.desk_data import QUEUE_NAMES, seed_queues
from tests.factories import enroll, make_course, make_task, make_user
from tutor.desk.queues import QueueCount, desk_counts
from tutor.lti.models import ScoreStatus
from tutor.models import AuditEvent, Enrollment

pytestmark = pytest.mark.django_db
DESK = reverse("admin:index")


@pytest.fixture
def two_courses():
    mine, other = make_course("se-101"), make_course("other-202")
    items = seed_queues(mine, make_task(mine))
    seed_queues(other, make_task(other), prefix="o-")
    teacher = enroll(mine, "teacher", role=Enrollment.Role.STAFF)
    teacher.is_staff = True
    teacher.save(update_fields=["is_staff"])
    client = Client()
    client.force_login(teacher)
    return items, teacher, client


def cards(response) -> dict[str, QueueCount]:
    return {card.name: card for card in response.context["cards"]}


def test_admin_opens_on_the_desk_with_one_card_per_queue_scoped_to_the_staff_members_course(two_courses):
    _, _, client = two_courses

    response = client.get(DESK)

    assert response.status_code == 200
    found = cards(response)
    assert tuple(found) == QUEUE_NAMES
    assert {name: card.count for name, card in found.items()} == dict.fromkeys(QUEUE_NAMES, 1)
    assert all(card.oldest is not None and not card.capped for card in found.values())
    content = response.content.decode()
    assert 'data-queue="reviews" data-count="1"' in content
    assert "oldest waits" in content


def test_a_superuser_desk_counts_every_course():
    root = make_user("root", is_staff=True, is_superuser=True)
    for slug in ("a-1", "b-2"):
        course = make_course(slug)
        seed_queues(course, make_task(course), prefix=f"{slug}-")
    client = Client()
    client.force_login(root)

    found = cards(client.get(DESK))

    assert {name: card.count for name, card in found.items()} == dict.fromkeys(QUEUE_NAMES, 2)


def test_each_card_opens_its_queue_on_exactly_the_items_it_counts(two_courses):
    items, _, client = two_courses

    for card in cards(client.get(DESK)).values():
        listing = client.get(card.url)
        assert listing.status_code == 200, card.url
        rows = [str(pk) for pk in listing.context["cl"].result_list.values_list("pk", flat=True)]
        assert rows == [str(items[card.name].pk)], (card.name, card.url)


def test_the_stock_admin_index_stays_reachable_under_the_desk(two_courses):
    _, _, client = two_courses

    desk = client.get(DESK).content.decode()
    index = client.get(reverse("admin:all_pages"))

    assert index.status_code == 200
    assert reverse("admin:all_pages") in desk
    assert reverse("admin:feedback_submission_changelist") in desk  # the app list under the cards
    assert reverse("admin:tutor_auditevent_changelist") in index.content.decode()


def test_a_semantic_criterion_waits_for_staff_although_another_criterion_fails(two_courses):
    items, _, client = two_courses
    review = items["reviews"]
    assert review.result["overall"] == "FAIL"

    listing = client.get(reverse("admin:feedback_reviewattempt_changelist"))

    assert [a.pk for a in listing.context["cl"].result_list] == [review.pk]
    assert "A3 wait for staff" in listing.content.decode()


def act(client, app_model: str, obj, name: str, reason: str = ""):
    url = reverse(f"admin:{app_model}_act", args=[obj.pk, name])
    return client.post(url, {"row": f"-{obj.pk}", f"reason-{obj.pk}": reason})


def test_each_queue_is_cleared_from_its_rows_and_the_desk_counts_drop(two_courses):
    items, teacher, client = two_courses
    review = items["reviews"]

    verdict = client.post(
        reverse("admin:feedback_reviewattempt_verdict", args=[review.pk]),
        {"status_A3": "PASS", "reason_A3": "Explains the empty array correctly", "next_step": ""},
    )
    assert verdict.status_code == 302
    done = [
        act(
            client,
            "feedback_regraderequest",
            items["regrades"],
            "decline",
            "The CI service reported the run.",
        ),
        act(client, "corrections_correctioncase", items["correction_cases"], "reject", "The desk is 720 mm."),
        act(client, "corrections_fact", items["proposed_facts"], "verify", "Posted on the lab door."),
        act(client, "lessons_lesson", items["lesson_drafts"], "approve_use"),
        act(client, "lessons_lesson", items["lessons_approved_unused"], "use"),
        act(client, "lessons_lesson", items["lessons_harmful"], "retire"),
        act(client, "lessons_skillcandidate", items["skill_candidates"], "accept"),
        act(client, "lti_scorepost", items["lti_failed_scores"], "resend"),
    ]

    assert [r.status_code for r in done] == [302] * len(done)
    problems = [str(m) for r in done for m in r.wsgi_request._messages if m.level_tag == "error"]
    assert problems == []
    assert {name: card.count for name, card in cards(client.get(DESK)).items()} == dict.fromkeys(
        QUEUE_NAMES, 0
    )
    for obj in items.values():
        obj.refresh_from_db()
    assert items["regrades"].status == RegradeStatus.DECLINED
    assert items["correction_cases"].status == CaseStatus.REJECTED
    assert items["proposed_facts"].status == FactStatus.VERIFIED
    assert items["lesson_drafts"].status == LessonStatus.INJECTED
    assert items["lessons_approved_unused"].status == LessonStatus.INJECTED
    assert items["lessons_harmful"].status == LessonStatus.RETIRED
    assert items["skill_candidates"].status == SkillCandidate.Status.ACCEPTED
    assert items["lti_failed_scores"].status == ScoreStatus.QUEUED
    # Every decision is the staff member's, audited.
    assert AuditEvent.objects.filter(actor=teacher).count() >= 10
    # The other course's queues are untouched.
    assert {c.name: c.count for c in desk_counts()} == dict.fromkeys(QUEUE_NAMES, 1)


def test_a_decision_that_needs_a_reason_is_refused_without_one_and_changes_nothing(two_courses):
    items, _, client = two_courses
    case = items["correction_cases"]

    response = act(client, "corrections_correctioncase", case, "reject", "")

    assert response.status_code == 302
    assert [str(m) for m in response.wsgi_request._messages] == ["Give a reason for this decision."]
    case.refresh_from_db()
    assert case.status == CaseStatus.OPEN


def test_another_courses_item_cannot_be_acted_on(two_courses):
    _, _, client = two_courses
    theirs = make_course("third-303")
    other_items = seed_queues(theirs, make_task(theirs), prefix="t-")

    response = act(client, "lessons_lesson", other_items["lesson_drafts"], "approve_use")

    assert response.status_code == 404
    other_items["lesson_drafts"].refresh_from_db()
    assert other_items["lesson_drafts"].status == LessonStatus.PENDING


def test_an_action_is_refused_with_a_get(two_courses):
    items, _, client = two_courses

    response = client.get(reverse("admin:lessons_lesson_act", args=[items["lesson_drafts"].pk, "approve"]))

    assert response.status_code == 405


def test_the_item_page_has_the_rows_buttons_and_next_item_walks_the_queue(two_courses):
    items, teacher, client = two_courses
    course = items["lesson_drafts"].course
    from django.db import transaction

    from lessons.models import LessonKind, LessonSource
    from lessons.services.store import lesson_insert

    with transaction.atomic():
        second = lesson_insert(
            course_id=course.pk,
            title="Second draft",
            body="Read the rubric first.",
            tags=["docs"],
            symptoms=[],
            kind=LessonKind.NOTE,
            source=LessonSource.MANUAL,
        )
    first = items["lesson_drafts"]
    filters = "queue=pending"
    page = client.get(
        reverse("admin:lessons_lesson_change", args=[first.pk]), {"_changelist_filters": filters}
    ).content.decode()
    assert 'data-act="approve_use"' in page and 'data-act="reject"' in page
    assert "Next item" in page

    walked = client.get(
        reverse("admin:lessons_lesson_next", args=[first.pk]), {"_changelist_filters": filters}
    )
    assert walked.status_code == 302
    assert walked["Location"].startswith(reverse("admin:lessons_lesson_change", args=[second.pk]))

    # Deciding on the page goes on to the next item.
    decided = client.post(
        reverse("admin:lessons_lesson_act", args=[first.pk, "reject"]),
        {"reason": "duplicate", "go": "next", "_changelist_filters": filters},
    )
    assert decided.status_code == 302
    assert reverse("admin:lessons_lesson_next", args=[first.pk]) in decided["Location"]
    onward = client.get(decided["Location"])
    assert onward["Location"].startswith(reverse("admin:lessons_lesson_change", args=[second.pk]))
    first.refresh_from_db()
    assert (first.status, first.reject_reason) == (LessonStatus.REJECTED, "duplicate")


def test_a_review_row_queues_a_forced_re_review(two_courses):
    items, teacher, client = two_courses
    review = items["reviews"]

    response = act(client, "feedback_reviewattempt", review, "rereview")

    assert response.status_code == 302
    assert [str(m) for m in response.wsgi_request._messages] == [
        f"Queued a fresh review of submission #{review.submission.submission_seq}."
    ]
    newest = review.submission.attempts.order_by("-attempt_seq").first()
    assert newest.pk != review.pk and newest.forced
    assert AuditEvent.objects.filter(event="review_forced", actor=teacher).exists()
