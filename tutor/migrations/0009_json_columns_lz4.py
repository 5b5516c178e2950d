"""lz4 for the tutor turn's large JSON columns on PostgreSQL (tutor.db.compression)."""

from django.db import migrations

from tutor.db.compression import column_compression

COLUMNS = (("tutor_modelcall", "request_messages"), ("tutor_tutormessage", "context_meta"))


class Migration(migrations.Migration):
    dependencies = [("tutor", "0008_scope_changes")]

    operations = [migrations.RunPython(column_compression("lz4", COLUMNS), column_compression("pglz", COLUMNS))]
