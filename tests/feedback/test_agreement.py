"""Model-staff agreement per criterion and rubric version (SPEC §7
``review-agreement``, §8): numbers from a hand-computed fixture, the flag at
its exact thresholds, the reset at a rubric bump, scoping."""

from __future__ import annotations

import pytest
from django.urls import reverse

from feedback.agreement import flagged_criteria
from feedback.models import CriterionAgreement
from feedback.services.verdicts import staff_verdict_create
from tests.factories import (
    client_for,
    criterion_entry,
    enroll,
    make_attempt,
    make_course,
    make_submission,
    make_task,
)
from tests.factories import review_result as result_of
from tutor.coursefile import course_import, validate_course
from tutor.models import Enrollment


def url(task) -> str:
    return f"/api/tasks/{task.pk}/review-agreement/"


def model_review(a3: str) -> dict:
    return result_of(
        [
            criterion_entry("A1", "PASS", basis="ci"),
            criterion_entry("A2", "PASS"),
            criterion_entry("A3", a3, basis="model", reason=f"model says {a3}"),
            criterion_entry("L1", "PASS", kind="learning"),
        ]
    )


_n = iter(range(10_000))


def verdict_pair(task, staff, machine: str, human: str):
    """A student's model review with A3 = ``machine``, then a staff verdict A3 = ``human``."""
    student = enroll(task.course, f"s{next(_n)}")
    submission = make_submission(student, task)
    make_attempt(submission, result=model_review(machine))
    return staff_verdict_create(
        submission=submission,
        staff=staff,
        criteria=[{"rubric_id": "A3", "status": human, "reason": "looked"}],
    )


# 12 verdicts: 9 agree (5 FAIL/FAIL, 4 PASS/PASS) and one of each kind of disagreement.
FIXTURE = (
    [("FAIL", "FAIL")] * 5
    + [("PASS", "PASS")] * 4
    + [("FAIL", "PASS"), ("PASS", "FAIL"), ("NEED_REVIEW", "FAIL")]
)


@pytest.fixture
def twelve(task, staff):
    for machine, human in FIXTURE:
        verdict_pair(task, staff, machine, human)


def criterion(body, rubric_id="A3", version_index=0) -> dict:
    return next(c for c in body["rubric_versions"][version_index]["criteria"] if c["rubric_id"] == rubric_id)


def test_agreement_numbers_match_the_hand_computed_fixture(task, staff, staff_client, twelve):
    response = staff_client.get(url(task))

    assert response.status_code == 200
    body = response.json()
    a3 = criterion(body)
    assert (a3["verdicts"], a3["agreements"], a3["agreement_rate"]) == (12, 9, 0.75)
    assert (a3["model_verdicts"], a3["model_agreement_rate"]) == (12, 0.75)
    assert a3["by_basis"] == {"model": 12}
    assert a3["confusion"] == {
        "PASS": {"PASS": 4, "FAIL": 1, "NEED_REVIEW": 0},
        "FAIL": {"PASS": 1, "FAIL": 5, "NEED_REVIEW": 0},
        "NEED_REVIEW": {"PASS": 0, "FAIL": 1, "NEED_REVIEW": 0},
    }
    assert a3["flagged"] is True  # 0.75 < 0.8 over 12 >= 10 verdicts
    assert len(a3["disagreements"]) == 3
    assert {(d["machine_status"], d["staff_status"]) for d in a3["disagreements"]} == {
        ("FAIL", "PASS"),
        ("PASS", "FAIL"),
        ("NEED_REVIEW", "FAIL"),
    }
    # Every acceptance criterion is listed, with zero counts when staff never judged it.
    version = body["rubric_versions"][0]
    assert [c["rubric_id"] for c in version["criteria"]] == ["A1", "A2", "A3"]
    assert criterion(body, "A1")["verdicts"] == 0 and criterion(body, "A1")["agreement_rate"] is None
    assert (version["rubric_version"], version["current"], version["outdated"]) == ("2026.1", True, False)


@pytest.mark.parametrize(
    ("pairs", "flagged"),
    [
        ([("FAIL", "FAIL")] * 8 + [("FAIL", "PASS")] * 2, False),  # exactly the floor (0.8): not below
        ([("FAIL", "FAIL")] * 7 + [("FAIL", "PASS")] * 3, True),  # 0.7 over exactly the minimum (10)
        ([("FAIL", "PASS")] * 9, False),  # 0 agreement, but only 9 verdicts
    ],
    ids=["at-floor", "below-floor-at-minimum", "below-minimum"],
)
def test_flag_at_exactly_the_floor_and_the_minimum(task, staff, staff_client, pairs, flagged):
    for machine, human in pairs:
        verdict_pair(task, staff, machine, human)

    assert criterion(staff_client.get(url(task)).json())["flagged"] is flagged


def test_new_model_fails_on_a_flagged_criterion_enter_the_queue(task, staff, admin_client, twelve):
    fresh = make_attempt(make_submission(enroll(task.course, "newcomer"), task), result=model_review("FAIL"))
    passing = make_attempt(make_submission(enroll(task.course, "passer"), task), result=model_review("PASS"))
    queue = reverse("admin:feedback_reviewattempt_changelist")

    listed = {a.pk for a in admin_client.get(queue + "?decision=low_agreement").context["cl"].result_list}
    everything = {a.pk for a in admin_client.get(queue).context["cl"].result_list}

    assert listed == {fresh.pk}
    assert fresh.pk in everything and passing.pk not in everything
    assert fresh.result["overall"] == "FAIL"  # the student's verdict is unchanged until staff act


def test_a_rubric_bump_starts_a_new_count_and_keeps_the_old_one_as_outdated(
    task, staff, staff_client, admin_client, twelve
):
    data = {
        "slug": task.course.slug,
        "title": task.course.title,
        "tasks": [
            {
                "slug": task.slug,
                "title": task.title,
                "rubric": {"version": "2026.2", "criteria": task.current_rubric.criteria},
            }
        ],
    }
    course_import(spec=validate_course(data))
    bumped = make_task(task.course)
    fresh = make_attempt(
        make_submission(enroll(task.course, "after-bump"), bumped), result=model_review("FAIL")
    )

    body = staff_client.get(url(bumped)).json()

    current, outdated = body["rubric_versions"]
    assert (current["rubric_version"], current["current"]) == ("2026.2", True)
    assert (outdated["rubric_version"], outdated["outdated"]) == ("2026.1", True)
    assert criterion(body, version_index=0)["verdicts"] == 0
    assert criterion(body, version_index=1)["verdicts"] == 12 and criterion(body, version_index=1)["flagged"]
    assert flagged_criteria() == []  # the flag belongs to the outdated rubric
    queue = admin_client.get(reverse("admin:feedback_reviewattempt_changelist") + "?decision=low_agreement")
    assert fresh.pk not in {a.pk for a in queue.context["cl"].result_list}


def test_only_machine_judged_criteria_leave_a_pair(task, student, staff):
    submission = make_submission(student, task)
    make_attempt(
        submission,
        result=result_of(
            [
                criterion_entry("A1", "PASS", basis="ci"),
                criterion_entry("A2", "FAIL"),
                criterion_entry("A3", "NEED_REVIEW", basis="none"),
                criterion_entry("L1", "PASS", kind="learning"),
            ]
        ),
    )

    staff_verdict_create(
        submission=submission,
        staff=staff,
        criteria=[
            {"rubric_id": "A2", "status": "PASS", "reason": "it does"},
            {"rubric_id": "A3", "status": "PASS", "reason": "settled"},  # nobody had judged it: no pair
        ],
    )

    assert list(
        CriterionAgreement.objects.values_list("criterion", "machine_basis", "machine_status", "staff_status")
    ) == [("A2", "check", "FAIL", "PASS")]


def test_agreement_is_for_staff_of_the_course_only(task, student_client, twelve):
    outsider = enroll(make_course("other-202"), "outsider", Enrollment.Role.STAFF)

    assert student_client.get(url(task)).status_code == 403
    assert client_for(outsider).get(url(task)).status_code == 404
    assert client_for(outsider).get("/api/tasks/not-a-uuid/review-agreement/").status_code == 404


def test_a_reviewed_attempt_records_which_criteria_the_model_failed(task, student, fake_llm, settings):
    import json

    from django.test import TestCase

    from feedback.services.intake import submission_create

    fake_llm.reply(
        json.dumps(
            {
                "verdicts": [{"rubric_id": "A3", "status": "FAIL", "reason": "wrong", "evidence": "x"}],
                "next_step": "Explain the empty case",
            }
        )
    )
    with TestCase.captureOnCommitCallbacks(execute=True):
        submission = submission_create(
            student=student,
            task=task,
            evidence={"report": "first undefined", "ci": {"status": "passed"}},
            submitted_by=student,
            ci_source="student",
        )
    attempt = submission.attempts.get()
    attempt.refresh_from_db()

    assert attempt.status == "completed"
    assert attempt.model_failed == '"A3"'
