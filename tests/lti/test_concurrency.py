"""A token posted twice at the same moment signs in once (SPEC §12: a nonce
is never reused). Threads use their own database connections, so the rows
must be committed (``transaction=True``)."""

from __future__ import annotations

import threading

import pytest
from django.db import connection
from django.test import Client

from tests.lti.conftest import Browser
from tutor.lti.models import Identity, LinkMember
from tutor.models import AuditEvent

pytestmark = pytest.mark.django_db(transaction=True)


def test_same_launch_posted_twice_at_once_signs_in_once(registration, platform):
    browser = Browser(platform)
    login = browser.login()
    token = platform.id_token(nonce=login.nonce)
    barrier = threading.Barrier(2)
    statuses: list[int] = []

    def post():
        client = Client()
        client.cookies = browser.client.cookies  # the same browser, two tabs
        barrier.wait()
        try:
            statuses.append(
                client.post("/lti/launch/", {"id_token": token, "state": login.state}).status_code
            )
        finally:
            connection.close()

    threads = [threading.Thread(target=post) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)

    assert sorted(statuses) == [302, 403]
    assert Identity.objects.count() == 1
    assert LinkMember.objects.get().launch_count == 1
    assert AuditEvent.objects.filter(event="lti_launched").count() == 1
