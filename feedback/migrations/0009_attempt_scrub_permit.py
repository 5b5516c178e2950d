"""The one UPDATE a terminal review attempt still takes (SPEC §2, §13): an
erasure's removal of a student's free text from its result.

The immutability trigger of migration 0002 (recreated by 0006 on SQLite)
refused every UPDATE of a terminal attempt. It now lets one through when a row of
``feedback_attemptscrubpermit`` names the attempt (the erasure inserts and
deletes it in its own transaction) *and* the update keeps the attempt's
verdicts -- ``overall`` and every criterion's rubric id, status and basis, in
order -- and every column but ``result``, ``error_detail`` and
``requested_by_id``. A permit cannot change a verdict, a status or a time.
"""

from django.db import migrations, models

TERMINAL = "('completed', 'unavailable', 'invalid')"
SCRUBBED = "'result' - 'error_detail' - 'requested_by_id'"

POSTGRES_UP = f"""
CREATE OR REPLACE FUNCTION feedback_attempt_verdicts(result jsonb) RETURNS jsonb AS $$
    SELECT jsonb_build_object(
        'overall', result -> 'overall',
        'criteria', COALESCE((
            SELECT jsonb_agg(jsonb_build_array(c -> 'rubric_id', c -> 'status', c -> 'basis') ORDER BY n)
            FROM jsonb_array_elements(
                CASE WHEN jsonb_typeof(result -> 'criteria') = 'array' THEN result -> 'criteria' ELSE '[]' END
            ) WITH ORDINALITY AS t(c, n)
        ), '[]'::jsonb)
    );
$$ LANGUAGE sql IMMUTABLE;
CREATE OR REPLACE FUNCTION feedback_attempt_immutable() RETURNS trigger AS $$
BEGIN
    IF OLD.status IN {TERMINAL} THEN
        IF EXISTS (SELECT 1 FROM feedback_attemptscrubpermit WHERE attempt_id = OLD.id)
            AND (to_jsonb(NEW) - {SCRUBBED}) = (to_jsonb(OLD) - {SCRUBBED})
            AND feedback_attempt_verdicts(NEW.result) IS NOT DISTINCT FROM feedback_attempt_verdicts(OLD.result)
        THEN
            RETURN NEW;
        END IF;
        RAISE EXCEPTION 'review attempt % is terminal and immutable', OLD.id
            USING ERRCODE = 'integrity_constraint_violation';
    END IF;
    RETURN NEW;
END;
$$ LANGUAGE plpgsql;
"""
POSTGRES_DOWN = f"""
CREATE OR REPLACE FUNCTION feedback_attempt_immutable() RETURNS trigger AS $$
BEGIN
    IF OLD.status IN {TERMINAL} THEN
        RAISE EXCEPTION 'review attempt % is terminal and immutable', OLD.id
            USING ERRCODE = 'integrity_constraint_violation';
    END IF;
    RETURN NEW;
END;
$$ LANGUAGE plpgsql;
DROP FUNCTION IF EXISTS feedback_attempt_verdicts(jsonb);
"""

# SQLite has no row-to-JSON: the columns that must stay are named (those of
# the model at this migration; a column added later is not compared).
KEPT_COLUMNS = (
    "id", "submission_id", "attempt_seq", "kind", "rubric_id", "rubric_version", "rubric_hash",
    "prompt_version", "engine_version", "model", "status", "reused_from_id", "error_code",
    "generation_attempts", "model_failed", "awaiting_staff", "forced", "correlation_id", "claim", "claimed_at",
    "claim_count", "lost_count", "dispatched_at", "created_at", "finished_at",
)


def _verdicts(row: str) -> str:
    return (
        "(SELECT group_concat(coalesce(json_extract(value, '$.rubric_id'), '') || '|' || "
        "coalesce(json_extract(value, '$.status'), '') || '|' || coalesce(json_extract(value, '$.basis'), ''), ',') "
        f"FROM json_each({row}.result, '$.criteria'))"
    )


SQLITE_PERMITTED = " AND ".join(
    [
        "EXISTS (SELECT 1 FROM feedback_attemptscrubpermit WHERE attempt_id = OLD.id)",
        *(f"NEW.{column} IS OLD.{column}" for column in KEPT_COLUMNS),
        "json_extract(NEW.result, '$.overall') IS json_extract(OLD.result, '$.overall')",
        f"{_verdicts('NEW')} IS {_verdicts('OLD')}",
    ]
)
SQLITE_UP = f"""
CREATE TRIGGER feedback_attempt_immutable
BEFORE UPDATE ON feedback_reviewattempt
WHEN OLD.status IN {TERMINAL} AND NOT ({SQLITE_PERMITTED})
BEGIN
    SELECT RAISE(ABORT, 'review attempt is terminal and immutable');
END;
"""
SQLITE_DOWN = f"""
CREATE TRIGGER feedback_attempt_immutable
BEFORE UPDATE ON feedback_reviewattempt
WHEN OLD.status IN {TERMINAL}
BEGIN
    SELECT RAISE(ABORT, 'review attempt is terminal and immutable');
END;
"""


def _run(schema_editor, postgres: str, sqlite: str) -> None:
    vendor = schema_editor.connection.vendor
    if vendor == "postgresql":
        # params=None: the "%" of RAISE EXCEPTION is PL/pgSQL, not a placeholder.
        schema_editor.execute(postgres, params=None)
    elif vendor == "sqlite":
        schema_editor.execute("DROP TRIGGER IF EXISTS feedback_attempt_immutable")
        schema_editor.execute(sqlite)


def install(apps, schema_editor):
    _run(schema_editor, POSTGRES_UP, SQLITE_UP)


def uninstall(apps, schema_editor):
    _run(schema_editor, POSTGRES_DOWN, SQLITE_DOWN)


class Migration(migrations.Migration):
    dependencies = [("feedback", "0008_submission_evidence_redactions")]

    operations = [
        migrations.CreateModel(
            name="AttemptScrubPermit",
            fields=[("attempt_id", models.UUIDField(primary_key=True, serialize=False))],
        ),
        migrations.RunPython(install, uninstall),
    ]
