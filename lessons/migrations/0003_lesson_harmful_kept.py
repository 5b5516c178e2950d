from django.db import migrations, models


class Migration(migrations.Migration):
    """A superuser's decision to keep a held global lesson injected, at the
    harmful count it was taken at."""

    dependencies = [
        ("lessons", "0002_tag_pair_keys"),
    ]

    operations = [
        migrations.AddField("lesson", "harmful_kept", models.PositiveIntegerField(default=0)),
    ]
