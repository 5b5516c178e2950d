"""lz4 for a recall trace's lines on PostgreSQL (tutor.db.compression)."""

from django.db import migrations

from tutor.db.compression import column_compression

COLUMNS = (("lessons_recalltrace", "lines"),)


class Migration(migrations.Migration):
    dependencies = [("lessons", "0008_lesson_scope_id_idx")]

    operations = [migrations.RunPython(column_compression("lz4", COLUMNS), column_compression("pglz", COLUMNS))]
