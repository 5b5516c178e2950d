import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("corrections", "0003_fill_relevance_index"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AlterField(
            model_name="memorytoken",
            name="user",
            field=models.ForeignKey(
                db_index=False,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="+",
                to=settings.AUTH_USER_MODEL,
            ),
        ),
        migrations.AlterField(
            model_name="memorytoken",
            name="tier",
            field=models.CharField(choices=[("session", "Session"), ("user", "User")], max_length=16),
        ),
        migrations.AlterField(
            model_name="memorytoken",
            name="kind",
            field=models.CharField(
                choices=[
                    ("factual", "Factual"),
                    ("preference", "Preference"),
                    ("process", "Process"),
                    ("negative", "Negative"),
                ],
                max_length=16,
            ),
        ),
        migrations.AlterField(
            model_name="memorytoken",
            name="updated_at",
            field=models.DateTimeField(),
        ),
    ]
