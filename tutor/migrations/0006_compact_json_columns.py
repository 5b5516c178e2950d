import tutor.jsonfield
from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ('tutor', '0005_scope_versions'),
    ]

    # The columns keep their type (JSON text on SQLite, jsonb on PostgreSQL):
    # only the field's Python encoder changes, so the database is left alone
    # (SQLite would otherwise rebuild each table).
    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name='modelcall',
                    name='request_messages',
                    field=tutor.jsonfield.CompactJSONField(),
                ),
                migrations.AlterField(
                    model_name='modelcall',
                    name='response_json',
                    field=tutor.jsonfield.CompactJSONField(blank=True, null=True),
                ),
                migrations.AlterField(
                    model_name='tutormessage',
                    name='context_meta',
                    field=tutor.jsonfield.CompactJSONField(blank=True, null=True),
                ),
            ],
            database_operations=[],
        ),
    ]
