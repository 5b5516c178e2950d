"""Serializer fields shared by the apps' APIs."""

from rest_framework import serializers

from tutor.kernel.readable import nothing_to_read

MESSAGE_MAX_CHARS = 8000  # SPEC §4: content 1-8000 characters


class StrictCharField(serializers.CharField):
    """A CharField that refuses numbers: DRF's own turns ``5`` into ``"5"``,
    which would store a text the client never sent (SPEC §7: a field of the
    wrong type is a 400 on that field)."""

    def to_internal_value(self, data):
        if not isinstance(data, str):
            self.fail("invalid")
        return super().to_internal_value(data)


class MessageTextField(StrictCharField):
    """A text a user writes to the tutor, kept exactly as sent (no trimming:
    its spaces and line breaks are the user's), but blank when there is
    nothing in it to read -- only white space, controls and invisible
    characters (SPEC §7: bad input is a 400 on the field and stores nothing)."""

    def __init__(self, **kwargs):
        kwargs.setdefault("trim_whitespace", False)
        super().__init__(**kwargs)

    def to_internal_value(self, data):
        value = super().to_internal_value(data)
        # An overlong text is refused by its length (checked after this).
        if (self.max_length is None or len(value) <= self.max_length) and nothing_to_read(value):
            self.fail("blank")
        return value


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
_UNSET = object()
_shared: dict[type, object] = {}


# A serializer whose fields are built and bound once per class.
#
# DRF deep-copies a serializer's declared fields for every instance, so that
# binding one never touches another's; each copy runs the field's
# ``__init__`` again (its validators and all): about half of what
# validating the context preview's query costs. A top-level, non-partial
# instance of a serializer made only of plain fields -- which read and
# validate their value and keep nothing of the instance, with no default or
# validator that asks for the context (the request's user, a uniqueness
# check) -- uses one set bound to an empty instance of its class, made once:
# no request's data, instance or context is ever reachable from it. Any
# other serializer, and any nested or partial instance, gets DRF's own
# copies. What is validated and written is DRF's own code either way.
# (A comment, not a docstring: the OpenAPI document would give it to every subclass.)
class SharedFieldsSerializer(serializers.Serializer):
    @property
    def fields(self):
        own = self.__dict__.get("_own_fields")
        if own is not None:
            return own
        if self.parent is None and not self.partial:
            shared = _shared.get(type(self), _UNSET)
            if shared is _UNSET:
                shared = _shared[type(self)] = _shareable(type(self))
            if shared is not None:
                return shared
        own = super().fields
        self.__dict__["_own_fields"] = own
        return own


def _needs_context(thing) -> bool:
    return bool(getattr(thing, "requires_context", False))


def _shareable(cls):
    """The fields of an empty instance of ``cls``, or None when one of them
    may not be shared."""
    empty = cls()
    fields = super(SharedFieldsSerializer, empty).fields
    for field in fields.values():
        if not isinstance(field, _STATELESS) or _needs_context(field.default):
            return None
        if any(_needs_context(validator) for validator in field.validators):
            return None
    return fields
