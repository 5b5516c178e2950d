from rest_framework.pagination import CursorPagination, PageNumberPagination


class DefaultPagination(PageNumberPagination):
    page_size = 50
    page_size_query_param = "page_size"
    max_page_size = 200


class SeqCursorPagination(CursorPagination):
    """Stable paging over a growing list (SPEC §11): offsets on a changing
    ordering duplicate and drop rows; a cursor on a unique seq does not."""

    page_size = 50
    page_size_query_param = "page_size"
    max_page_size = 200
