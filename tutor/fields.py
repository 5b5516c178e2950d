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


# Fields that keep nothing of the instance they are bound to: one bound set
# can serve every instance of their serializer.
_STATELESS = (
    serializers.BooleanField,
    serializers.CharField,
    serializers.ChoiceField,
    serializers.DateTimeField,
    serializers.IntegerField,
    serializers.JSONField,
    serializers.UUIDField,
)
_shared: dict[type, object] = {}


# A serializer whose fields are built and bound once per class.
#
# DRF deep-copies a serializer's declared fields for every instance, so that
# binding one never touches another's; each copy runs the field's
# ``__init__`` again (its validators and all): about half of what
# validating the context preview's query costs. A serializer made only of
# plain fields -- which read and validate their value and keep nothing of
# the instance -- shares the first instance's bound set instead; a subclass
# that adds any other field (a nested serializer, a method field, a hidden
# default) gets DRF's own copies, as if it did not derive from this one.
# What is validated and written is DRF's own code either way.
# (A comment, not a docstring: the OpenAPI document would give it to every subclass.)
class SharedFieldsSerializer(serializers.Serializer):
    @property
    def fields(self):
        cls = type(self)
        # A field asks its root whether the validation is partial: a partial
        # instance neither takes nor gives the shared set.
        fields = None if self.partial else _shared.get(cls)
        if fields is None:
            fields = self.__dict__.get("_own_fields") or super().fields
            self.__dict__["_own_fields"] = fields
            if not self.partial and all(isinstance(field, _STATELESS) for field in fields.values()):
                _shared[cls] = fields
        return fields
