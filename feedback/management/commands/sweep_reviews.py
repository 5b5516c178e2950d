from feedback.services.worker import attempts_sweep
from tutor.commands import DomainCommand


class Command(DomainCommand):
    help = "Re-dispatch stuck queued review attempts and recover attempts of dead workers (for cron)."

    def handle(self, *args, **options):
        counts = attempts_sweep()
        self.stdout.write(
            "sweep: {redispatched} re-dispatched, {requeued} returned to queued, "
            "{worker_lost} ended WORKER_LOST".format(**counts)
        )
