"""Sign-in protection (SPEC §7): failed sign-ins on the client's ``/login/``
and the admin's are counted per username and per address; at the limit the
username or address is locked for the cool-off -- a 429 with the reason, even
for the right password, with no password hashed -- and the lock-out is
audited once; a success resets the username's count. The gunicorn test shows
the count shared by two workers of the shipped server."""

from __future__ import annotations

import re
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
from django.contrib.auth.hashers import MD5PasswordHasher
from django.test import Client

from tests.factories import make_user
from tutor.models import AuditEvent

PATHS = {"client": "/login/", "admin": "/admin/login/"}


class CountingHasher(MD5PasswordHasher):
    """The test hasher, counting the passwords it checks or hashes."""

    calls = 0
    lock = threading.Lock()

    def verify(self, password, encoded):
        with CountingHasher.lock:
            CountingHasher.calls += 1
        return super().verify(password, encoded)

    def encode(self, password, salt):
        with CountingHasher.lock:
            CountingHasher.calls += 1
        return super().encode(password, salt)


@pytest.fixture(autouse=True)
def limits(settings):
    settings.PASSWORD_HASHERS = [f"{__name__}.CountingHasher"]
    settings.SIGNIN_FAILURE_LIMIT = 5
    settings.SIGNIN_ADDRESS_FAILURE_LIMIT = 30
    settings.SIGNIN_COOLOFF = 900
    CountingHasher.calls = 0


@pytest.fixture
def staff_user(db):
    return make_user("trent", is_staff=True)  # password "pw-trent"


def sign_in(client: Client, form: str, username: str, password: str, address: str = "10.0.0.1", **extra):
    return client.post(
        PATHS[form], {"username": username, "password": password, **extra}, REMOTE_ADDR=address
    )


def signed_in(client: Client) -> bool:
    return "_auth_user_id" in client.session


@pytest.mark.parametrize("form", ["client", "admin"])
def test_the_fifth_failure_locks_the_username_and_the_right_password_is_refused(staff_user, form):
    client = Client()
    statuses = [sign_in(client, form, "trent", f"wrong-{i}").status_code for i in range(5)]
    hashed = CountingHasher.calls

    right = sign_in(client, form, "trent", "pw-trent")

    assert statuses == [200, 200, 200, 200, 429]
    assert right.status_code == 429 and not signed_in(client)
    assert 0 < int(right["Retry-After"]) <= 900
    assert "Too many failed sign-ins" in right.content.decode()
    assert CountingHasher.calls == hashed  # no password was checked for the locked-out try
    [event] = AuditEvent.objects.filter(event="signin_locked_out")
    assert (event.target_id, event.to_state, event.extra["scope"]) == (
        str(staff_user.pk),
        "locked",
        "username",
    )
    assert event.extra["address"] == "10.0.0.1" and "5 failed sign-ins" in event.reason


def test_the_lock_out_holds_for_any_spelling_and_from_another_address(staff_user):
    client = Client()
    for i in range(5):
        sign_in(client, "client", "trent", f"wrong-{i}")

    assert sign_in(client, "client", "TRENT", "pw-trent", address="10.9.9.9").status_code == 429
    assert sign_in(client, "admin", "trent", "pw-trent", address="10.9.9.9").status_code == 429
    assert AuditEvent.objects.filter(event="signin_locked_out").count() == 1


def test_the_client_form_says_why(staff_user):
    client = Client()
    for i in range(5):
        response = sign_in(client, "client", "trent", f"wrong-{i}")

    page = response.content.decode()
    assert 'data-i18n="login_locked"' in page and 'data-i18n="login_failed"' not in page


def test_a_success_resets_the_usernames_count(staff_user):
    client = Client()
    for i in range(4):
        sign_in(client, "client", "trent", f"wrong-{i}")
    assert sign_in(client, "client", "trent", "pw-trent").status_code == 302
    client.logout()

    statuses = [sign_in(client, "client", "trent", f"again-{i}").status_code for i in range(4)]

    assert statuses == [200] * 4
    assert sign_in(client, "client", "trent", "pw-trent").status_code == 302 and signed_in(client)


def test_the_cool_off_ends(staff_user, monkeypatch):
    client = Client()
    for i in range(5):
        sign_in(client, "client", "trent", f"wrong-{i}")
    now = time.time()
    monkeypatch.setattr(time, "time", lambda: now + 901)  # the cache's expiry reads the same clock

    assert sign_in(client, "client", "trent", "pw-trent").status_code == 302 and signed_in(client)


def test_failures_from_one_address_lock_it_for_every_username(db, settings):
    settings.SIGNIN_ADDRESS_FAILURE_LIMIT = 8
    make_user("victim")
    client = Client()
    statuses = [
        sign_in(client, "client", f"user{i}", "guess", address="10.0.0.7").status_code for i in range(8)
    ]

    assert statuses == [200] * 7 + [429]
    assert sign_in(client, "client", "victim", "pw-victim", address="10.0.0.7").status_code == 429
    assert sign_in(client, "client", "victim", "pw-victim", address="10.0.0.8").status_code == 302
    [event] = AuditEvent.objects.filter(event="signin_locked_out")
    assert (event.extra["scope"], event.target_id) == ("address", "")


def test_an_address_count_is_not_reset_by_a_success(db, settings):
    """An attacker with an account of their own cannot clear the address's count between guesses."""
    settings.SIGNIN_ADDRESS_FAILURE_LIMIT = 4
    make_user("mallory")
    client = Client()
    for i in range(3):
        sign_in(client, "client", f"someone{i}", "guess")
        assert sign_in(client, "client", "mallory", "pw-mallory").status_code == 302
        client.logout()

    assert sign_in(client, "client", "someone9", "guess").status_code == 429


def test_behind_the_proxy_the_address_is_the_one_it_added(db, settings):
    settings.TRUST_X_FORWARDED_FOR = True
    settings.SIGNIN_ADDRESS_FAILURE_LIMIT = 2
    client = Client()
    # A client forging the first address of the header changes nothing: the proxy's is last.
    for forged in ("1.1.1.1", "2.2.2.2"):
        response = client.post(
            "/login/",
            {"username": f"u-{forged}", "password": "x"},
            REMOTE_ADDR="127.0.0.1",
            HTTP_X_FORWARDED_FOR=f"{forged}, 203.0.113.5",
        )

    assert response.status_code == 429
    assert AuditEvent.objects.get(event="signin_locked_out").extra["address"] == "203.0.113.5"


@pytest.mark.django_db(transaction=True)
def test_parallel_failures_never_pass_the_limit(staff_user):
    def attempt(i):
        return sign_in(Client(), "client", "trent", f"wrong-{i}").status_code

    with ThreadPoolExecutor(max_workers=6) as pool:
        statuses = list(pool.map(attempt, range(12)))

    assert sorted(statuses) == [200] * 4 + [429] * 8


def test_admin_sign_in_with_an_unsafe_next_lands_on_the_admin(staff_user):
    response = sign_in(Client(), "admin", "trent", "pw-trent", next="https://evil.example/steal")

    assert response.status_code == 302 and response["Location"] == "/admin/"


def test_admin_sign_in_honours_a_safe_next(staff_user):
    response = sign_in(Client(), "admin", "trent", "pw-trent", next="/admin/tutor/course/")

    assert response.status_code == 302 and response["Location"] == "/admin/tutor/course/"


def test_a_cache_outage_lets_sign_in_go_on_uncounted(staff_user, monkeypatch):
    from django.core.cache import cache

    def down(*args, **kwargs):
        raise ConnectionError("cache down")

    for name in ("get_many", "add", "incr", "delete"):
        monkeypatch.setattr(cache, name, down)

    assert [sign_in(Client(), "client", "trent", "wrong").status_code for _ in range(6)] == [200] * 6
    assert sign_in(Client(), "client", "trent", "pw-trent").status_code == 302


# --- across gunicorn workers ------------------------------------------------------------


def csrf_form(page: str) -> str:
    return re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page).group(1)


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("cache", ["file", "redis"])
def test_the_lock_out_is_shared_by_two_gunicorn_workers(tmp_path, cache):
    """The shipped server with two workers: failures on a connection to one
    worker and on one to the other add up to one count, and the lock-out
    refuses the right password on both."""
    import os

    from tests.tutor.gunicorn_workers import WorkerConnection, two_workers
    from tutor.bench.drivers import gunicorn_server

    if cache == "redis" and not os.environ.get("REDIS_URL"):
        pytest.skip("REDIS_URL is not set")
    from django.contrib.auth.hashers import PBKDF2PasswordHasher, make_password
    from django.contrib.auth.models import User

    class FastPBKDF2(PBKDF2PasswordHasher):
        iterations = 1000  # the server checks a hash with the iterations it names

    username = f"staff-{os.getpid()}-{time.monotonic_ns()}"
    User.objects.create(
        username=username, is_staff=True, password=make_password("right", hasher=FastPBKDF2())
    )
    env = {
        # the shipped settings: the shared cache, not the tests' own
        "DJANGO_SETTINGS_MODULE": "tutor.settings",
        "WEB_CONCURRENCY": "2",
        "WEB_THREADS": "2",
        "ALLOWED_HOSTS": "127.0.0.1",
        "SIGNIN_FAILURE_LIMIT": "5",
        "SIGNIN_ADDRESS_FAILURE_LIMIT": "1000",  # this test counts the username
        "CACHE_DIR": str(tmp_path / "cache"),
        # The connections stay with their workers however slow the machine is.
        "GUNICORN_CMD_ARGS": "--keep-alive 120",
    }
    if cache == "file":
        env["REDIS_URL"] = ""
    with gunicorn_server(env) as base:
        first, second = two_workers(base)

        def fail(connection: WorkerConnection, path: str, i: int) -> int:
            form = csrf_form(connection.get(path).text)
            return connection.post(
                path, {"username": username, "password": f"wrong-{i}", "csrfmiddlewaretoken": form}
            )

        statuses = [
            fail(first, "/login/", 0),
            fail(second, "/admin/login/", 1),
            fail(first, "/admin/login/", 2),
            fail(second, "/login/", 3),
            fail(first, "/login/", 4),
        ]
        refused = []
        for connection, path in ((first, "/login/"), (second, "/admin/login/")):
            form = csrf_form(connection.get(path).text)
            refused.append(
                connection.post(
                    path, {"username": username, "password": "right", "csrfmiddlewaretoken": form}
                )
            )
        pids = (first.pid, second.pid)

    assert pids[0] != pids[1]
    assert statuses == [200, 200, 200, 200, 429]
    assert refused == [429, 429]
    assert AuditEvent.objects.filter(event="signin_locked_out", extra__username=username).count() == 1


def test_a_lock_out_by_another_spelling_is_audited_against_the_account(staff_user):
    """The username is counted case-folded: five tries as "TRENT" lock trent out,
    and the audit event names trent's account as its target."""
    client = Client()
    for i in range(5):
        sign_in(client, "client", " TRENT ", f"wrong-{i}")

    assert sign_in(client, "client", "trent", "pw-trent", address="10.9.9.9").status_code == 429
    [event] = AuditEvent.objects.filter(event="signin_locked_out")
    assert event.target_id == str(staff_user.pk)
