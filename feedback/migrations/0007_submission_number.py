"""``Submission.number``: the student's Nth submission of a task (SPEC §7,
turn 3), filled for the submissions that exist in submission order."""

from django.db import migrations, models

BATCH = 2000


def backfill(apps, schema_editor):
    Submission = apps.get_model("feedback", "Submission")
    rows = (
        Submission.objects.order_by("student_id", "task_id", "submission_seq")
        .values_list("pk", "student_id", "task_id")
        .iterator(chunk_size=BATCH)
    )
    pending, key, n = [], None, 0
    for pk, student_id, task_id in rows:
        n = n + 1 if (student_id, task_id) == key else 1
        key = (student_id, task_id)
        pending.append(Submission(pk=pk, number=n))
        if len(pending) >= BATCH:
            Submission.objects.bulk_update(pending, ["number"])
            pending = []
    if pending:
        Submission.objects.bulk_update(pending, ["number"])


class Migration(migrations.Migration):
    dependencies = [("feedback", "0006_attempt_awaiting_staff")]

    operations = [
        # Nullable: SQLite adds the column in place.
        migrations.AddField(
            model_name="submission",
            name="number",
            field=models.PositiveIntegerField(blank=True, null=True),
        ),
        migrations.RunPython(backfill, migrations.RunPython.noop),
    ]
