"""The history rule of SPEC §4: the 12 messages before the current one, kept
newest first while the running total -- starting from the current message's
length -- stays ≤ 6000 characters, stopping at the first that does not fit."""

from tutor.chat.history import HISTORY_MAX_CHARS, HISTORY_MAX_MESSAGES, select_history


def msgs(*lengths: int) -> list[dict]:
    """Alternating user/assistant messages, oldest first, of the given lengths;
    each names its index so tests can tell them apart."""
    out = []
    for i, n in enumerate(lengths):
        tag = f"#{i}:"
        out.append({"role": "user" if i % 2 == 0 else "assistant", "content": (tag + "x" * n)[:n]})
    return out


def test_limits_are_the_spec_numbers():
    assert (HISTORY_MAX_MESSAGES, HISTORY_MAX_CHARS) == (12, 6000)


def test_short_history_is_kept_whole_and_in_order():
    earlier = msgs(10, 20, 30)

    kept, omitted = select_history(earlier, "hi")

    assert kept == earlier
    assert omitted == 0


def test_only_the_twelve_newest_are_candidates():
    earlier = msgs(*[10] * 20)

    kept, omitted = select_history(earlier, "hi")

    assert kept == earlier[-12:]
    # The caller passes at most 12 candidates; omitted counts only those.
    assert omitted == 0


def test_running_total_starts_from_the_current_message():
    earlier = msgs(1000, 1000, 1000)
    current = "q" * 3500

    kept, omitted = select_history(earlier, current)

    # 3500 + 1000 + 1000 = 5500 fits; + 1000 = 6500 does not.
    assert kept == earlier[1:]
    assert omitted == 1


def test_total_equal_to_the_limit_is_kept():
    earlier = msgs(2000, 3000)
    current = "q" * 1000

    kept, _ = select_history(earlier, current)

    assert kept == earlier  # 1000 + 3000 + 2000 == 6000


def test_stops_at_the_first_message_that_does_not_fit():
    # Newest first: 100 fits, 5950 does not -- the small, older ones are not
    # taken even though they would fit: no gaps in the conversation.
    earlier = msgs(10, 10, 5950, 100)

    kept, omitted = select_history(earlier, "hello")

    assert kept == earlier[-1:]
    assert omitted == 3


def test_current_message_over_the_limit_leaves_no_history():
    earlier = msgs(5, 5)

    kept, omitted = select_history(earlier, "q" * 6001)

    assert kept == []
    assert omitted == 2


def test_preview_without_a_message_counts_from_zero():
    earlier = msgs(3000, 3000)

    kept, omitted = select_history(earlier, None)

    assert kept == earlier
    assert omitted == 0


def test_settings_override_the_limits(settings):
    settings.HISTORY_MAX_MESSAGES = 2
    settings.HISTORY_MAX_CHARS = 50
    earlier = msgs(10, 10, 10, 10)

    kept, omitted = select_history(earlier, "q" * 25)

    assert kept == earlier[-2:]
    assert omitted == 0
