"""Factories for tests: real rows through the real services where they exist."""

from __future__ import annotations

import itertools

from django.contrib.auth import get_user_model
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from tutor.coursefile import course_import, validate_course
from tutor.models import Course, Enrollment, Task
from tutor.services import enrollment_set

_seq = itertools.count(1)

DEFAULT_CRITERIA = [
    {"id": "A1", "kind": "acceptance", "text": "CI passes", "check": {"type": "ci_passed"}},
    {
        "id": "A2",
        "kind": "acceptance",
        "text": "Report names first and undefined",
        "check": {"type": "contains", "field": "report", "all": ["first", "undefined"]},
    },
    {"id": "A3", "kind": "acceptance", "text": "Explanation is correct", "check": {"type": "semantic"}},
    {"id": "L1", "kind": "learning", "text": "Reflects on edge cases"},
]


def course_data(slug: str | None = None, *, tasks: int = 1, criteria=None, version="2026.1") -> dict:
    slug = slug or f"course-{next(_seq)}"
    return {
        "slug": slug,
        "title": f"Course {slug}",
        "tasks": [
            {
                "slug": f"t{i + 1}",
                "title": f"Task {i + 1}",
                "goal": f"Goal of task {i + 1}",
                "steps": ["Read", "Write", "Check"],
                "materials": "Some materials",
                "tags": ["javascript", "docs"],
                "rubric": {"version": version, "criteria": criteria or DEFAULT_CRITERIA},
            }
            for i in range(tasks)
        ],
    }


def make_course(slug: str | None = None, **kwargs) -> Course:
    return course_import(spec=validate_course(course_data(slug, **kwargs))).course


def make_task(course: Course | None = None, slug: str = "t1") -> Task:
    course = course or make_course()
    return Task.objects.select_related("current_rubric", "course").get(course=course, slug=slug)


def make_user(username: str | None = None, **fields):
    username = username or f"user{next(_seq)}"
    return get_user_model().objects.create_user(username=username, password="pw-" + username, **fields)


def enroll(course: Course, username: str | None = None, role: str = Enrollment.Role.STUDENT):
    username = username or f"{role}{next(_seq)}"
    user, _ = enrollment_set(course=course, username=username, role=role, create=True)
    return user


def client_for(user) -> APIClient:
    client = APIClient()
    token, _ = Token.objects.get_or_create(user=user)
    client.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
    return client
