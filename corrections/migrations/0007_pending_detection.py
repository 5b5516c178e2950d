from django.db import migrations, models


class Migration(migrations.Migration):
    """The detection outbox holds every stored user message until its
    detection has run, not only the publishes the broker refused."""

    dependencies = [
        ("corrections", "0006_detection_outbox"),
    ]

    operations = [
        migrations.RemoveIndex("undispatcheddetection", "undispatched_failed_idx"),
        migrations.RenameModel("UndispatchedDetection", "PendingDetection"),
        migrations.RenameField("pendingdetection", "failed_at", "due_at"),
        migrations.AddIndex(
            "pendingdetection", models.Index(fields=["due_at"], name="pendingdetection_due_idx")
        ),
        migrations.AlterField("pendingdetection", "failures", models.PositiveIntegerField(default=0)),
        migrations.AddField("pendingdetection", "sends", models.PositiveIntegerField(default=0)),
    ]
