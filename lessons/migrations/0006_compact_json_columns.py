import tutor.jsonfield
from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ('lessons', '0005_drop_stage_counts'),
    ]

    # The columns keep their type (JSON text on SQLite, jsonb on PostgreSQL):
    # only the field's Python encoder changes, so the database is left alone
    # (SQLite would otherwise rebuild each table).
    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name='recalltrace',
                    name='context',
                    field=tutor.jsonfield.CompactJSONField(),
                ),
                migrations.AlterField(
                    model_name='recalltrace',
                    name='counts',
                    field=tutor.jsonfield.CompactJSONField(),
                ),
                migrations.AlterField(
                    model_name='recalltrace',
                    name='lines',
                    field=tutor.jsonfield.CompactJSONField(),
                ),
                migrations.AlterField(
                    model_name='recalltrace',
                    name='omitted',
                    field=tutor.jsonfield.CompactJSONField(),
                ),
                migrations.AlterField(
                    model_name='recalltrace',
                    name='params',
                    field=tutor.jsonfield.CompactJSONField(),
                ),
            ],
            database_operations=[],
        ),
    ]
