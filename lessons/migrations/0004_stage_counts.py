"""Per-scope lesson counts by status and review date, kept by triggers on the
lesson table (``lessons.models.LessonStageCount``), and filled from the
lessons already stored."""

from django.db import migrations, models

TABLE = "lessons_lessonstagecount"
# The global lessons' scope (lessons.models.GLOBAL_SCOPE), as each database stores a UUID.
POSTGRES_GLOBAL = "'00000000-0000-0000-0000-000000000000'::uuid"
SQLITE_GLOBAL = "'00000000000000000000000000000000'"


def _add(row: str, global_scope: str) -> str:
    return f"""
    INSERT INTO {TABLE} (scope, status, review_by, lesson_count)
    VALUES (COALESCE({row}.course_id, {global_scope}), {row}.status, {row}.review_by, 1)
    ON CONFLICT (scope, status, review_by) DO UPDATE SET lesson_count = {TABLE}.lesson_count + 1;"""


def _remove(row: str, global_scope: str) -> str:
    key = (
        f"scope = COALESCE({row}.course_id, {global_scope}) "
        f"AND status = {row}.status AND review_by = {row}.review_by"
    )
    return f"""
    UPDATE {TABLE} SET lesson_count = lesson_count - 1 WHERE {key};
    DELETE FROM {TABLE} WHERE {key} AND lesson_count <= 0;"""


POSTGRES_UP = f"""
CREATE OR REPLACE FUNCTION lessons_stage_count() RETURNS trigger AS $$
BEGIN
    IF TG_OP IN ('UPDATE', 'DELETE') THEN {_remove("OLD", POSTGRES_GLOBAL)}
    END IF;
    IF TG_OP IN ('UPDATE', 'INSERT') THEN {_add("NEW", POSTGRES_GLOBAL)}
    END IF;
    RETURN NULL;
END;
$$ LANGUAGE plpgsql;
CREATE TRIGGER lessons_stage_count_write
    AFTER INSERT OR DELETE ON lessons_lesson
    FOR EACH ROW EXECUTE FUNCTION lessons_stage_count();
CREATE TRIGGER lessons_stage_count_move
    AFTER UPDATE OF course_id, status, review_by ON lessons_lesson
    FOR EACH ROW
    WHEN (OLD.course_id IS DISTINCT FROM NEW.course_id OR OLD.status IS DISTINCT FROM NEW.status
          OR OLD.review_by IS DISTINCT FROM NEW.review_by)
    EXECUTE FUNCTION lessons_stage_count();
"""
POSTGRES_DOWN = """
DROP TRIGGER IF EXISTS lessons_stage_count_move ON lessons_lesson;
DROP TRIGGER IF EXISTS lessons_stage_count_write ON lessons_lesson;
DROP FUNCTION IF EXISTS lessons_stage_count();
"""
SQLITE_UP = [
    f"""CREATE TRIGGER lessons_stage_count_insert AFTER INSERT ON lessons_lesson
BEGIN {_add("NEW", SQLITE_GLOBAL)}
END;""",
    f"""CREATE TRIGGER lessons_stage_count_delete AFTER DELETE ON lessons_lesson
BEGIN {_remove("OLD", SQLITE_GLOBAL)}
END;""",
    f"""CREATE TRIGGER lessons_stage_count_move AFTER UPDATE OF course_id, status, review_by ON lessons_lesson
WHEN OLD.course_id IS NOT NEW.course_id OR OLD.status IS NOT NEW.status OR OLD.review_by IS NOT NEW.review_by
BEGIN {_remove("OLD", SQLITE_GLOBAL)} {_add("NEW", SQLITE_GLOBAL)}
END;""",
]
SQLITE_DOWN = [
    "DROP TRIGGER IF EXISTS lessons_stage_count_move;",
    "DROP TRIGGER IF EXISTS lessons_stage_count_delete;",
    "DROP TRIGGER IF EXISTS lessons_stage_count_insert;",
]


def _fill(global_scope: str) -> str:
    return f"""
    INSERT INTO {TABLE} (scope, status, review_by, lesson_count)
    SELECT COALESCE(course_id, {global_scope}), status, review_by, COUNT(*)
    FROM lessons_lesson GROUP BY COALESCE(course_id, {global_scope}), status, review_by"""


def install_triggers(apps, schema_editor):
    vendor = schema_editor.connection.vendor
    if vendor == "postgresql":
        schema_editor.execute(POSTGRES_UP, params=None)
        schema_editor.execute(_fill(POSTGRES_GLOBAL), params=None)
    elif vendor == "sqlite":
        for statement in SQLITE_UP:
            schema_editor.execute(statement, params=None)
        schema_editor.execute(_fill(SQLITE_GLOBAL), params=None)


def drop_triggers(apps, schema_editor):
    vendor = schema_editor.connection.vendor
    if vendor == "postgresql":
        schema_editor.execute(POSTGRES_DOWN, params=None)
    elif vendor == "sqlite":
        for statement in SQLITE_DOWN:
            schema_editor.execute(statement, params=None)


class Migration(migrations.Migration):
    dependencies = [("lessons", "0003_lesson_harmful_kept")]

    operations = [
        migrations.CreateModel(
            name="LessonStageCount",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("scope", models.UUIDField()),
                (
                    "status",
                    models.CharField(
                        choices=[
                            ("pending", "Pending"),
                            ("approved", "Approved"),
                            ("injected", "Injected"),
                            ("quarantined", "Quarantined"),
                            ("retired", "Retired"),
                            ("rejected", "Rejected"),
                        ],
                        max_length=16,
                    ),
                ),
                ("review_by", models.DateField()),
                ("lesson_count", models.IntegerField()),
            ],
            options={
                "constraints": [
                    models.UniqueConstraint(fields=("scope", "status", "review_by"), name="lessonstagecount_key")
                ],
            },
        ),
        migrations.RunPython(install_triggers, drop_triggers),
    ]
