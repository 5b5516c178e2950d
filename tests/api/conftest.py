import pytest


@pytest.fixture
def session_id(task, student_client):
    """The id of the student's open tutor session for ``task``."""
    return student_client.post("/api/tutor/sessions/", {"task": task.pk}, format="json").json()["id"]
