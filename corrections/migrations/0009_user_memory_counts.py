"""Per-user counts of user-tier memory items by kind, kept by triggers on the
memory item table (``corrections.models.UserMemoryCount``), and filled from
the items already stored."""

from django.db import migrations, models

TABLE = "corrections_usermemorycount"
ITEMS = "corrections_memoryitem"


def _add(row: str) -> str:
    return f"""
    INSERT INTO {TABLE} (user_id, kind, item_count) VALUES ({row}.user_id, {row}.kind, 1)
    ON CONFLICT (user_id, kind) DO UPDATE SET item_count = {TABLE}.item_count + 1;"""


def _remove(row: str) -> str:
    key = f"user_id = {row}.user_id AND kind = {row}.kind"
    return f"""
    UPDATE {TABLE} SET item_count = item_count - 1 WHERE {key};
    DELETE FROM {TABLE} WHERE {key} AND item_count <= 0;"""


POSTGRES_UP = f"""
CREATE OR REPLACE FUNCTION corrections_user_memory_count() RETURNS trigger AS $$
BEGIN
    IF TG_OP IN ('UPDATE', 'DELETE') AND OLD.tier = 'user' THEN {_remove("OLD")}
    END IF;
    IF TG_OP IN ('UPDATE', 'INSERT') AND NEW.tier = 'user' THEN {_add("NEW")}
    END IF;
    RETURN NULL;
END;
$$ LANGUAGE plpgsql;
CREATE TRIGGER corrections_user_memory_count_write
    AFTER INSERT OR DELETE ON {ITEMS}
    FOR EACH ROW EXECUTE FUNCTION corrections_user_memory_count();
CREATE TRIGGER corrections_user_memory_count_move
    AFTER UPDATE OF user_id, tier, kind ON {ITEMS}
    FOR EACH ROW
    WHEN (OLD.user_id IS DISTINCT FROM NEW.user_id OR OLD.tier IS DISTINCT FROM NEW.tier
          OR OLD.kind IS DISTINCT FROM NEW.kind)
    EXECUTE FUNCTION corrections_user_memory_count();
"""
POSTGRES_DOWN = f"""
DROP TRIGGER IF EXISTS corrections_user_memory_count_move ON {ITEMS};
DROP TRIGGER IF EXISTS corrections_user_memory_count_write ON {ITEMS};
DROP FUNCTION IF EXISTS corrections_user_memory_count();
"""
_MOVED = "OLD.user_id IS NOT NEW.user_id OR OLD.tier IS NOT NEW.tier OR OLD.kind IS NOT NEW.kind"
SQLITE_UP = [
    f"""CREATE TRIGGER corrections_user_memory_count_insert AFTER INSERT ON {ITEMS}
WHEN NEW.tier = 'user'
BEGIN {_add("NEW")}
END;""",
    f"""CREATE TRIGGER corrections_user_memory_count_delete AFTER DELETE ON {ITEMS}
WHEN OLD.tier = 'user'
BEGIN {_remove("OLD")}
END;""",
    # A move is a removal of the old row and an addition of the new, each where its tier is user's.
    f"""CREATE TRIGGER corrections_user_memory_count_move_out AFTER UPDATE OF user_id, tier, kind ON {ITEMS}
WHEN ({_MOVED}) AND OLD.tier = 'user'
BEGIN {_remove("OLD")}
END;""",
    f"""CREATE TRIGGER corrections_user_memory_count_move_in AFTER UPDATE OF user_id, tier, kind ON {ITEMS}
WHEN ({_MOVED}) AND NEW.tier = 'user'
BEGIN {_add("NEW")}
END;""",
]
SQLITE_DOWN = [
    "DROP TRIGGER IF EXISTS corrections_user_memory_count_move_in;",
    "DROP TRIGGER IF EXISTS corrections_user_memory_count_move_out;",
    "DROP TRIGGER IF EXISTS corrections_user_memory_count_delete;",
    "DROP TRIGGER IF EXISTS corrections_user_memory_count_insert;",
]
FILL = f"""
INSERT INTO {TABLE} (user_id, kind, item_count)
SELECT user_id, kind, COUNT(*) FROM {ITEMS} WHERE tier = 'user' GROUP BY user_id, kind"""


def install_triggers(apps, schema_editor):
    vendor = schema_editor.connection.vendor
    if vendor == "postgresql":
        schema_editor.execute(POSTGRES_UP, params=None)
    elif vendor == "sqlite":
        for statement in SQLITE_UP:
            schema_editor.execute(statement, params=None)
    else:
        return
    schema_editor.execute(FILL, params=None)


def drop_triggers(apps, schema_editor):
    vendor = schema_editor.connection.vendor
    if vendor == "postgresql":
        schema_editor.execute(POSTGRES_DOWN, params=None)
    elif vendor == "sqlite":
        for statement in SQLITE_DOWN:
            schema_editor.execute(statement, params=None)


class Migration(migrations.Migration):
    dependencies = [("corrections", "0008_pending_detection_live_index")]

    operations = [
        migrations.CreateModel(
            name="UserMemoryCount",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("user_id", models.BigIntegerField()),
                (
                    "kind",
                    models.CharField(
                        choices=[
                            ("factual", "Factual"),
                            ("preference", "Preference"),
                            ("process", "Process"),
                            ("negative", "Negative"),
                        ],
                        max_length=16,
                    ),
                ),
                ("item_count", models.IntegerField()),
            ],
            options={
                "constraints": [models.UniqueConstraint(fields=("user_id", "kind"), name="usermemorycount_key")],
            },
        ),
        migrations.RunPython(install_triggers, drop_triggers),
    ]
