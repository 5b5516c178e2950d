"""Drop ``UserMemoryCount`` and the triggers that kept it (migration 0009).

Counters kept by row triggers lock the counter rows of both keys an item
moves between until commit (opposite moves deadlock on PostgreSQL), collide
with ``loaddata`` and are lost when SQLite rebuilds the memory item table.
The context counts a user's items by index again (corrections.selectors.injection).

Reversible: migrating back to 0009 reinstalls the triggers and refills the
counts from the stored items."""

from importlib import import_module

from django.db import migrations

memory_counts = import_module("corrections.migrations.0009_user_memory_counts")


class Migration(migrations.Migration):
    dependencies = [("corrections", "0009_user_memory_counts")]

    operations = [
        # The triggers first: a trigger left on the item table would write to a dropped table.
        migrations.RunPython(memory_counts.drop_triggers, memory_counts.install_triggers),
        migrations.DeleteModel(name="UserMemoryCount"),
    ]
