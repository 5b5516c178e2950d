"""Counter rows for the sequences, and a trigger that refuses any UPDATE of a
terminal review attempt (SPEC §2: history is never modified)."""

from django.db import migrations

TERMINAL = "('completed', 'unavailable', 'invalid')"

POSTGRES_UP = f"""
CREATE OR REPLACE FUNCTION feedback_attempt_immutable() RETURNS trigger AS $$
BEGIN
    IF OLD.status IN {TERMINAL} THEN
        RAISE EXCEPTION 'review attempt % is terminal and immutable', OLD.id
            USING ERRCODE = 'integrity_constraint_violation';
    END IF;
    RETURN NEW;
END;
$$ LANGUAGE plpgsql;
CREATE TRIGGER feedback_attempt_immutable
    BEFORE UPDATE ON feedback_reviewattempt
    FOR EACH ROW EXECUTE FUNCTION feedback_attempt_immutable();
"""
POSTGRES_DOWN = """
DROP TRIGGER IF EXISTS feedback_attempt_immutable ON feedback_reviewattempt;
DROP FUNCTION IF EXISTS feedback_attempt_immutable();
"""
SQLITE_UP = f"""
CREATE TRIGGER feedback_attempt_immutable
BEFORE UPDATE ON feedback_reviewattempt
WHEN OLD.status IN {TERMINAL}
BEGIN
    SELECT RAISE(ABORT, 'review attempt is terminal and immutable');
END;
"""
SQLITE_DOWN = "DROP TRIGGER IF EXISTS feedback_attempt_immutable;"


def install_trigger(apps, schema_editor):
    vendor = schema_editor.connection.vendor
    if vendor == "postgresql":
        # params=None: the "%" of RAISE EXCEPTION is PL/pgSQL, not a placeholder.
        schema_editor.execute(POSTGRES_UP, params=None)
    elif vendor == "sqlite":
        schema_editor.execute(SQLITE_UP)


def drop_trigger(apps, schema_editor):
    vendor = schema_editor.connection.vendor
    if vendor == "postgresql":
        schema_editor.execute(POSTGRES_DOWN)
    elif vendor == "sqlite":
        schema_editor.execute(SQLITE_DOWN)


def create_counters(apps, schema_editor):
    Counter = apps.get_model("feedback", "Counter")
    for name in ("submission", "attempt"):
        Counter.objects.get_or_create(name=name, defaults={"value": 0})


class Migration(migrations.Migration):
    dependencies = [("feedback", "0001_initial")]

    operations = [
        migrations.RunPython(create_counters, migrations.RunPython.noop),
        migrations.RunPython(install_trigger, drop_trigger),
    ]
