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


@pytest.fixture
def fake_llm(settings, monkeypatch):
    """Configure a model and route the real client to a scripted fake."""
    import httpx

    from tests.fakellm import BASE_URL, MODEL, FakeLLM
    from tutor import llm

    fake = FakeLLM()
    settings.TUTOR_LLM_BASE_URL = BASE_URL
    settings.TUTOR_LLM_MODEL = MODEL
    settings.TUTOR_LLM_API_KEY = "sk-test"
    settings.TUTOR_LLM_RETRIES = 2
    settings.TUTOR_LLM_BACKOFF = 0
    monkeypatch.setattr(llm, "TRANSPORT", httpx.MockTransport(fake.handler))
    return fake


@pytest.fixture(autouse=True)
def _fresh_cache():
    """Throttle counters live in the cache, scope snapshots in the process; ids repeat across tests."""
    from django.core.cache import cache

    from tutor.db.memo import clear_all
    from tutor.db.snapshots import forget_all

    cache.clear()
    forget_all()  # snapshots of the rows a test's transaction rolls back
    clear_all()  # and what was derived from them (ids repeat after a rollback)
    yield
    cache.clear()
    forget_all()
    clear_all()


@pytest.fixture(params=["in_transaction", "committed"])
def snapshot_path(request, monkeypatch):
    """Runs a test twice (``tutor.db.snapshots``): as it is -- a test's writes stay
    in its transaction, so the scopes it changed are read by the statements
    themselves -- and as if each write had committed when made, so every
    context read goes through the process's snapshots and is kept right by
    the drops the writes make (a write path that forgets to say what it
    changed leaves a stale snapshot, and the test's assertions fail)."""
    if request.param == "committed":
        from tutor.db import snapshots

        # Nothing is ever pending: every read may use the snapshots, and every
        # change is published on its own, as a commit of its own would.
        monkeypatch.setattr(snapshots, "dirty_scopes", lambda connection: {})
        monkeypatch.setattr(snapshots, "still_pending", lambda connection, publish: False)
    return request.param
