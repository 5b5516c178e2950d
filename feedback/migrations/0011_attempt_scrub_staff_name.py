"""The scrub permit of migration 0009 also lets an erasure take a staff
member's name out of their verdicts (SPEC §13): a staff verdict's ``model``
reads ``staff:<username>``; under a permit it may become
``staff:erased-<hash>``, the stand-in's name, and nothing else. Every other
condition of 0009 holds: the verdicts and every other column stay.
"""

from importlib import import_module

from django.db import migrations

permit = import_module("feedback.migrations.0009_attempt_scrub_permit")

RENAMED = "(OLD.model LIKE 'staff:%' AND NEW.model LIKE 'staff:erased-%')"

POSTGRES_UP = f"""
CREATE OR REPLACE FUNCTION feedback_attempt_immutable() RETURNS trigger AS $$
BEGIN
    IF OLD.status IN {permit.TERMINAL} THEN
        IF EXISTS (SELECT 1 FROM feedback_attemptscrubpermit WHERE attempt_id = OLD.id)
            AND (to_jsonb(NEW) - {permit.SCRUBBED} - 'model') = (to_jsonb(OLD) - {permit.SCRUBBED} - 'model')
            AND (NEW.model IS NOT DISTINCT FROM OLD.model OR {RENAMED})
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
# 0009's function, as it was.
POSTGRES_DOWN = POSTGRES_UP.replace(" - 'model')", ")").replace(
    f"            AND (NEW.model IS NOT DISTINCT FROM OLD.model OR {RENAMED})\n", ""
)

SQLITE_PERMITTED = " AND ".join(
    [
        "EXISTS (SELECT 1 FROM feedback_attemptscrubpermit WHERE attempt_id = OLD.id)",
        *(f"NEW.{column} IS OLD.{column}" for column in permit.KEPT_COLUMNS if column != "model"),
        f"(NEW.model IS OLD.model OR {RENAMED})",
        "json_extract(NEW.result, '$.overall') IS json_extract(OLD.result, '$.overall')",
        f"{permit._verdicts('NEW')} IS {permit._verdicts('OLD')}",
    ]
)
SQLITE_UP = f"""
CREATE TRIGGER feedback_attempt_immutable
BEFORE UPDATE ON feedback_reviewattempt
WHEN OLD.status IN {permit.TERMINAL} AND NOT ({SQLITE_PERMITTED})
BEGIN
    SELECT RAISE(ABORT, 'review attempt is terminal and immutable');
END;
"""


def install(apps, schema_editor):
    permit._run(schema_editor, POSTGRES_UP, SQLITE_UP)


def uninstall(apps, schema_editor):
    permit._run(schema_editor, POSTGRES_DOWN, permit.SQLITE_UP)


class Migration(migrations.Migration):
    dependencies = [("feedback", "0010_submission_sent_hash")]

    operations = [migrations.RunPython(install, uninstall)]
