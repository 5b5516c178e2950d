import json
from pathlib import Path

from django.contrib.auth import get_user_model
from django.core.management.base import CommandError
from django.core.serializers.json import DjangoJSONEncoder

from tutor.commands import DomainCommand
from tutor.rights.export import student_export, student_export_zip


class Command(DomainCommand):
    help = (
        "Everything held about a person as one JSON document on stdout (SPEC §13), the same as "
        "GET /api/me/export/; with --zip FILE, the document and the evidence files in a zip."
    )

    def add_arguments(self, parser):
        parser.add_argument("user", metavar="USER", help="username")
        parser.add_argument("--zip", metavar="FILE", help="write a zip archive to FILE instead")

    def handle(self, *args, user, zip, **options):
        person = get_user_model().objects.filter(username=user).first()
        if person is None:
            raise CommandError(f"no such user: {user!r}")
        if zip:
            target = Path(zip)
            if not target.parent.is_dir():
                raise CommandError(f"no such directory: {str(target.parent)!r}")
            target.write_bytes(student_export_zip(user=person))
            self.stderr.write(f"wrote {target}")
            return
        self.stdout.write(
            json.dumps(student_export(user=person), cls=DjangoJSONEncoder, ensure_ascii=False, indent=2)
        )
