"""The corrections seeders of ``manage.py bench_context`` (SPEC §10: 10k facts)."""

from __future__ import annotations

from io import StringIO

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import CommandError

from corrections.models import Fact, FactSupporter, FactToken, MemoryItem, MemoryToken
from tests.factories import client_for
from tutor.bench.seeding import CONTEXT_MESSAGE
from tutor.models import Task

TINY = ["--submissions", "50", "--students", "3", "--messages", "4", "--requests", "2", "--warmup", "0"]
# The ingest comparison runs in tests/tutor/test_bench_command.py only.
TINY += ["--ingest", "0", "--reviews", "0"]
# The lessons seeder's default is 10k lessons; these tests are about facts and memories.
TINY += ["--lessons", "0"]
# The live course's phases (tests/tutor/test_bench_command.py) at their smallest.
TINY += ["--first", "1", "--new-sessions", "1", "--changes", "1", "--mixed", "1"]


def run_bench(*args: str) -> str:
    out = StringIO()
    call_command("bench_context", *args, stdout=out)
    return out.getvalue()


@pytest.mark.django_db
def test_bench_seeds_facts_and_memories_that_the_measured_context_uses():
    out = run_bench(*TINY, "--facts", "600", "--memories", "80", "--keep")

    assert "facts: 600/600 (100%)" in out and "memories: 80/80 (100%)" in out
    assert Fact.objects.filter(course__slug="bench").count() == 600
    assert FactToken.objects.count() == sum(f.token_count for f in Fact.objects.all())
    assert FactSupporter.objects.count() == 600
    assert MemoryItem.objects.count() == 80 and MemoryToken.objects.count() >= 80
    # Some facts share two words with the benchmark's message: the context carries them.
    student = get_user_model().objects.get(username="bench-student-00001")
    task = Task.objects.get(course__slug="bench", slug="t01")
    preview = (
        client_for(student).get("/api/tutor/context/", {"task": task.pk, "message": CONTEXT_MESSAGE}).json()
    )
    assert preview["facts"] and preview["preferences"]


@pytest.mark.django_db
def test_without_keep_the_facts_and_memories_go_too():
    run_bench(*TINY, "--facts", "30", "--memories", "10")

    assert not Fact.objects.exists() and not FactToken.objects.exists() and not MemoryItem.objects.exists()


@pytest.mark.django_db
def test_a_negative_size_is_refused():
    with pytest.raises(CommandError, match="--facts must be at least 0, got -1"):
        run_bench(*TINY, "--facts", "-1")
    assert not Fact.objects.exists()
