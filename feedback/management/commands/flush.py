"""Django's ``flush``, made to work with the DELETE guard on terminal review
attempts (migration 0004).

On SQLite, ``flush`` empties each table with ``DELETE``, which fires the
guard (PostgreSQL's ``TRUNCATE`` does not). The flush runs inside a
transaction holding a purge permit, so the guard lets its deletes through;
the permit table is not a managed one, so the flush leaves it alone, and the
permit is gone again when the transaction commits. Nothing is audited: the
audit trail is emptied with everything else. The test runner flushes this
way after every transactional test.
"""

from django.core.management.commands import flush
from django.db import connections, transaction

from feedback.models import AttemptPurgePermit


class Command(flush.Command):
    def handle(self, **options):
        database = options["database"]
        connection = connections[database]
        if options["interactive"]:
            confirm = input(
                f"This deletes every row of the database {connection.settings_dict['NAME']!r} "
                "and cannot be undone. Type 'yes' to continue, or 'no' to cancel: "
            )
            if confirm != "yes":
                self.stdout.write("Flush cancelled.")
                return
        options = {**options, "interactive": False}
        if AttemptPurgePermit._meta.db_table not in connection.introspection.table_names():
            return super().handle(**options)  # not migrated yet: there is no guard either
        with transaction.atomic(using=database):
            permit = AttemptPurgePermit.objects.using(database).create(reason="flush")
            super().handle(**options)
            permit.delete(using=database)
