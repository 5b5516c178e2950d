"""Admin smoke tests (SPEC §8): every changelist opens, course staff see only
their courses, rubric versions are read-only."""

import json
from io import StringIO

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.test import Client
from django.urls import reverse

from tests.factories import enroll, make_course, make_task, make_user
from tutor import llm
from tutor.models import Course, Enrollment, Rubric, Task
from tutor.services import course_staff_group

MODELS = ["course", "task", "rubric", "enrollment"]


@pytest.fixture
def courses(db):
    """Two courses with two tasks each and a student in each."""
    mine, theirs = make_course("mine", tasks=2), make_course("theirs", tasks=2)
    enroll(mine, "alice")
    enroll(theirs, "bob")
    return mine, theirs


@pytest.fixture
def superuser_client(db):
    client = Client()
    client.force_login(make_user("root", is_staff=True, is_superuser=True))
    return client


@pytest.fixture
def course_staff_client(courses):
    # Made the way operators do it, so the "Course staff" group is the real one.
    call_command("enroll", "mine", "teacher", "--staff", "--create", stdout=StringIO(), stderr=StringIO())
    client = Client()
    client.force_login(get_user_model().objects.get(username="teacher"))
    return client


def changelist(client, model: str):
    return client.get(reverse(f"admin:tutor_{model}_changelist"))


def listed(response) -> list:
    return list(response.context["cl"].result_list)


@pytest.mark.parametrize("model", MODELS)
def test_superuser_opens_every_changelist_and_sees_all_rows(courses, superuser_client, model):
    response = changelist(superuser_client, model)

    assert response.status_code == 200
    expected = {"course": 2, "task": 4, "rubric": 4, "enrollment": 2}[model]
    assert response.context["cl"].result_count == expected


def test_superuser_opens_a_task_with_its_rubric_inline(courses, superuser_client):
    task = make_task(courses[0])

    response = superuser_client.get(reverse("admin:tutor_task_change", args=[task.pk]))

    assert response.status_code == 200
    assert task.current_rubric.content_hash.encode() in response.content


def test_course_staff_see_only_their_courses_model_calls(courses, superuser_client, course_staff_client):
    mine, theirs = courses
    messages = [{"role": "user", "content": "secret prompt of another course"}]
    own = llm.record_offline_call(messages, purpose="tutor", reply="r", course_id=mine.pk)
    other = llm.record_offline_call(messages, purpose="tutor", reply="r", course_id=theirs.pk)
    unscoped = llm.record_offline_call(messages, purpose="review", reply="r")
    url = reverse("admin:tutor_modelcall_changelist")

    assert {c.pk for c in listed(superuser_client.get(url))} == {own.pk, other.pk, unscoped.pk}
    assert [c.pk for c in listed(course_staff_client.get(url))] == [own.pk]
    assert course_staff_client.get(reverse("admin:tutor_modelcall_change", args=[own.pk])).status_code == 200
    response = course_staff_client.get(reverse("admin:tutor_modelcall_change", args=[other.pk]))
    assert response.status_code == 302  # a row outside the scope is "missing": back to the index
    assert b"secret prompt" not in response.content


@pytest.mark.parametrize("model", MODELS)
def test_course_staff_open_changelists_scoped_to_their_course(courses, course_staff_client, model):
    mine, theirs = courses

    response = changelist(course_staff_client, model)

    assert response.status_code == 200
    rows = listed(response)
    assert rows
    course_of = {
        "course": lambda row: row,
        "task": lambda row: row.course,
        "rubric": lambda row: row.task.course,
        "enrollment": lambda row: row.course,
    }[model]
    assert {course_of(row) for row in rows} == {mine}


def test_course_staff_see_their_tasks_not_the_other_courses(courses, course_staff_client):
    response = changelist(course_staff_client, "task")

    assert sorted(str(task) for task in listed(response)) == ["mine/t1", "mine/t2"]
    assert b"theirs/" not in response.content


def test_course_staff_cannot_open_another_courses_task(courses, course_staff_client):
    foreign = make_task(courses[1])

    response = course_staff_client.get(reverse("admin:tutor_task_change", args=[foreign.pk]))

    # The admin treats an object outside the queryset as missing.
    assert response.status_code == 302
    assert response["Location"] == reverse("admin:index")


def test_course_staff_only_view_and_cannot_change(courses, course_staff_client):
    mine = courses[0]
    url = reverse("admin:tutor_course_change", args=[mine.pk])

    page = course_staff_client.get(url)
    post = course_staff_client.post(url, {"slug": "hacked", "title": "Hacked"})

    assert page.status_code == 200
    assert post.status_code == 403
    assert Course.objects.get(pk=mine.pk).slug == "mine"
    assert course_staff_client.get(reverse("admin:tutor_task_add")).status_code == 403


def test_admin_user_who_is_staff_of_no_course_sees_no_rows(courses):
    # Admin access and view permissions, but enrolled only as a student.
    lurker = make_user("lurker", is_staff=True)
    lurker.groups.add(course_staff_group())
    enroll(courses[0], "lurker", Enrollment.Role.STUDENT)
    client = Client()
    client.force_login(lurker)

    for model in MODELS:
        response = changelist(client, model)
        assert response.status_code == 200
        assert listed(response) == [], model


@pytest.mark.parametrize("model", MODELS)
def test_changelist_queries_do_not_grow_with_rows(db, superuser_client, django_assert_num_queries, model):
    for i in range(6):
        enroll(make_course(f"c{i}", tasks=3), f"s{i}")

    # session, user, the course list filter (none on Course), the filtered and
    # the total count, one page of rows with its related rows joined in.
    with django_assert_num_queries(5 if model == "course" else 6):
        response = changelist(superuser_client, model)

    assert (
        response.context["cl"].result_count == {"course": 6, "task": 18, "rubric": 18, "enrollment": 6}[model]
    )


def test_rubric_versions_cannot_be_added_or_changed(courses, superuser_client):
    rubric = Rubric.objects.select_related("task").first()
    change_url = reverse("admin:tutor_rubric_change", args=[rubric.pk])

    add = superuser_client.get(reverse("admin:tutor_rubric_add"))
    view = superuser_client.get(change_url)
    post = superuser_client.post(change_url, {"version": "edited", "criteria": "[]"})
    delete = superuser_client.post(reverse("admin:tutor_rubric_delete", args=[rubric.pk]), {"post": "yes"})

    assert add.status_code == 403
    assert view.status_code == 200  # readable
    assert not view.context["has_change_permission"]
    assert post.status_code == 403
    assert delete.status_code == 403
    stored = Rubric.objects.get(pk=rubric.pk)
    assert (stored.version, stored.criteria) == (rubric.version, rubric.criteria)


def test_current_rubric_is_not_editable_on_the_task_page(courses, superuser_client):
    task = Task.objects.filter(course=courses[0]).first()

    response = superuser_client.get(reverse("admin:tutor_task_change", args=[task.pk]))

    assert "current_rubric" not in response.context["adminform"].form.fields
    assert not response.context["inline_admin_formsets"][0].has_add_permission


@pytest.mark.parametrize("model", ["task", "rubric", "enrollment"])
def test_course_staff_filters_never_name_another_course(courses, course_staff_client, model):
    second = make_course("second")
    enroll(second, "carol")
    enroll(second, "teacher", Enrollment.Role.STAFF)
    response = changelist(course_staff_client, model)

    assert response.status_code == 200
    (course_filter,) = [spec for spec in response.context["cl"].filter_specs if "course" in spec.field_path]
    offered = {label for _, label in course_filter.lookup_choices}
    assert offered == {"mine", "second"}  # never the other course's name


def _task_form_data(response) -> dict:
    """The task page's form as the browser would post it back unchanged."""
    form = response.context["adminform"].form
    data = {name: form[name].value() for name in form.fields}
    data = {k: ("" if v is None else v) for k, v in data.items()}
    for inline in response.context["inline_admin_formsets"]:
        management = inline.formset.management_form
        data.update({management.add_prefix(k): v for k, v in management.initial.items()})
        for sub in inline.formset.forms:
            data.update({sub.add_prefix(k): ("" if v is None else v) for k, v in sub.initial.items()})
            data[sub.add_prefix("id")] = sub.instance.pk
    return data


@pytest.mark.parametrize(
    ("tags", "error"),
    [
        ([f"t{i}" for i in range(21)], "tags: at most 20 tags; got 21"),
        (["ok", "x" * 65], "tags[1]: must be at most 64 characters"),
        (["ok", 3], "tags[1]: must be a string"),
    ],
)
def test_task_tags_beyond_the_limits_are_refused_on_the_task_page(courses, superuser_client, tags, error):
    task = Task.objects.filter(course=courses[0]).first()
    url = reverse("admin:tutor_task_change", args=[task.pk])
    data = _task_form_data(superuser_client.get(url))
    data["tags"] = json.dumps(tags)

    response = superuser_client.post(url, data)

    assert response.status_code == 200  # the form again, with the error
    assert error in str(response.context["adminform"].form.errors["tags"])
    assert Task.objects.get(pk=task.pk).tags == task.tags


def test_task_tags_within_the_limits_are_saved_from_the_task_page(courses, superuser_client):
    task = Task.objects.filter(course=courses[0]).first()
    url = reverse("admin:tutor_task_change", args=[task.pk])
    data = _task_form_data(superuser_client.get(url))
    data["tags"] = json.dumps(["python", "week-2"])

    response = superuser_client.post(url, data)

    assert response.status_code == 302
    assert Task.objects.get(pk=task.pk).tags == ["python", "week-2"]


def test_task_tags_from_the_task_page_are_cleaned_and_each_tag_kept_once(courses, superuser_client):
    task = Task.objects.filter(course=courses[0]).first()
    url = reverse("admin:tutor_task_change", args=[task.pk])
    data = _task_form_data(superuser_client.get(url))
    data["tags"] = json.dumps([" Week  2", "python", "Python", "week 2 "])

    response = superuser_client.post(url, data)

    assert response.status_code == 302
    assert Task.objects.get(pk=task.pk).tags == ["Week 2", "python"]
