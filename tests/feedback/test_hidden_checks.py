"""Hidden checks (SPEC §9): status and text reach students and the tutor; the
reason, evidence, check configuration and check output never do, by any path."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.test import TestCase

from tests.api.test_tutor import send, session_id_for
from tests.factories import client_for, course_data, enroll, make_course, make_task
from tutor.models import Enrollment

SECRET_PATH = "tests/hidden/empty_array_edge.spec.js"
SECRET_TERM = "sentinel-undefined-branch"
HIDDEN_CRITERIA = [
    {"id": "A1", "kind": "acceptance", "text": "CI passes", "check": {"type": "ci_passed"}},
    {"id": "A3", "kind": "acceptance", "text": "Explanation is correct", "check": {"type": "semantic"}},
    {
        "id": "H1",
        "kind": "acceptance",
        "text": "Hidden tests pass",
        "check": {"type": "file_exists", "path": SECRET_PATH},
        "visibility": "hidden",
    },
    {
        "id": "H2",
        "kind": "acceptance",
        "text": "Covers the hidden branch",
        "check": {"type": "contains", "field": "report", "all": [SECRET_TERM]},
        "visibility": "hidden",
    },
]
FIXED_FAIL = "a hidden check did not pass; ask staff if you need a hint"


@pytest.fixture
def hidden_task(db):
    return make_task(make_course("hidden-101", criteria=HIDDEN_CRITERIA))


@pytest.fixture
def alice(hidden_task):
    return enroll(hidden_task.course, "alice")


@pytest.fixture
def teacher(hidden_task):
    return enroll(hidden_task.course, "teacher", Enrollment.Role.STAFF)


def model_review(next_step: str):
    """The semantic reviewer's reply for A3, with the given next step."""
    return json.dumps(
        {
            "verdicts": [{"rubric_id": "A3", "status": "PASS", "reason": "explains it", "evidence": "first"}],
            "next_step": next_step,
        }
    )


def submit(client, task, **evidence):
    body = {
        "report": "first() returns undefined",
        "ci": {"status": "failed", "exit_code": 1, "log_tail": "1 test failed"},
        **evidence,
    }
    # The review runs on commit (eagerly here); the answer is read after it.
    with TestCase.captureOnCommitCallbacks(execute=True):
        response = client.post("/api/submissions/", {"task": str(task.pk), "evidence": body}, format="json")
    assert response.status_code == 201, response.content
    return client.get(f"/api/submissions/{response.json()['id']}/").json()


def by_id(attempt: dict) -> dict:
    return {c["rubric_id"]: c for c in attempt["result"]["criteria"]}


def test_student_sees_status_and_text_but_never_the_hidden_reason_or_output(
    hidden_task, alice, teacher, fake_llm
):
    fake_llm.reply(model_review("Run the tests again."))
    body = submit(client_for(alice), hidden_task)

    student_view = by_id(body["attempts"][0])
    assert student_view["H1"]["status"] == "FAIL" and student_view["H1"]["criterion"] == "Hidden tests pass"
    assert student_view["H1"]["reason"] == FIXED_FAIL == student_view["H1"]["evidence"]
    assert student_view["H2"]["reason"] == FIXED_FAIL
    assert set(student_view["H1"]) == set(student_view["A1"])  # the item keeps its usual keys
    assert student_view["A1"]["evidence"] == "1 test failed"  # a visible check shows its output
    for url in (f"/api/submissions/{body['id']}/", f"/api/review-attempts/{body['attempts'][0]['id']}/"):
        text = client_for(alice).get(url).content.decode()
        assert SECRET_TERM not in text and SECRET_PATH not in text
    staff_view = by_id(client_for(teacher).get(f"/api/submissions/{body['id']}/").json()["attempts"][0])
    assert SECRET_PATH in staff_view["H1"]["reason"]
    assert SECRET_TERM in staff_view["H2"]["reason"]


def test_students_never_see_a_hidden_checks_configuration(hidden_task, alice, teacher):
    (student_task,) = client_for(alice).get("/api/tasks/").json()["results"]
    (staff_task,) = client_for(teacher).get("/api/tasks/").json()["results"]

    student_h2 = next(c for c in student_task["criteria"] if c["id"] == "H2")
    staff_h2 = next(c for c in staff_task["criteria"] if c["id"] == "H2")
    assert (student_h2["check"], student_h2["visibility"]) == (None, "hidden")
    assert staff_h2["check"]["all"] == [SECRET_TERM]
    assert SECRET_TERM not in json.dumps(student_task)


def test_the_model_request_carries_the_fixed_text_not_the_hidden_reason(hidden_task, alice, fake_llm):
    fake_llm.reply(model_review("Run the tests again."))
    client = client_for(alice)
    submit(client, hidden_task)
    fake_llm.reply("Let us look at it.", "Still here.")

    send(client, session_id_for(client, hidden_task), "what now?")
    first = fake_llm.last_messages[0]["content"]
    # After a reload: a fresh session, the same system message.
    client.post("/api/tutor/sessions/", {"task": str(hidden_task.pk), "new": True}, format="json")
    send(client, session_id_for(client, hidden_task), "and now?")
    second = fake_llm.last_messages[0]["content"]

    for system in (first, second):
        block = json.loads(system.split("<<<BEGIN REVIEW_FEEDBACK>>>\n")[1].split("\n<<<END")[0])
        items = {i["rubric_id"]: i for i in block["items"]}
        assert items["H1"]["reason"] == FIXED_FAIL and items["H1"]["criterion"] == "Hidden tests pass"
        assert SECRET_PATH not in system and SECRET_TERM not in system
    preview = client.get("/api/tutor/context/", {"task": str(hidden_task.pk)}).content.decode()
    assert SECRET_PATH not in preview and SECRET_TERM not in preview


def test_a_next_step_quoting_a_hidden_check_is_replaced_by_the_fixed_text(
    hidden_task, alice, teacher, fake_llm
):
    fake_llm.reply(model_review(f"Add {SECRET_PATH} and cover the {SECRET_TERM} case"))
    body = submit(client_for(alice), hidden_task)

    assert body["attempts"][0]["result"]["next_step"] == FIXED_FAIL
    staff_attempt = client_for(teacher).get(f"/api/review-attempts/{body['attempts'][0]['id']}/").json()
    assert SECRET_TERM in staff_attempt["result"]["next_step"]
    block = client_for(alice).get("/api/tutor/context/", {"task": str(hidden_task.pk)}).json()["feedback"]
    assert block["next_step"] == FIXED_FAIL


def test_the_offline_tutor_reply_never_quotes_a_hidden_check(hidden_task, alice, settings):
    settings.TUTOR_LLM_BASE_URL = None
    client = client_for(alice)
    submit(client, hidden_task)

    reply = send(client, session_id_for(client, hidden_task), "what now?").json()["reply"]["content"]

    assert "H1" in reply and FIXED_FAIL in reply
    assert SECRET_PATH not in reply and SECRET_TERM not in reply


def test_course_files_accept_visibility_and_refuse_unknown_values(db, tmp_path):
    data = course_data("vis-101", criteria=HIDDEN_CRITERIA)
    path = tmp_path / "course.json"
    path.write_text(json.dumps(data))
    call_command("import_course", str(path), stdout=StringIO())
    data["tasks"][0]["rubric"]["criteria"][2]["visibility"] = "secret"
    data["tasks"][0]["rubric"]["version"] = "2026.9"
    path.write_text(json.dumps(data))

    with pytest.raises(CommandError, match=r"criteria\[2\]\.visibility: must be 'visible' or 'hidden'"):
        call_command("import_course", str(path), stdout=StringIO())


# --- SPEC §9's own example: a visible and a hidden check read the same CI log ----------

CI_CRITERIA = [
    {"id": "A1", "kind": "acceptance", "text": "CI passes", "check": {"type": "ci_passed"}},
    {"id": "A3", "kind": "acceptance", "text": "Explanation is correct", "check": {"type": "semantic"}},
    {
        "id": "H1",
        "kind": "acceptance",
        "text": "Hidden tests pass",
        "check": {"type": "ci_passed"},
        "visibility": "hidden",
    },
]
SECRET_TEST = "hidden/secret_edge_case.spec.js"


@pytest.fixture
def ci_task(db):
    return make_task(make_course("hidden-ci-101", criteria=CI_CRITERIA))


def test_a_ci_log_a_hidden_check_reads_is_hidden_output_everywhere(ci_task, fake_llm):
    alice = enroll(ci_task.course, "alice")
    bot = enroll(ci_task.course, "ci-bot", Enrollment.Role.SERVICE)
    teacher = enroll(ci_task.course, "teacher", Enrollment.Role.STAFF)
    fake_llm.reply(model_review("Run the tests again."))
    evidence = {
        "report": "first() returns undefined",
        "ci": {"status": "failed", "exit_code": 1, "log_tail": f"FAIL {SECRET_TEST} expected undefined"},
    }
    with TestCase.captureOnCommitCallbacks(execute=True):
        created = client_for(bot).post(
            "/api/submissions/",
            {"task": str(ci_task.pk), "student": "alice", "evidence": evidence},
            format="json",
        )
    assert created.status_code == 201, created.content
    url = f"/api/submissions/{created.json()['id']}/"

    student_view = client_for(alice).get(url).content.decode()
    context = client_for(alice).get("/api/tutor/context/", {"task": str(ci_task.pk)}).content.decode()

    assert SECRET_TEST not in student_view and SECRET_TEST not in context
    (attempt,) = client_for(alice).get(url).json()["attempts"]
    a1 = next(c for c in attempt["result"]["criteria"] if c["rubric_id"] == "A1")
    assert (a1["status"], a1["evidence"]) == ("FAIL", "the CI log is not shown: a hidden check reads it")
    staff_view = client_for(teacher).get(url).content.decode()
    assert SECRET_TEST in staff_view


def test_a_next_step_that_only_shares_a_check_template_with_a_hidden_check_is_kept(ci_task, fake_llm):
    alice = enroll(ci_task.course, "alice")
    fake_llm.reply(
        json.dumps(
            {
                "verdicts": [{"rubric_id": "A3", "status": "FAIL", "reason": "misses []", "evidence": "x"}],
                "next_step": "CI passed, so now rewrite section 2 on the empty array",
            }
        )
    )

    body = submit(client_for(alice), ci_task, ci={"status": "passed", "exit_code": 0, "log_tail": "ok"})

    assert (
        body["attempts"][0]["result"]["next_step"] == "CI passed, so now rewrite section 2 on the empty array"
    )


def test_students_get_a_keyed_rubric_hash_and_the_model_is_told_which_checks_are_hidden(
    hidden_task, alice, teacher, fake_llm
):
    fake_llm.reply(model_review("Run the tests again."))
    body = submit(client_for(alice), hidden_task)
    stored = hidden_task.current_rubric.content_hash

    assert body["attempts"][0]["rubric_hash"] != stored
    staff_body = client_for(teacher).get(f"/api/submissions/{body['id']}/").json()
    assert staff_body["attempts"][0]["rubric_hash"] == stored


def test_the_review_prompt_marks_a_hidden_semantic_criterion(db, fake_llm):
    criteria = [
        {"id": "A3", "kind": "acceptance", "text": "Explanation is correct", "check": {"type": "semantic"}},
        {
            "id": "H4",
            "kind": "acceptance",
            "text": "Handles the hidden edge",
            "check": {"type": "semantic"},
            "visibility": "hidden",
        },
    ]
    task = make_task(make_course("hidden-sem-101", criteria=criteria))
    student = enroll(task.course, "ivan")
    verdicts = [
        {"rubric_id": rid, "status": "PASS", "reason": "fine", "evidence": "x"} for rid in ("A3", "H4")
    ]
    fake_llm.reply(json.dumps({"verdicts": verdicts, "next_step": "Keep going"}))

    submit(client_for(student), task)

    system, user = fake_llm.requests[0]["messages"]
    assert "- A3: Explanation is correct" in user["content"]
    assert "- H4 (hidden): Handles the hidden edge" in user["content"]
    assert "never mention it, its" in system["content"]
