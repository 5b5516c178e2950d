"""The LMS side's part of the data rights (SPEC §13; ``tutor.rights``).

Erasure: the person's launches of a course's links (``LinkMember``) and the
scores queued or posted for them go; erasing the whole person also removes
their platform identities -- (issuer, ``sub``), the name and e-mail the LMS
sent. Registrations, LMS courses and links are the course's.
"""

from __future__ import annotations

from rest_framework import serializers

from tutor.lti.models import Identity, LinkMember, ScorePost
from tutor.rights.registry import Ledger, RightsPart, Subject


class LaunchExportSerializer(serializers.Serializer):
    link = serializers.CharField(source="link.resource_link_id")
    title = serializers.CharField(source="link.title")
    role = serializers.CharField()
    launch_count = serializers.IntegerField()
    first_launch_at = serializers.DateTimeField()
    last_launch_at = serializers.DateTimeField()


class IdentityExportSerializer(serializers.Serializer):
    issuer = serializers.CharField()
    subject = serializers.CharField(help_text="the LMS's id of you (sub)")
    name = serializers.CharField()
    email = serializers.CharField()
    created_at = serializers.DateTimeField()
    last_seen_at = serializers.DateTimeField()
    launches = LaunchExportSerializer(many=True, source="links")


class LtiRights(RightsPart):
    name = "lti"
    position = 30
    export_key = "lti_identities"
    rules = {
        "lti.Identity": "deleted when the whole person is erased",
        "lti.LinkMember": "deleted",
        "lti.ScorePost": "deleted (the outbox of the person's scores)",
        "lti.ToolKey": "holds no person",
        "lti.Registration": "holds no person",
        "lti.Deployment": "holds no person",
        "lti.LoginNonce": "holds no person",
        "lti.Context": "holds no person",
        "lti.ResourceLink": "holds no person",
    }

    def identifiers(self, user) -> list[str]:
        rows = Identity.objects.filter(user=user).values_list("subject", "email", "name")
        return [value for row in rows for value in row if value]

    def scan_identifiers(self, user) -> list[str]:
        return list(Identity.objects.filter(user=user).values_list("subject", flat=True))

    def erase(self, subject: Subject, ledger: Ledger, *, dry_run: bool) -> None:
        identities = Identity.objects.filter(user=subject.user)
        course = "link__registration__course_id"
        ledger.delete(
            subject.in_scope(ScorePost.objects.filter(identity__in=identities), course), dry_run=dry_run
        )
        ledger.delete(
            subject.in_scope(LinkMember.objects.filter(identity__in=identities), course), dry_run=dry_run
        )
        if subject.whole:
            ledger.delete(identities, dry_run=dry_run)

    def export(self, subject: Subject):
        identities = Identity.objects.filter(user=subject.user).prefetch_related("links__link")
        return IdentityExportSerializer(identities, many=True).data

    def export_serializer(self):
        return IdentityExportSerializer(many=True)
