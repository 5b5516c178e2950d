"""Serializers that share one bound field set per class
(``tutor.web.fields.SharedFieldsSerializer``): nothing of one instance reaches
another, whatever uses it first."""

from __future__ import annotations

from types import SimpleNamespace

from rest_framework import serializers

from tutor.chat.serializers import ContextQuerySerializer, MessageCreateSerializer
from tutor.web.fields import SharedFieldsSerializer

TASK = "9b7d1e1c-8e8f-4a8e-9a1e-1b2c3d4e5f60"


def test_fields_are_shared_and_hold_no_request():
    first = MessageCreateSerializer(data={"content": "the first student's message"})
    assert first.is_valid()
    later = MessageCreateSerializer(data={"content": 5})

    assert later.fields is first.fields
    assert not later.is_valid() and set(later.errors) == {"content"}
    parent = later.fields["content"].parent
    assert parent is not first and parent is not later
    assert not hasattr(parent, "initial_data") and parent.instance is None


def test_a_field_that_reads_the_context_is_never_shared():
    class Stamped(SharedFieldsSerializer):
        owner = serializers.CharField(default=serializers.CurrentUserDefault())
        note = serializers.CharField()

    def request_of(name):
        return {"request": SimpleNamespace(user=name)}

    alice = Stamped(data={"note": "a"}, context=request_of("alice"))
    mallory = Stamped(data={"note": "m"}, context=request_of("mallory"))

    assert alice.is_valid() and mallory.is_valid()
    assert (alice.validated_data["owner"], mallory.validated_data["owner"]) == ("alice", "mallory")
    assert alice.fields is not mallory.fields


def test_a_first_use_inside_a_partial_parent_leaves_later_ones_whole():
    class Draft(SharedFieldsSerializer):
        task = serializers.UUIDField()

    class Envelope(serializers.Serializer):
        query = Draft()

    nested = Envelope(data={"query": {}}, partial=True)
    assert nested.is_valid()  # partial: the missing task is allowed there

    alone = Draft(data={})
    assert not alone.is_valid() and set(alone.errors) == {"task"}
    assert ContextQuerySerializer(data={"task": TASK}).is_valid()
