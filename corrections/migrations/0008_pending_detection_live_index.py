from django.db import migrations, models


class Migration(migrations.Migration):
    """The sweep's index is led by ``sends``: the rows that have had all
    their sends are no longer read by every sweep."""

    dependencies = [
        ("corrections", "0007_pending_detection"),
    ]

    operations = [
        migrations.RemoveIndex("pendingdetection", "pendingdetection_due_idx"),
        migrations.AddIndex(
            "pendingdetection", models.Index(fields=["sends", "due_at"], name="pendingdetection_live_idx")
        ),
    ]
