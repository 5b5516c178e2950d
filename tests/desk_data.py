"""One waiting item of every staff queue in a course (the desk's tests, HTTP
and browser): made through the services where one exists, else as the
services leave the rows."""

from __future__ import annotations

from django.db import transaction
from django.utils import timezone

from corrections.models import CaseKind, CorrectionCase, FactStatus, Proposal
from corrections.services.facts import fact_insert
from corrections.text import topic_key
from feedback.models import RegradeRequest
from lessons.models import LessonKind, LessonSource, LessonStatus, SkillCandidate
from lessons.services.store import lesson_insert
from tests.factories import criterion_entry, enroll, make_attempt, make_submission, review_result
from tutor.lti.models import Identity, Registration, ResourceLink, ScorePost, ScoreStatus

# Every queue the apps register, by name (tutor.desk.queues).
QUEUE_NAMES = (
    "reviews",
    "regrades",
    "correction_cases",
    "proposed_facts",
    "lesson_drafts",
    "lessons_approved_unused",
    "lessons_harmful",
    "skill_candidates",
    "lti_failed_scores",
)


def waiting_review() -> dict:
    """A review whose overall is FAIL while a semantic criterion waits for
    staff: the queue must show it whatever the other criteria say."""
    return review_result(
        [
            criterion_entry("A1", "FAIL", basis="ci", reason="CI failed"),
            criterion_entry("A2", "PASS"),
            criterion_entry("A3", "NEED_REVIEW", basis="none", reason="semantic review not configured"),
            criterion_entry("L1", "PASS", kind="learning"),
        ],
        next_step="Fix A1: CI passes",
    )


def questioned_review() -> dict:
    """A review with nothing waiting for staff: its student asks for a regrade of A2."""
    return review_result(
        [
            criterion_entry("A1", "PASS", basis="ci"),
            criterion_entry("A2", "FAIL", reason="the report does not name undefined"),
            criterion_entry("A3", "PASS", basis="model"),
            criterion_entry("L1", "PASS", kind="learning"),
        ],
        next_step="Fix A2: Report names first and undefined",
    )


def seed_queues(course, task, prefix: str = "") -> dict:
    """One item of each queue in ``course`` (usernames and topics prefixed)."""
    student = enroll(course, f"{prefix}student")
    asker = enroll(course, f"{prefix}asker")
    review = make_attempt(make_submission(student, task), result=waiting_review())
    asked = make_attempt(make_submission(asker, task), result=questioned_review())
    regrade = RegradeRequest.objects.create(
        submission=asked.submission,
        attempt=asked,
        student=asker,
        rubric_id="A2",
        reason="My report says undefined in its second paragraph.",
    )
    now = timezone.now()
    tokens = [f"{prefix}desk", "height"]
    case = CorrectionCase.objects.create(
        course=course,
        kind=CaseKind.FACT,
        topic=" ".join(tokens),
        topic_tokens=tokens,
        topic_key=topic_key(tokens),
        token_count=len(tokens),
    )
    Proposal.objects.create(case=case, statement="The desk is 630 mm high.", statement_key="630mm")
    with transaction.atomic():
        fact_tokens = [f"{prefix}lab", "opens"]
        fact = fact_insert(
            course=course,
            tokens=fact_tokens,
            statement="The lab opens at 9:00.",
            statement_key="9:00",
            statement_unit="",
            status=FactStatus.PROPOSED,
            actor=None,
            now=now,
        )

        def lesson(title: str, status: str):
            return lesson_insert(
                course_id=course.pk,
                title=f"{prefix}{title}",
                body=f"{title}: check the empty array before reading its first element.",
                tags=["javascript"],
                symptoms=["undefined"],
                kind=LessonKind.GUARDRAIL,
                source=LessonSource.MANUAL,
                status=status,
            )

        draft = lesson("Guard first()", LessonStatus.PENDING)
        approved = lesson("Name the edge case", LessonStatus.APPROVED)
        harmful = lesson("Always return null", LessonStatus.QUARANTINED)
        used = lesson("Run CI before asking", LessonStatus.INJECTED)
    candidate = SkillCandidate.objects.create(lesson=used, hit_count=25)
    score = failed_score(course, task, student, review, prefix=prefix)
    return {
        "reviews": review,
        "regrades": regrade,
        "correction_cases": case,
        "proposed_facts": fact,
        "lesson_drafts": draft,
        "lessons_approved_unused": approved,
        "lessons_harmful": harmful,
        "skill_candidates": candidate,
        "lti_failed_scores": score,
    }


def failed_score(course, task, student, attempt, *, prefix: str = "") -> ScorePost:
    registration = Registration.objects.create(
        course=course,
        issuer=f"https://{prefix}lms.example",
        client_id=f"{prefix}client",
        auth_url="https://lms.example/auth",
        token_url="https://lms.example/token",
        jwks_url="https://lms.example/jwks",
    )
    link = ResourceLink.objects.create(
        registration=registration,
        resource_link_id=f"{prefix}link",
        task=task,
        lineitem_url="https://lms.example/li",
    )
    identity = Identity.objects.create(issuer=registration.issuer, subject=f"{prefix}sub-1", user=student)
    return ScorePost.objects.create(
        link=link,
        identity=identity,
        attempt=attempt,
        attempt_seq=attempt.attempt_seq,
        scored_at=attempt.created_at,
        score_given=1,
        score_maximum=3,
        activity_progress="Completed",
        grading_progress="FullyGraded",
        status=ScoreStatus.FAILED,
        tries=5,
        last_http_status=500,
        next_try_at=timezone.now(),
    )
