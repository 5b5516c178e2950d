import pytest

from tests.factories import client_for, enroll, make_course, make_task
from tutor.models import Enrollment


@pytest.fixture
def course(db):
    return make_course("se-101")


@pytest.fixture
def task(course):
    return make_task(course)


@pytest.fixture
def student(course):
    return enroll(course, "alice")


@pytest.fixture
def other_student(course):
    return enroll(course, "bob")


@pytest.fixture
def staff(course):
    return enroll(course, "teacher", Enrollment.Role.STAFF)


@pytest.fixture
def service(course):
    return enroll(course, "ci-bot", Enrollment.Role.SERVICE)


@pytest.fixture
def student_client(student):
    return client_for(student)


@pytest.fixture
def staff_client(staff):
    return client_for(staff)
