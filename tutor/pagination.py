import re

from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.pagination import CursorPagination, PageNumberPagination

# A position is a value of the integer sequence the list is ordered by.
_SEQ_POSITION = re.compile(r"-?\d{1,18}")


class DefaultPagination(PageNumberPagination):
    page_size = 50
    page_size_query_param = "page_size"
    max_page_size = 200


class SeqCursorPagination(CursorPagination):
    """Stable paging over a growing list (SPEC §11): offsets on a changing
    ordering duplicate and drop rows; a cursor on a unique seq does not.

    A cursor the server did not hand out -- not base64, or a position that is
    not an integer (``p=abc``, ``p=1.5``, a NUL) -- is a 400 on ``cursor``
    (SPEC §7), never a 404 nor a database error."""

    page_size = 50
    page_size_query_param = "page_size"
    max_page_size = 200
    invalid_cursor_message = "Invalid cursor: use the next or previous link of an earlier page."

    def decode_cursor(self, request):
        try:
            cursor = super().decode_cursor(request)
        except NotFound:
            cursor = False
        if cursor is False or (cursor is not None and not self._valid_position(cursor.position)):
            raise ValidationError({self.cursor_query_param: [self.invalid_cursor_message]}, code="invalid")
        return cursor

    @staticmethod
    def _valid_position(position) -> bool:
        return position is None or bool(_SEQ_POSITION.fullmatch(position))
