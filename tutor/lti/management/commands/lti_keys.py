from tutor.commands import DomainCommand
from tutor.lti.models import ToolKey
from tutor.lti.selectors import published_keys
from tutor.lti.services.keys import tool_key_generate, tool_key_rotate


class Command(DomainCommand):
    help = (
        "The tool's signing keys (published at /lti/jwks/). generate: make the first key (no-op when one is "
        "active); rotate: a new key signs, the old one stays published for LTI_KEY_GRACE_DAYS; list. "
        "Private keys stay in the database and are never printed."
    )

    def add_arguments(self, parser):
        parser.add_argument("action", choices=["generate", "rotate", "list"])

    def handle(self, *args, action, **options):
        if action == "generate":
            key, created = tool_key_generate()
            self.stdout.write(f"{'generated' if created else 'active'} key {key.kid}")
        elif action == "rotate":
            key, old = tool_key_rotate()
            self.stdout.write(f"active key {key.kid}")
            if old is not None:
                self.stdout.write(f"retired key {old.kid} (published until its grace period ends)")
        published = set(published_keys().values_list("kid", flat=True))
        if action == "list":
            for key in ToolKey.objects.order_by("-created_at"):
                shown = "published" if key.kid in published else "not published"
                self.stdout.write(f"{key.kid} {key.status} {shown} created {key.created_at:%Y-%m-%d %H:%M}")
        self.stderr.write(f"{len(published)} key(s) in the JWKS")
