"""Serializer fields shared by the apps' APIs."""

from rest_framework import serializers


class StrictCharField(serializers.CharField):
    """A CharField that refuses numbers: DRF's own turns ``5`` into ``"5"``,
    which would store a text the client never sent (SPEC §7: a field of the
    wrong type is a 400 on that field)."""

    def to_internal_value(self, data):
        if not isinstance(data, str):
            self.fail("invalid")
        return super().to_internal_value(data)
