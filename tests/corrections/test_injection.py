"""The tutor context's reads (corrections.selectors.injection, SPEC §5, §10).

Two kinds of checks, on the database the suite runs on (CI runs it on SQLite
and on PostgreSQL):

- each prepared statement runs exactly the SQL its ORM queryset compiles to
  and returns the ORM's rows, in every shape it compiles to;
- the rows are the ones SPEC §5's rule picks, worked out here in plain Python
  over every row of randomly drawn courses, tasks, facts and memory items:
  the indexes the statements read (keys, task overlaps, token copies) must
  never change what the tutor is told.
"""

from __future__ import annotations

import random
import uuid
from datetime import UTC, datetime, timedelta

import pytest
from django.utils import timezone

from corrections.conf import setting
from corrections.models import (
    INJECTED_FACT_STATUSES,
    CorrectionType,
    Fact,
    FactStatus,
    MemoryItem,
    MemoryTier,
    MemoryToken,
    ProcessRule,
)
from corrections.relevance import task_query_tokens, task_text
from corrections.selectors.course_snapshot import course_facts_load, facts_from_snapshot, rules_from_snapshot
from corrections.selectors.injection import (
    FACTS,
    KEYED_MESSAGE_TOKENS,
    MEMORY,
    NO_SESSION,
    PROCESS_RULES,
    MessageLookup,
    facts_relevant,
    memory_for_context,
)
from corrections.selectors.memory_snapshot import memory_from_snapshot, user_memory_load
from corrections.services.memory import memory_tokens
from corrections.text import query_tokens, text_keys
from tests.factories import course_data, enroll
from tests.tutor.test_prepared import assert_matches_orm
from tutor.bench.corrections import bulk_facts
from tutor.chat.services import session_open
from tutor.coursefile import course_import, validate_course
from tutor.models import Task

WORDS = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet"]
WORDS += ["北京", "降雨量", "首都"]
EPOCH = datetime(2000, 1, 1, tzinfo=UTC)


def micros(moment) -> int:
    """A datetime as an integer, exact to the microsecond (a float is not)."""
    return (moment - EPOCH) // timedelta(microseconds=1)


def words(rng: random.Random, low: int, high: int) -> list[str]:
    return rng.sample(WORDS, rng.randint(low, high))


def random_course(rng: random.Random, slug: str, tasks: int = 3):
    data = course_data(slug, tasks=tasks)
    for spec in data["tasks"]:
        spec["goal"] = " ".join(words(rng, 0, 4))
        spec["materials"] = "、".join(words(rng, 0, 3))
    return course_import(spec=validate_course(data)).course


def random_facts(rng: random.Random, course, n: int) -> None:
    """``n`` facts of 1-4 topic tokens in every status, some pinned, some past the TTL."""
    bulk_facts(course, [(words(rng, 1, 4), f"fact {i}") for i in range(n)])
    now = timezone.now()
    for fact in Fact.objects.filter(course=course):
        status = rng.choice([s.value for s in FactStatus])
        Fact.objects.filter(pk=fact.pk).update(
            status=status,
            valid_to=now if status == FactStatus.SUPERSEDED else None,
            pinned=rng.random() < 0.2,
            confirmed_at=now - timedelta(days=rng.randint(0, 60), seconds=rng.randint(0, 3600)),
        )


def expected_facts(course, task: Task, message: str, limit: int) -> tuple[list, int]:
    """SPEC §5 over every fact of the course: relevant when the message or the
    task text contains min(INJECT_MIN_TOKENS, token count) of its tokens;
    verified or disputed; within the TTL unless pinned; ranked by overlap,
    then by the latest confirmation."""
    cap = setting("CORRECTIONS_QUERY_MAX_TOKENS")
    in_message, in_task = set(query_tokens(message, cap)), set(query_tokens(task_text(task), cap))
    fresh_since = timezone.now() - timedelta(days=setting("CORRECTIONS_FACT_TTL_DAYS"))
    ranked = []
    for fact in Fact.objects.filter(course=course, status__in=INJECTED_FACT_STATUSES):
        if not (fact.pinned or fact.confirmed_at >= fresh_since):
            continue
        topic = set(fact.topic_tokens)
        hits = max(len(topic & in_message), len(topic & in_task))
        if hits and hits >= min(setting("CORRECTIONS_INJECT_MIN_TOKENS"), fact.token_count):
            ranked.append((-hits, -micros(fact.confirmed_at), fact.pk.int, fact.pk))
    ranked.sort()
    return [row[-1] for row in ranked[:limit]], len(ranked)


def statement_selection(task: Task, message: str, limit: int):
    cap = setting("CORRECTIONS_QUERY_MAX_TOKENS")
    return facts_relevant(
        course_id=task.course_id,
        task_id=task.pk,
        message_tokens=query_tokens(message, cap),
        has_task_tokens=bool(task_query_tokens(task)),
        now=timezone.now(),
        limit=limit,
    )


def selected_facts(task: Task, message: str, limit: int) -> tuple[list, int]:
    """The facts the statement selects."""
    selection = statement_selection(task, message, limit)
    return [row["id"] for row in selection.rows], selection.total


def snapshot_facts(task: Task, message: str, limit: int) -> tuple[list, int]:
    """The facts the course's snapshot selects (corrections.selectors.course_snapshot),
    with the rows the statement returns for them."""
    cap = setting("CORRECTIONS_QUERY_MAX_TOKENS")
    selection = facts_from_snapshot(
        course_facts_load(task.course_id),
        task_id=task.pk,
        message_tokens=query_tokens(message, cap),
        now=timezone.now(),
        limit=limit,
    )
    ids = [row["id"] for row in selection.rows]
    statement = {row["id"]: row for row in statement_selection(task, message, limit).rows}
    assert [statement[i] for i in ids] == selection.rows  # the same columns and values
    return ids, selection.total


SELECTORS = [pytest.param(selected_facts, id="statement"), pytest.param(snapshot_facts, id="snapshot")]


@pytest.mark.django_db
@pytest.mark.parametrize("select", SELECTORS)
@pytest.mark.parametrize("min_tokens", [1, 2, 3])
def test_facts_are_those_the_rule_picks_at_any_min_tokens(settings, min_tokens, select):
    settings.CORRECTIONS_INJECT_MIN_TOKENS = min_tokens
    rng = random.Random(7 + min_tokens)
    course = random_course(rng, f"facts-{min_tokens}")
    random_facts(rng, course, 120)
    tasks = list(Task.objects.filter(course=course))
    cases = 0
    for _ in range(40):
        task = rng.choice(tasks)
        # Short messages are looked up by their keys, long ones by the token index.
        message = " ".join(words(rng, 0, 3)) if rng.random() < 0.7 else " ".join(WORDS + ["more"] * 3)
        limit = rng.randint(1, 8)
        assert select(task, message, limit) == expected_facts(course, task, message, limit), (
            task.goal,
            task.materials,
            message,
            limit,
        )
        cases += bool(expected_facts(course, task, message, limit)[1])
    assert cases >= 20  # most draws find something: the comparison is not vacuous


@pytest.mark.django_db
@pytest.mark.parametrize("select", SELECTORS)
def test_a_topic_that_repeats_a_token_is_never_relevant(task, select):
    bulk_facts(task.course, [(["alpha", "alpha"], "repeats alpha"), (["alpha", "bravo"], "alpha and bravo")])

    assert select(task, "alpha bravo", 8) == expected_facts(task.course, task, "alpha bravo", 8)
    assert [Fact.objects.get(pk=pk).statement for pk in select(task, "alpha bravo", 8)[0]] == [
        "alpha and bravo"
    ]


@pytest.mark.django_db
@pytest.mark.parametrize("select", SELECTORS)
def test_a_long_message_is_looked_up_through_the_token_index_with_the_same_result(settings, select):
    rng = random.Random(3)
    course = random_course(rng, "long-message")
    random_facts(rng, course, 80)
    task = Task.objects.filter(course=course).first()
    short = "alpha bravo charlie"
    long = short + " " + " ".join(f"filler{n}" for n in range(KEYED_MESSAGE_TOKENS))
    assert len(query_tokens(long, 400)) > KEYED_MESSAGE_TOKENS

    assert select(task, long, 8) == expected_facts(course, task, long, 8)
    assert select(task, long, 8) == select(task, short, 8)


def make_item(user, *, tier, kind, tokens, updated_at, session=None, expires_at=None, n=[0]):  # noqa: B006
    """A memory item as memory_remember leaves it (``session``: an id): its
    tokens carry its fields."""
    n[0] += 1
    item = MemoryItem.objects.create(
        user=user,
        tier=tier,
        kind=kind,
        session_id=session,
        content=f"memory {n[0]}",
        statement_key=f"t:{n[0]}",
        topic=" ".join(tokens),
        topic_tokens=tokens,
        token_count=len(tokens),
        expires_at=expires_at,
    )
    MemoryItem.objects.filter(pk=item.pk).update(updated_at=updated_at)
    item.updated_at = updated_at
    MemoryToken.objects.bulk_create(memory_tokens(item, tokens))
    return item


def random_memory(rng: random.Random, users, sessions) -> None:
    now = timezone.now()
    for user in users:
        for _ in range(rng.randint(10, 40)):
            tier = MemoryTier.SESSION if rng.random() < 0.3 else MemoryTier.USER
            kind = rng.choice([k.value for k in CorrectionType])
            expires = None
            if tier == MemoryTier.SESSION and rng.random() < 0.5:
                expires = now + timedelta(minutes=rng.choice([-30, 30]))
            make_item(
                user,
                tier=tier,
                kind=kind,
                tokens=words(rng, 0, 3),
                updated_at=now - timedelta(minutes=rng.randint(0, 10_000)),
                session=rng.choice(sessions[user.pk]) if tier == MemoryTier.SESSION else None,
                expires_at=expires,
            )


def expected_memory(user, session_id, message: str, prefs_limit: int, memories_limit: int):
    """SPEC §5 over every item of the user: preferences newest first; other
    items of this session (unexpired) first, then user memory, by overlap with
    the message, then newest first."""
    now = timezone.now()
    in_message = set(query_tokens(message, setting("CORRECTIONS_QUERY_MAX_TOKENS")))
    items = list(MemoryItem.objects.filter(user=user))
    preferences = sorted(
        (i for i in items if i.tier == MemoryTier.USER and i.kind == CorrectionType.PREFERENCE),
        key=lambda i: (-micros(i.updated_at), i.pk.int),
    )
    others = [
        i
        for i in items
        if i.kind != CorrectionType.PREFERENCE
        and (
            i.tier == MemoryTier.USER
            or (session_id and i.session_id == session_id and (i.expires_at is None or i.expires_at > now))
        )
    ]
    others.sort(
        key=lambda i: (
            0 if i.tier == MemoryTier.SESSION else 1,
            -len(set(i.topic_tokens) & in_message),
            -micros(i.updated_at),
            i.pk.int,
        )
    )
    return (
        ([i.pk for i in preferences[:prefs_limit]], len(preferences) if prefs_limit > 0 else 0),
        ([i.pk for i in others[:memories_limit]], len(others) if memories_limit > 0 else 0),
    )


def selected_memory(user, session_id, message: str, prefs_limit: int, memories_limit: int):
    selections = memory_for_context(
        user_id=user.pk,
        session_id=session_id,
        message_tokens=query_tokens(message, setting("CORRECTIONS_QUERY_MAX_TOKENS")),
        now=timezone.now(),
        preferences_limit=prefs_limit,
        memories_limit=memories_limit,
    )
    return tuple(([row["id"] for row in s.rows], s.total) for s in selections)


def snapshot_memory(user, session_id, message: str, prefs_limit: int, memories_limit: int):
    """The user's memory as the snapshot selects it (corrections.selectors.memory_snapshot),
    row for row what the statement returns."""
    arguments = {
        "session_id": session_id,
        "message_tokens": query_tokens(message, setting("CORRECTIONS_QUERY_MAX_TOKENS")),
        "now": timezone.now(),
        "preferences_limit": prefs_limit,
        "memories_limit": memories_limit,
    }
    selections = memory_from_snapshot(user_memory_load(user.pk), **arguments)
    statement = memory_for_context(user_id=user.pk, **arguments)
    for mine, theirs in zip(selections, statement, strict=True):
        assert (mine.rows, mine.total) == (theirs.rows, theirs.total)
    return tuple(([row["id"] for row in s.rows], s.total) for s in selections)


MEMORY_SELECTORS = [
    pytest.param(selected_memory, id="statement"),
    pytest.param(snapshot_memory, id="snapshot"),
]


@pytest.mark.django_db
@pytest.mark.parametrize("select", MEMORY_SELECTORS)
def test_memory_is_what_the_rule_picks_for_its_owner_only(course, select):
    rng = random.Random(11)
    tasks = list(Task.objects.filter(course=course)) + [
        Task.objects.create(course=course, slug="t2", title="Second")
    ]
    users = [enroll(course, f"mem{i}") for i in range(4)]
    sessions = {user.pk: [session_open(student=user, task=task)[0].pk for task in tasks] for user in users}
    random_memory(rng, users, sessions)
    checked = 0
    for _ in range(40):
        user = rng.choice(users)
        session_id = rng.choice([*sessions[user.pk], None])
        message = " ".join(words(rng, 0, 3))
        limits = rng.choice([(8, 8), (3, 2), (1, 5), (0, 4), (4, 0)])
        expected = expected_memory(user, session_id, message, *limits)
        assert select(user, session_id, message, *limits) == expected, (message, limits)
        checked += sum(bool(ids) for ids, _ in expected)
    assert checked >= 40


@pytest.mark.django_db
@pytest.mark.parametrize("select", MEMORY_SELECTORS)
def test_old_items_that_share_the_most_tokens_outrank_newer_ones(student, select):
    """Ranking by overlap reaches past the newest items: the best matches
    here are the oldest of forty."""
    now = timezone.now()
    best = [
        make_item(
            student,
            tier="user",
            kind="factual",
            tokens=["alpha", "bravo"],
            updated_at=now - timedelta(days=9, minutes=i),
        )
        for i in range(3)
    ]
    one_token = [
        make_item(
            student,
            tier="user",
            kind="factual",
            tokens=["alpha", f"x{i}"],
            updated_at=now - timedelta(days=5, minutes=i),
        )
        for i in range(5)
    ]
    for i in range(32):
        make_item(
            student, tier="user", kind="factual", tokens=[f"y{i}"], updated_at=now - timedelta(minutes=i)
        )

    (_, _), (ids, total) = select(student, None, "alpha bravo", 8, 4)

    assert ids == [best[0].pk, best[1].pk, best[2].pk, one_token[0].pk]
    assert total == 40


# --- each prepared statement is its ORM queryset ------------------------------------------


@pytest.mark.django_db
def test_the_facts_statement_matches_the_orm_in_every_lookup(course, task):
    rng = random.Random(5)
    random_facts(rng, course, 40)
    tokens = query_tokens("alpha bravo charlie", 400)
    common = {
        "course_id": course.pk,
        "task_id": task.pk,
        "min_tokens": 2,
        "fresh_since": timezone.now() - timedelta(days=30),
        "limit": 8,
    }
    keyed = {"message_tokens": tokens, "message_keys": text_keys(tokens)}
    assert_matches_orm(FACTS, lookup=MessageLookup.KEYS, **keyed, **common)
    assert_matches_orm(FACTS, lookup=MessageLookup.KEYS, **keyed, **{**common, "min_tokens": 3})
    assert_matches_orm(FACTS, lookup=MessageLookup.TOKENS, message_tokens=tokens, message_keys=[], **common)
    assert_matches_orm(FACTS, lookup=MessageLookup.NONE, message_tokens=[], message_keys=[], **common)
    nothing = {"message_tokens": ["nothing"], "message_keys": ["nothing"]}
    assert assert_matches_orm(FACTS, lookup=MessageLookup.KEYS, **nothing, **common) == []


@pytest.mark.django_db
def test_the_memory_statement_matches_the_orm_with_and_without_a_session_or_message(task, student):
    session, _ = session_open(student=student, task=task)
    now = timezone.now()
    for i, (tier, kind) in enumerate(
        [("user", "preference"), ("user", "factual"), ("session", "negative"), ("user", "process")] * 3
    ):
        make_item(
            student,
            tier=tier,
            kind=kind,
            tokens=["alpha", f"w{i}"],
            updated_at=now - timedelta(minutes=i),
            session=session.pk if tier == "session" else None,
        )
    for session_id in (session.pk, NO_SESSION):
        for tokens in (["alpha", "bravo"], []):
            rows = assert_matches_orm(
                MEMORY,
                user_id=student.pk,
                session_id=session_id,
                message_tokens=tokens,
                now=now,
                preferences_limit=2,
                memories_limit=3,
                by_message=bool(tokens),
            )
            assert rows and {row["section"] for row in rows} == {0, 1}


@pytest.mark.django_db
def test_the_process_rules_statement_matches_the_orm(course, staff):
    for n in range(3):
        ProcessRule.objects.create(
            course=course, statement=f"rule {n}", statement_key=f"t:{n}", approved_by=staff
        )

    rows = assert_matches_orm(PROCESS_RULES, course_id=course.pk, limit=2)

    assert [row["statement"] for row in rows] == ["rule 0", "rule 1"]
    assert rows[0]["matched_total"] == 3
    snapshot = rules_from_snapshot(course_facts_load(course.pk), limit=2)
    assert (snapshot.rows, snapshot.total) == (rows, 3)
    assert assert_matches_orm(PROCESS_RULES, course_id=uuid.uuid4(), limit=2) == []


@pytest.mark.django_db
def test_messages_of_many_lengths_share_a_few_compilations(task, student):
    MEMORY.compiled_shapes.clear()
    FACTS.compiled_shapes.clear()
    for n in range(13, 33):  # long messages: looked up through the token index
        message = " ".join(f"word{i}" for i in range(n))
        selected_memory(student, None, message, 8, 8)
        selected_facts(task, message, 8)

    # Lists are padded to a power of two: 13-16 and 17-32 tokens, one compilation each.
    assert len(MEMORY.compiled_shapes) == 2 and len(FACTS.compiled_shapes) == 2
