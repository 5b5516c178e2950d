"""``ReviewAttempt.awaiting_staff``: the criteria NEED_REVIEW for a reason staff
can settle (SPEC §8), filled for the attempts that exist. Terminal attempts
are immutable (trigger of 0002): the backfill sets the trigger aside for its
own UPDATEs only, inside this migration's transaction on PostgreSQL."""

import json

from django.db import migrations, models

# The rule as of this migration (feedback.results.criteria_awaiting_staff).
STAFF_SETTLED_BASES = ("none", "model")

SQLITE_TRIGGER = """
CREATE TRIGGER feedback_attempt_immutable
BEFORE UPDATE ON feedback_reviewattempt
WHEN OLD.status IN ('completed', 'unavailable', 'invalid')
BEGIN
    SELECT RAISE(ABORT, 'review attempt is terminal and immutable');
END;
"""


def marks(result):
    if not isinstance(result, dict) or not isinstance(result.get("criteria"), list):
        return None
    ids = sorted(
        c["rubric_id"]
        for c in result["criteria"]
        if isinstance(c, dict)
        and isinstance(c.get("rubric_id"), str)
        and c.get("status") == "NEED_REVIEW"
        and c.get("basis") in STAFF_SETTLED_BASES
    )
    return " ".join(json.dumps(i) for i in ids) or None


def backfill(apps, schema_editor):
    ReviewAttempt = apps.get_model("feedback", "ReviewAttempt")
    waiting = [
        (pk, found)
        for pk, result in ReviewAttempt.objects.filter(result__isnull=False)
        .values_list("pk", "result")
        .iterator(chunk_size=2000)
        if (found := marks(result)) is not None
    ]
    if not waiting:
        return
    vendor = schema_editor.connection.vendor
    if vendor == "postgresql":
        schema_editor.execute("ALTER TABLE feedback_reviewattempt DISABLE TRIGGER feedback_attempt_immutable")
    elif vendor == "sqlite":
        schema_editor.execute("DROP TRIGGER IF EXISTS feedback_attempt_immutable")
    for pk, found in waiting:
        ReviewAttempt.objects.filter(pk=pk).update(awaiting_staff=found)
    if vendor == "postgresql":
        schema_editor.execute("ALTER TABLE feedback_reviewattempt ENABLE TRIGGER feedback_attempt_immutable")
    elif vendor == "sqlite":
        schema_editor.execute(SQLITE_TRIGGER)


class Migration(migrations.Migration):
    dependencies = [("feedback", "0005_evidence_summary_and_delete_guard")]

    operations = [
        # Nullable: SQLite adds the column in place (a rebuilt table would
        # lose the triggers of 0002 and 0005).
        migrations.AddField(
            model_name="reviewattempt",
            name="awaiting_staff",
            field=models.TextField(blank=True, null=True),
        ),
        migrations.RunPython(backfill, migrations.RunPython.noop),
    ]
