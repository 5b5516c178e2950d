"""Roster paging the tool owns (SPEC §12): RFC 8288 ``Link`` headers, the next
URL exactly as sent, and nothing changing unless the roster was read whole
and consistent (a page error, a repeated page, differences without a full
sync, a mass removal), each refusal audited and exiting non-zero."""

from __future__ import annotations

import pytest
from django.core.management import CommandError

from tests.lti.platform import INSTRUCTOR, LEARNER
from tests.lti.test_roster import member, roles, sync
from tutor.lti.models import Context
from tutor.lti.nrps import next_page, parse_link_header
from tutor.models import AuditEvent

pytestmark = pytest.mark.django_db


# --- RFC 8288 -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "header",
    [
        '<https://lms.example/r?page=2>; rel="next"',
        "<https://lms.example/r?page=2>; rel=next",
        "<https://lms.example/r?page=2>;rel=NEXT",
        '<https://lms.example/r?page=2> ; title="Page 2" ; rel="next"',
        '<https://lms.example/r?page=1>; rel="first", <https://lms.example/r?page=2>; rel="next"',
        '<https://lms.example/r?page=9>; rel="last prev", <https://lms.example/r?page=2>; rel="Next last"',
        '<https://lms.example/r?page=1>; rel=prev; title="a, b; c", <https://lms.example/r?page=2>; rel=next',
        '<https://lms.example/r?page=2>; anchor="#x"; rel="next"; rel="prev"',
    ],
)
def test_next_is_found_in_every_form_rfc_8288_allows(header):
    assert next_page({"Link": header}, base="https://lms.example/r") == "https://lms.example/r?page=2"


def test_the_next_url_is_kept_exactly_as_sent():
    header = "<https://lms.example/ctx/Course-ABC/members?Cursor=AbCd%3D%3D&Limit=50>; rel=next"

    assert next_page({"Link": header}, base="") == (
        "https://lms.example/ctx/Course-ABC/members?Cursor=AbCd%3D%3D&Limit=50"
    )


def test_a_relative_target_is_resolved_against_its_page():
    assert next_page(
        {"Link": "</ctx/Course-ABC/members?page=2>; rel=next"}, base="https://lms.example/x?page=1"
    ) == ("https://lms.example/ctx/Course-ABC/members?page=2")


@pytest.mark.parametrize(
    "header",
    ["", '<https://lms.example/r?page=0>; rel="prev"', "rel=next", '<https://lms.example/r>; rel="nextpage"'],
)
def test_no_next(header):
    assert next_page({"Link": header}, base="") is None


def test_parse_keeps_every_link_and_its_parameters():
    links = parse_link_header(
        '<a>; rel="next"; title*=UTF-8\'de\'n%c3%a4chstes, <b>;rel=last;type="text/html"'
    )

    assert [(link.target, link.params) for link in links] == [
        ("a", {"rel": "next", "title*": "UTF-8'de'n%c3%a4chstes"}),
        ("b", {"rel": "last", "type": "text/html"}),
    ]


# --- paging against the simulated platform -------------------------------------------------------


def many(n: int) -> list[dict]:
    return [member("teacher-1", INSTRUCTOR)] + [member(f"s{i}") for i in range(n - 1)]


@pytest.mark.parametrize(
    "template",
    ['<{url}>; rel="next"', "<{url}>; rel=next", "<{url}>; REL=Next", '<{url}>; title=x; rel="next last"'],
)
def test_a_paged_roster_is_read_whole_in_each_link_form(launched, course, template):
    launched.page_size = 2
    launched.link_template = template
    launched.members = many(7)

    out, err = sync()

    assert len(roles()) == 7
    assert "read the whole roster in 4 page(s)" in err
    assert sum(r.path == "/memberships" for r in launched.requests) == 4


def test_upper_case_and_cursor_urls_are_followed_as_sent(launched, course):
    launched.page_size = 2
    launched.link_template = "<{url}>; rel=next"
    launched.page_url = lambda start: f"{launched.base_url}/ctx/Course-ABC/memberships?Cursor=AbCd{start}"
    launched.members = many(6)

    sync()

    assert len(roles()) == 6
    pages = [r for r in launched.requests if r.path.endswith("/memberships")]
    assert [r.path for r in pages] == [
        "/memberships",
        "/ctx/Course-ABC/memberships",
        "/ctx/Course-ABC/memberships",
    ]


def test_a_page_failing_halfway_changes_nobody_and_exits_non_zero(launched, course):
    launched.members = many(3)
    sync()
    before = roles()
    launched.page_size = 2
    launched.members = many(7)[:1] + [member(f"new{i}") for i in range(6)]  # everyone else replaced
    launched.script_memberships(200, 500)

    with pytest.raises(CommandError, match="answered 500 on page 2; nothing was changed"):
        sync()

    assert roles() == before
    refusal = AuditEvent.objects.get(event="lti_roster_refused")
    assert refusal.to_state == "http_500"
    assert refusal.extra["context_id"] == "course-ctx-1"


def test_a_next_link_back_to_a_read_page_is_refused(launched, course):
    launched.page_size = 2
    launched.page_url = lambda start: f"{launched.memberships_url}?offset=2"  # page 2 names itself next
    launched.members = many(5)

    with pytest.raises(CommandError, match="page 3 points back to a page already read"):
        sync()

    assert roles() == {"teacher-1": "staff"}  # the launch's enrolment alone
    assert AuditEvent.objects.get(event="lti_roster_refused").to_state == "repeated_page"


def test_a_member_on_two_pages_means_the_roster_moved_while_read(launched, course):
    launched.page_size = 2
    # Offset paging over a list that shifted: page 2 starts one member early.
    launched.page_url = lambda start: f"{launched.memberships_url}?offset={start - 1}"
    launched.members = many(5)

    with pytest.raises(CommandError, match="repeats 1 member"):
        sync()

    assert AuditEvent.objects.get(event="lti_roster_refused").to_state == "repeated_members"


def test_more_pages_than_the_cap_is_refused(launched, course, settings):
    settings.LTI_ROSTER_MAX_PAGES = 3
    launched.page_size = 1
    launched.members = many(4)

    with pytest.raises(CommandError, match="more than LTI_ROSTER_MAX_PAGES=3 pages"):
        sync()

    assert AuditEvent.objects.get(event="lti_roster_refused").to_state == "too_many_pages"


# --- differences and the removal share ------------------------------------------------------------


def test_differences_without_a_previous_full_sync_change_nothing(launched, course):
    launched.members = [member("teacher-1", INSTRUCTOR), member("s1"), member("gone", status="Deleted")]

    with pytest.raises(CommandError, match="membership differences only"):
        sync()

    assert roles() == {"teacher-1": "staff"}
    assert AuditEvent.objects.get(event="lti_roster_refused").to_state == "differences_without_full_sync"


def test_differences_after_a_full_sync_apply_only_what_they_list(launched, course):
    launched.members = many(8)
    sync()
    assert Context.objects.get(context_id="course-ctx-1").roster_synced_at is not None

    # Only changes: s1 left, n1 joined; everyone unlisted stays.
    launched.members = [member("s1", status="Deleted"), member("n1")]
    out, err = sync()

    assert "1 enrolled" in out and "1 removed" in out
    assert "read membership differences in 1 page(s)" in err
    assert set(roles()) == {"teacher-1", "n1"} | {f"s{i}" for i in range(7)} - {"s1"}
    assert AuditEvent.objects.filter(event="lti_roster_synced").latest("id").to_state == "differences"


def test_a_roster_removing_too_many_changes_nothing_without_the_flag(launched, course):
    launched.members = many(8)
    sync()
    launched.members = many(5)  # 3 of 8 leave: 37.5 % > 25 %

    with pytest.raises(CommandError, match="would remove 3 of the 8 people .* --allow-mass-removal"):
        sync()

    assert len(roles()) == 8
    refusal = AuditEvent.objects.get(event="lti_roster_refused")
    assert (refusal.to_state, refusal.extra["would_remove"], refusal.extra["enrolled"]) == (
        "mass_removal",
        3,
        8,
    )

    from io import StringIO

    from django.core.management import call_command

    out = StringIO()
    call_command("lti_sync_roster", "se-101", "--allow-mass-removal", stdout=out, stderr=StringIO())

    assert "3 removed" in out.getvalue()
    assert len(roles()) == 5
    assert AuditEvent.objects.filter(event="lti_roster_synced").latest("id").extra["mass_removal_allowed"]


def test_removals_within_the_share_go_through(launched, course):
    launched.members = many(8)
    sync()
    launched.members = many(6)  # 2 of 8: 25 %

    out, _ = sync()

    assert "2 removed" in out


def test_a_cached_token_the_platform_dropped_is_replaced(launched, course):
    launched.members = [member("teacher-1", INSTRUCTOR), member("s1", LEARNER)]
    sync()
    launched.issued_tokens.clear()  # the platform restarted and forgot its tokens

    sync()

    assert len(roles()) == 2
    assert sum(r.path == "/token" for r in launched.requests) == 2
