from django.conf import settings

from tutor.commands import DomainCommand
from tutor.llm import model_calls_purge


class Command(DomainCommand):
    help = "Delete model-call audit rows older than MODEL_CALL_RETENTION_DAYS."

    def handle(self, *args, **options):
        deleted = model_calls_purge()
        self.stdout.write(
            f"deleted {deleted} model calls older than {settings.MODEL_CALL_RETENTION_DAYS} days"
        )
