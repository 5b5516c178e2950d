"""Staff edit a pending draft (SPEC §6; issue 36 item 3): each edit is a new
revision, audited, with the captured text kept; bad text is refused per
field; the edited text is what is approved and recalled into the exact
model request."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from lessons.models import Lesson, LessonKey, LessonRevision, LessonStatus
from lessons.services.capture import lessons_capture_from_attempt
from lessons.services.lifecycle import IllegalTransition, lesson_approve
from lessons.services.revisions import lesson_edit
from tests.factories import criterion_entry
from tests.lessons.conftest import errors, make_lesson
from tests.lessons.test_capture import CI_FAIL, CI_PASS, reviewed
from tests.lessons.test_tutor_context import fenced
from tests.tutor.test_context import open_session, send, system_of
from tutor.kernel.errors import InvalidInput
from tutor.models import AuditEvent
from tutor.rights.erasure import student_erase

EDITED = {
    "title": "Empty arrays: return undefined",
    "body": "first([]) must return undefined, not throw: check the length before indexing.",
    "tags_text": "javascript\ndocs\nedge-cases",
    "symptoms_text": "should be undefined",
    "note": "the captured text quoted the whole log",
}


def login(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def edit_url(lesson) -> str:
    return reverse("admin:lessons_lesson_edit", args=[lesson.pk])


@pytest.fixture
def draft(task, student):
    reviewed(student, task, CI_FAIL)
    fixing = reviewed(student, task, CI_PASS)
    [lesson] = lessons_capture_from_attempt(attempt_id=fixing.pk)
    return lesson


@pytest.mark.django_db
def test_an_edit_is_a_new_revision_audited_with_the_captured_text_kept(draft, staff):
    captured = Lesson.objects.values("title", "body", "tags", "symptoms").get(pk=draft.pk)

    response = login(staff).post(edit_url(draft), EDITED)

    assert response.status_code == 302
    draft.refresh_from_db()
    assert (draft.title, draft.body, draft.status) == (EDITED["title"], EDITED["body"], "pending")
    assert (draft.tags, draft.symptoms) == (["javascript", "docs", "edge-cases"], ["should be undefined"])
    first, second = LessonRevision.objects.filter(lesson=draft).order_by("number")
    assert (first.number, first.author, first.title, first.body) == (
        1,
        None,
        captured["title"],
        captured["body"],
    )
    assert (first.tags, first.symptoms) == (captured["tags"], captured["symptoms"])
    assert (second.number, second.author, second.body, second.note) == (2, staff, draft.body, EDITED["note"])
    event = AuditEvent.objects.get(target_id=str(draft.pk), event="lesson_edited")
    assert (event.actor, event.from_state, event.to_state, event.reason) == (
        staff,
        "pending",
        "pending",
        EDITED["note"],
    )
    assert event.extra == {"revision": 2, "fields": ["title", "body", "tags", "symptoms"], "redactions": 0}
    # Recall finds it by its new keys only.
    keys = set(LessonKey.objects.filter(lesson=draft).values_list("kind", "value"))
    assert ("tag", "edge-cases") in keys and ("symptom", "should be undefined") in keys
    assert ("symptom", "ci failed with exit code 1") not in keys
    # A second edit is revision 3; the page lists them all.
    login(staff).post(edit_url(draft), {**EDITED, "body": "Check xs.length first."})
    assert list(LessonRevision.objects.filter(lesson=draft).values_list("number", flat=True)) == [1, 2, 3]
    page = login(staff).get(reverse("admin:lessons_lesson_change", args=[draft.pk])).content.decode()
    assert captured["title"] in page and edit_url(draft) in page


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("title", "\u200b"),
        ("title", "   "),
        ("body", "\u200b\u200c\ufeff"),
        ("tags_text", "javascript\n\u200b"),
        ("symptoms_text", "\u2060"),
        ("symptoms_text", "!!!"),
    ],
)
def test_text_that_shows_nothing_is_refused_per_field_and_changes_nothing(draft, staff, field, value):
    before = Lesson.objects.values().get(pk=draft.pk)

    response = login(staff).post(edit_url(draft), {**EDITED, field: value})

    assert response.status_code == 200
    assert list(response.context["form"].errors) == [field]
    assert Lesson.objects.values().get(pk=draft.pk) == before
    assert not LessonRevision.objects.exists()
    assert not AuditEvent.objects.filter(event="lesson_edited").exists()


@pytest.mark.django_db
def test_the_service_refuses_invisible_text_naming_the_field(draft, staff):
    with pytest.raises(InvalidInput) as refused:
        lesson_edit(lesson=draft, actor=staff, title="t", body="b", tags=["\u200b"], symptoms=[])
    assert refused.value.field == "tags.0"


@pytest.mark.django_db
def test_only_a_pending_draft_is_edited(draft, staff):
    lesson_approve(lesson=draft, actor=staff)

    response = login(staff).post(edit_url(draft), EDITED)

    assert response.status_code == 302
    draft.refresh_from_db()
    assert draft.title != EDITED["title"] and not LessonRevision.objects.exists()
    with pytest.raises(IllegalTransition):
        lesson_edit(lesson=draft, actor=staff, title="t", body="b", tags=[], symptoms=[])


@pytest.mark.django_db
def test_another_courses_staff_cannot_open_or_edit_the_draft(draft, other_staff):
    client = login(other_staff)

    assert client.get(edit_url(draft)).status_code == 404
    assert client.post(edit_url(draft), EDITED).status_code == 404
    assert not LessonRevision.objects.exists()


@pytest.mark.django_db
def test_a_global_draft_is_edited_by_a_superuser_only(course, staff, superuser):
    global_draft = make_lesson(course=None, status=LessonStatus.PENDING)

    assert login(staff).post(edit_url(global_draft), EDITED).status_code == 403
    assert login(superuser).post(edit_url(global_draft), EDITED).status_code == 302
    assert Lesson.objects.get(pk=global_draft.pk).title == EDITED["title"]


@pytest.mark.django_db
def test_an_edit_that_changes_nothing_writes_no_revision(draft, staff):
    same = {
        "title": draft.title,
        "body": draft.body,
        "tags_text": "\n".join(draft.tags),
        "symptoms_text": "\n".join(draft.symptoms),
    }

    assert login(staff).post(edit_url(draft), same).status_code == 302
    assert (
        not LessonRevision.objects.exists() and not AuditEvent.objects.filter(event="lesson_edited").exists()
    )


@pytest.mark.django_db
def test_an_edit_is_redacted_and_counts_the_markers_it_keeps(course, staff):
    lesson = make_lesson(
        course=course, status=LessonStatus.PENDING, body="token ghp_abcdefghijklmnopqrstuvwxyz0123"
    )
    assert lesson.redactions == 1

    login(staff).post(edit_url(lesson), {**EDITED, "body": f"{lesson.body}; ask ops@example.com"})

    lesson.refresh_from_db()
    assert "ops@example.com" not in lesson.body and "ops@example.com" not in str(
        list(LessonRevision.objects.values())
    )
    assert lesson.redactions == 2 and lesson.redaction_kinds["email"] == 1  # the kept marker counts too


@pytest.mark.django_db
@pytest.mark.usefixtures("snapshot_path")
def test_the_edited_draft_is_what_is_recalled_into_the_exact_model_request(
    draft, staff, student_client, fake_llm, task
):
    fake_llm.default = "Let's look at it together."
    captured_body = draft.body
    login(staff).post(edit_url(draft), EDITED)
    act = login(staff).post(reverse("admin:lessons_lesson_act", args=[draft.pk, "approve_use"]))
    assert act.status_code == 302
    draft.refresh_from_db()
    assert draft.status == LessonStatus.INJECTED

    send(student_client, open_session(student_client, task), "How do I start?")

    system = system_of(fake_llm.last_messages)
    assert system.endswith(fenced(draft))
    assert f"{EDITED['title']}\n{EDITED['body']}" in system
    assert captured_body not in system and "CI failed with exit code 1" not in system


@pytest.mark.django_db
def test_approved_lessons_not_in_use_have_their_own_queue(course, staff):
    pending = make_lesson(course=course, status=LessonStatus.PENDING, title="waiting")
    approved = make_lesson(course=course, status=LessonStatus.PENDING, title="approved only")
    lesson_approve(lesson=approved, actor=staff)
    make_lesson(course=course, status=LessonStatus.INJECTED, title="in use")
    client = login(staff)
    changelist = reverse("admin:lessons_lesson_changelist")

    queue = client.get(changelist, {"queue": "approved"})

    assert [lesson.pk for lesson in queue.context["cl"].result_list] == [approved.pk]
    assert [lesson.pk for lesson in client.get(changelist).context["cl"].result_list] == [pending.pk]
    # "Use" from that queue: one click and it is injected, audited.
    client.post(reverse("admin:lessons_lesson_act", args=[approved.pk, "use"]))
    assert Lesson.objects.get(pk=approved.pk).status == LessonStatus.INJECTED
    assert not client.get(changelist, {"queue": "approved"}).context["cl"].result_list


# --- data rights (SPEC §13): revisions hold the student's quoted evidence ----------

CANARY = "canary-log-amber-birch-cedar"


def quoting_draft(task, student):
    failing = criterion_entry(
        "A1", "FAIL", basis="ci", reason="CI failed with exit code 1", evidence=f"1 failing\n{CANARY} broke"
    )
    reviewed(student, task, failing)
    [lesson] = lessons_capture_from_attempt(attempt_id=reviewed(student, task, CI_PASS).pk)
    return lesson


@pytest.mark.django_db
def test_erasing_the_student_removes_their_quoted_work_from_every_revision_of_a_kept_lesson(
    task, student, staff
):
    lesson = quoting_draft(task, student)
    lesson_edit(
        lesson=lesson,
        actor=staff,
        title=lesson.title,
        body=lesson.body + "\nCheck the length first.",
        tags=lesson.tags,
        symptoms=lesson.symptoms,
    )
    lesson_approve(lesson=lesson, actor=staff)
    assert all(CANARY in r.body for r in LessonRevision.objects.filter(lesson=lesson))

    report = student_erase(user=student, canaries=(CANARY,))

    assert report.residue == []
    kept = LessonRevision.objects.filter(lesson=lesson).order_by("number")
    assert [r.number for r in kept] == [1, 2] and kept[1].author == staff
    assert all(CANARY not in r.body + " ".join(r.symptoms) for r in kept)
    assert "Check the length first." in kept[1].body


@pytest.mark.django_db
def test_erasing_the_student_deletes_an_unapproved_draft_with_its_revisions(task, student, staff):
    lesson = quoting_draft(task, student)
    lesson_edit(lesson=lesson, actor=staff, title="Edited", body=lesson.body, tags=[], symptoms=[])

    assert student_erase(user=student, canaries=(CANARY,)).residue == []
    assert not LessonRevision.objects.exists() and not Lesson.objects.filter(pk=lesson.pk).exists()


@pytest.mark.django_db
def test_erasing_a_staff_member_keeps_their_revisions_without_name_or_note(draft, staff):
    lesson_edit(lesson=draft, actor=staff, title="Edited", body="b", tags=[], symptoms=[], note="by teacher")

    report = student_erase(user=staff)

    assert report.residue == []
    revision = LessonRevision.objects.get(lesson=draft, number=2)
    assert (revision.author_id, revision.note, revision.body) == (None, "", "b")
    assert report.counts["lessons.LessonRevision"]["pseudonymised"] == 1


# --- the same edit through the API (SPEC §7: bad input is a 400 on its field) -------


def patch(client, lesson, **body):
    return client.patch(f"/api/lessons/{lesson.pk}/", body, format="json")


@pytest.mark.django_db
def test_staff_edit_a_draft_through_the_api_and_read_its_revisions(draft, staff, staff_client):
    captured_body = draft.body

    response = patch(staff_client, draft, body="Check xs.length first.", tags=["javascript"], note="shorter")

    assert response.status_code == 200, response.content
    shown = response.json()
    assert (shown["body"], shown["tags"], shown["title"]) == (
        "Check xs.length first.",
        ["javascript"],
        draft.title,
    )
    revisions = staff_client.get(f"/api/lessons/{draft.pk}/revisions/").json()
    assert [(r["number"], r["author"], r["body"]) for r in revisions] == [
        (1, None, captured_body),
        (2, staff.username, "Check xs.length first."),
    ]
    assert revisions[1]["note"] == "shorter"


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"title": "\u200b"}, "title"),
        ({"body": "\u200b\ufeff"}, "body"),
        ({"body": ""}, "body"),
        ({"tags": ["docs", "\u200b"]}, "tags.1"),
        ({"symptoms": ["\u2060"]}, "symptoms.0"),
        ({"tags": "docs"}, "tags"),
        ({"title": 7}, "title"),
    ],
)
def test_bad_api_edits_are_400_on_the_field_and_change_nothing(draft, staff_client, body, field):
    before = Lesson.objects.values().get(pk=draft.pk)

    response = patch(staff_client, draft, **body)

    assert response.status_code == 400, response.content
    assert field in errors(response)
    assert Lesson.objects.values().get(pk=draft.pk) == before and not LessonRevision.objects.exists()


@pytest.mark.django_db
def test_api_edits_are_staffs_of_the_course_and_of_pending_drafts_only(
    draft, staff, student_client, other_staff_client, staff_client
):
    assert patch(student_client, draft, title="mine").status_code == 403
    assert patch(other_staff_client, draft, title="theirs").status_code == 404
    assert student_client.get(f"/api/lessons/{draft.pk}/revisions/").status_code == 403
    lesson_approve(lesson=draft, actor=staff)
    assert patch(staff_client, draft, title="late").status_code == 409
    assert not LessonRevision.objects.exists()
