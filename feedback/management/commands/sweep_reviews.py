from django.core.management.base import BaseCommand

from feedback.services import attempts_sweep


class Command(BaseCommand):
    help = "Re-dispatch stuck queued review attempts and recover attempts of dead workers (for cron)."

    def handle(self, *args, **options):
        counts = attempts_sweep()
        self.stdout.write(
            "sweep: {redispatched} re-dispatched, {requeued} returned to queued, "
            "{worker_lost} ended WORKER_LOST".format(**counts)
        )
