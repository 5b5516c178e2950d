"""Evidence summaries for submission lists, and a DELETE guard on terminal
review attempts (SPEC §2: deleted only by named, audited services).

The guard lets a DELETE of a terminal attempt through only while a row of
``feedback_attemptpurgepermit`` is visible to the deleting transaction;
``feedback.services.retention.attempts_purge`` (and ``flush``) insert and
remove that row inside their own transaction, so no other transaction ever
sees one.
"""

import json

from django.db import migrations, models

TERMINAL = "('completed', 'unavailable', 'invalid')"

POSTGRES_UP = f"""
CREATE OR REPLACE FUNCTION feedback_attempt_delete_guard() RETURNS trigger AS $$
BEGIN
    IF OLD.status IN {TERMINAL} AND NOT EXISTS (SELECT 1 FROM feedback_attemptpurgepermit) THEN
        RAISE EXCEPTION 'review attempt % is terminal: only an audited purge deletes it', OLD.id
            USING ERRCODE = 'integrity_constraint_violation';
    END IF;
    RETURN OLD;
END;
$$ LANGUAGE plpgsql;
CREATE TRIGGER feedback_attempt_delete_guard
    BEFORE DELETE ON feedback_reviewattempt
    FOR EACH ROW EXECUTE FUNCTION feedback_attempt_delete_guard();
"""
POSTGRES_DOWN = """
DROP TRIGGER IF EXISTS feedback_attempt_delete_guard ON feedback_reviewattempt;
DROP FUNCTION IF EXISTS feedback_attempt_delete_guard();
"""
SQLITE_UP = f"""
CREATE TRIGGER feedback_attempt_delete_guard
BEFORE DELETE ON feedback_reviewattempt
WHEN OLD.status IN {TERMINAL} AND NOT EXISTS (SELECT 1 FROM feedback_attemptpurgepermit)
BEGIN
    SELECT RAISE(ABORT, 'review attempt is terminal: only an audited purge deletes it');
END;
"""
SQLITE_DOWN = "DROP TRIGGER IF EXISTS feedback_attempt_delete_guard;"


def install_guard(apps, schema_editor):
    vendor = schema_editor.connection.vendor
    if vendor == "postgresql":
        # params=None: the "%" of RAISE EXCEPTION is PL/pgSQL, not a placeholder.
        schema_editor.execute(POSTGRES_UP, params=None)
    elif vendor == "sqlite":
        schema_editor.execute(SQLITE_UP)


def drop_guard(apps, schema_editor):
    vendor = schema_editor.connection.vendor
    if vendor == "postgresql":
        schema_editor.execute(POSTGRES_DOWN)
    elif vendor == "sqlite":
        schema_editor.execute(SQLITE_DOWN)


def create_permit_table(apps, schema_editor):
    schema_editor.create_model(apps.get_model("feedback", "AttemptPurgePermit"))


def drop_permit_table(apps, schema_editor):
    schema_editor.delete_model(apps.get_model("feedback", "AttemptPurgePermit"))


def _utf8_len(text):
    return len(text.encode("utf-8"))


def summary(evidence):
    # A frozen copy of feedback.evidence.evidence_summary as of this migration.
    files = evidence.get("files") or {}
    ci = evidence.get("ci") or None
    return {
        "report_chars": len(evidence.get("report") or ""),
        "file_count": len(files),
        "files": [{"path": path, "bytes": _utf8_len(text)} for path, text in sorted(files.items())],
        "total_bytes": _utf8_len(json.dumps(evidence, ensure_ascii=False, separators=(",", ":"))),
        "ci_status": ci.get("status") if ci else None,
        "ci_exit_code": ci.get("exit_code") if ci else None,
    }


def backfill_summaries(apps, schema_editor):
    Submission = apps.get_model("feedback", "Submission")
    batch = []
    for submission in Submission.objects.only("id", "evidence").iterator(chunk_size=1000):
        submission.evidence_summary = summary(submission.evidence)
        batch.append(submission)
        if len(batch) == 1000:
            Submission.objects.bulk_update(batch, ["evidence_summary"])
            batch = []
    if batch:
        Submission.objects.bulk_update(batch, ["evidence_summary"])


class Migration(migrations.Migration):
    dependencies = [
        ("feedback", "0004_agreement_and_regrade_requests"),
    ]

    operations = [
        migrations.CreateModel(
            name="AttemptPurgePermit",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("reason", models.CharField(max_length=200)),
                ("created_at", models.DateTimeField(auto_now_add=True)),
            ],
            options={"managed": False, "db_table": "feedback_attemptpurgepermit"},
        ),
        # The model is unmanaged (flush must not empty it), so its table is made here.
        migrations.RunPython(create_permit_table, drop_permit_table),
        migrations.AddField(
            model_name="submission",
            name="evidence_summary",
            field=models.JSONField(default=dict),
        ),
        migrations.RunPython(backfill_summaries, migrations.RunPython.noop),
        migrations.RunPython(install_guard, drop_guard),
    ]
