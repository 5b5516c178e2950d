from tutor.commands import DomainCommand
from tutor.lti.services.scores import scores_sweep


class Command(DomainCommand):
    help = "Send due LMS score posts the broker lost and recover those of dead workers (for cron)."

    def handle(self, *args, **options):
        counts = scores_sweep()
        self.stdout.write(
            "lti scores: {dispatched} dispatched, {requeued} returned to queued, {failed} failed".format(
                **counts
            )
        )
