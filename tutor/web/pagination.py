import re
from base64 import b64decode
from urllib import parse

from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import models
from rest_framework.exceptions import ValidationError
from rest_framework.pagination import Cursor, CursorPagination, PageNumberPagination

# What a cursor this server hands out holds (DRF's encoding: base64 of
# "o=<offset>&r=<0|1>&p=<position>"); a position is a value of the integer
# sequence the list is ordered by.
_CURSOR_KEYS = {"o", "r", "p"}
_OFFSET = re.compile(r"\d{1,9}")
_SEQ_POSITION = re.compile(r"-?\d{1,18}")


class DefaultPagination(PageNumberPagination):
    page_size = 50
    page_size_query_param = "page_size"
    max_page_size = 200


class SeqCursorPagination(CursorPagination):
    """Stable paging over a growing list (SPEC §11): offsets on a changing
    ordering duplicate and drop rows; a cursor on a unique seq does not.

    Only a cursor of the shape this server hands out is accepted. Anything
    else -- not base64, other keys, a position that is not a value of the
    ordering field (``p=abc`` or ``p=1.5`` for a sequence, ``p=9999`` for a
    time, a NUL) -- is a 400 on ``cursor`` (SPEC §7), never a 404 and never
    a value that reaches the database."""

    page_size = 50
    page_size_query_param = "page_size"
    max_page_size = 200
    invalid_cursor_message = "Invalid cursor: use the next or previous link of an earlier page."

    def decode_cursor(self, request):
        encoded = request.query_params.get(self.cursor_query_param)
        if encoded is None:
            return None
        try:
            text = b64decode(encoded.encode("ascii"), validate=True).decode("ascii")
            tokens = parse.parse_qs(text, keep_blank_values=True, strict_parsing=True) if text else {}
        except ValueError:  # binascii.Error, UnicodeError and parse_qs' errors are ValueErrors
            raise self._invalid() from None
        if set(tokens) - _CURSOR_KEYS or any(len(values) != 1 for values in tokens.values()):
            raise self._invalid()
        offset = tokens.get("o", ["0"])[0]
        reverse = tokens.get("r", ["0"])[0]
        position = tokens.get("p", [None])[0]
        if not _OFFSET.fullmatch(offset) or reverse not in ("0", "1"):
            raise self._invalid()
        if position is not None and not self._is_position(position):
            raise self._invalid()
        return Cursor(offset=min(int(offset), self.offset_cutoff), reverse=reverse == "1", position=position)

    def paginate_queryset(self, queryset, request, view=None):
        self._model = queryset.model  # the ordering field's type checks a cursor's position
        return super().paginate_queryset(queryset, request, view)

    def _is_position(self, position: str) -> bool:
        ordering = self.ordering if isinstance(self.ordering, str) else self.ordering[0]
        field = self._model._meta.get_field(ordering.lstrip("-"))
        if isinstance(field, models.IntegerField):  # AutoField and BigIntegerField too
            return bool(_SEQ_POSITION.fullmatch(position))
        try:
            field.to_python(position)
        except (DjangoValidationError, ValueError, TypeError):
            return False
        return "\x00" not in position

    def _invalid(self) -> ValidationError:
        return ValidationError({self.cursor_query_param: [self.invalid_cursor_message]}, code="invalid")
