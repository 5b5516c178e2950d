"""Forgetting a memory item (SPEC §5: ``DELETE /api/memory/{id}/``) is a
conditional transition: of two DELETEs of one item exactly one succeeds and
writes; the other gets the unknown id's 404 and changes nothing.

The concurrent case runs for real (``transaction=True``: each thread has its
own connection and commits): the first DELETE is held open for a moment
right after its statement on the item ran, and the second is sent meanwhile.
"""

from __future__ import annotations

import threading
import time
import uuid

import pytest
from django.db import connection

from corrections.models import Correction, MemoryItem, MemoryToken
from tests.factories import client_for
from tutor.models import AuditEvent

HOLD_SECONDS = 1.0


def remember_preference(client) -> MemoryItem:
    response = client.post("/api/corrections/", {"content": "我希望回答简短一些"}, format="json")
    assert response.status_code == 201, response.content
    item = MemoryItem.objects.get()
    assert MemoryToken.objects.filter(memory=item).exists()
    return item


def forgotten_events():
    return AuditEvent.objects.filter(event=AuditEvent.Event.MEMORY_FORGOTTEN)


@pytest.mark.django_db
def test_a_second_delete_is_the_unknown_ids_404_and_changes_nothing(student, student_client):
    item = remember_preference(student_client)

    first = student_client.delete(f"/api/memory/{item.pk}/")
    correction = Correction.objects.get()
    second = student_client.delete(f"/api/memory/{item.pk}/")
    unknown = student_client.delete(f"/api/memory/{uuid.uuid4()}/")

    assert first.status_code == 204
    assert (second.status_code, second.json()) == (unknown.status_code, unknown.json())
    assert second.status_code == 404
    assert not MemoryItem.objects.exists() and not MemoryToken.objects.exists()
    assert Correction.objects.get() == correction
    assert correction.memory_id is None and correction.dedupe_key.startswith("forgotten:")
    event = forgotten_events().get()
    assert (event.actor, event.target_id, event.from_state) == (student, str(item.pk), "user")
    assert event.extra["kind"] == "preference" and item.content not in event.target_repr


@pytest.mark.django_db
def test_forgetting_lets_the_same_words_be_remembered_again(student_client):
    item = remember_preference(student_client)
    assert student_client.delete(f"/api/memory/{item.pk}/").status_code == 204

    again = student_client.post("/api/corrections/", {"content": "我希望回答简短一些"}, format="json")

    assert again.status_code == 201 and again.json()["created"] is True
    assert MemoryItem.objects.count() == 1 and Correction.objects.count() == 2


@pytest.mark.django_db(transaction=True)
def test_two_concurrent_deletes_of_one_item_forget_it_once(student):
    item = remember_preference(client_for(student))
    correction = Correction.objects.get()
    held = threading.Event()
    statuses: dict[str, int] = {}

    def hold_after_item_delete(execute, sql, params, many, context):
        result = execute(sql, params, many, context)
        if sql.lstrip().upper().startswith("DELETE") and MemoryItem._meta.db_table in sql:
            held.set()
            time.sleep(HOLD_SECONDS)  # the transaction stays open: the row stays locked
        return result

    def delete(name: str, wrapper=None):
        try:
            client = client_for(student)
            if wrapper is None:
                statuses[name] = client.delete(f"/api/memory/{item.pk}/").status_code
            else:
                with connection.execute_wrapper(wrapper):
                    statuses[name] = client.delete(f"/api/memory/{item.pk}/").status_code
        finally:
            connection.close()

    first = threading.Thread(target=delete, args=("first", hold_after_item_delete))
    first.start()
    assert held.wait(timeout=30), "the first DELETE never reached the item"
    second = threading.Thread(target=delete, args=("second",))
    second.start()
    first.join(timeout=60)
    second.join(timeout=60)

    assert statuses == {"first": 204, "second": 404}
    assert not MemoryItem.objects.exists()
    assert not MemoryToken.objects.exists()
    assert forgotten_events().count() == 1
    correction.refresh_from_db()
    assert correction.memory_id is None and correction.dedupe_key.startswith("forgotten:")


@pytest.mark.django_db(transaction=True)
def test_a_correction_refreshing_an_item_being_forgotten_is_remembered_anew(student):
    """A newer correction on the same topic refreshes the user's older item;
    if that item is forgotten meanwhile, the correction is still recorded,
    as a new item with its own tokens, and nothing points at the old one."""
    client = client_for(student)
    first = client.post("/api/corrections/", {"content": "不对，北京年均降雨量很高"}, format="json")
    assert first.status_code == 201, first.content
    item = MemoryItem.objects.get()
    held = threading.Event()
    statuses: dict[str, int] = {}

    def hold_after_item_delete(execute, sql, params, many, context):
        result = execute(sql, params, many, context)
        if sql.lstrip().upper().startswith("DELETE") and MemoryItem._meta.db_table in sql:
            held.set()
            time.sleep(HOLD_SECONDS)
        return result

    def forget():
        try:
            with connection.execute_wrapper(hold_after_item_delete):
                statuses["forget"] = client_for(student).delete(f"/api/memory/{item.pk}/").status_code
        finally:
            connection.close()

    def correct():
        try:
            response = client_for(student).post(
                "/api/corrections/", {"content": "不对，北京年均降雨量非常高"}, format="json"
            )
            statuses["correct"] = response.status_code
        finally:
            connection.close()

    forgetting = threading.Thread(target=forget)
    forgetting.start()
    assert held.wait(timeout=30)
    correcting = threading.Thread(target=correct)
    correcting.start()
    forgetting.join(timeout=60)
    correcting.join(timeout=60)

    assert statuses == {"forget": 204, "correct": 201}
    remembered = MemoryItem.objects.get()
    assert remembered.pk != item.pk and remembered.content == "北京年均降雨量非常高"
    assert set(MemoryToken.objects.values_list("memory_id", flat=True)) == {remembered.pk}
    newer = Correction.objects.get(content="不对，北京年均降雨量非常高")
    assert newer.memory_id == remembered.pk
