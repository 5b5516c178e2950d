"""Drop ``LessonStageCount`` and the triggers that kept it (migration 0004).

Counters kept by row triggers lock the counter rows of both keys a lesson
moves between until commit, so two transactions making opposite moves
deadlock on PostgreSQL; their rows also collide with ``loaddata`` and are
lost when SQLite rebuilds the lesson table. Recall counts a scope's lessons
from ``lesson_scope_status_idx`` again (lessons.selectors.statement).

Reversible: migrating back to 0004 reinstalls the triggers and refills the
counts from the stored lessons."""

from importlib import import_module

from django.db import migrations

stage_counts = import_module("lessons.migrations.0004_stage_counts")


class Migration(migrations.Migration):
    dependencies = [("lessons", "0004_stage_counts")]

    operations = [
        # The triggers first: a trigger left on the lesson table would write to a dropped table.
        migrations.RunPython(stage_counts.drop_triggers, stage_counts.install_triggers),
        migrations.DeleteModel(name="LessonStageCount"),
    ]
