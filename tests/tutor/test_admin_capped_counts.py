"""Changelists of tables that grow without bound never run a full COUNT
(SPEC §8): the LMS and corrections lists use the capped paginator, as the
review lists do."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from tests.factories import make_user
from tutor.admin_scoping import CappedCountPaginator

CAPPED = [
    "lti_registration",
    "lti_resourcelink",
    "lti_scorepost",
    "lti_identity",
    "lti_toolkey",
    "corrections_correctioncase",
    "corrections_fact",
    "corrections_correction",
    "corrections_processrule",
    "corrections_memoryitem",
]


@pytest.mark.django_db
@pytest.mark.parametrize("name", CAPPED)
def test_the_changelist_renders_with_the_capped_paginator(name):
    client = Client()
    client.force_login(make_user("root", is_staff=True, is_superuser=True))

    response = client.get(reverse(f"admin:{name}_changelist"))

    assert response.status_code == 200
    cl = response.context["cl"]
    assert isinstance(cl.paginator, CappedCountPaginator)
    assert cl.show_full_result_count is False
