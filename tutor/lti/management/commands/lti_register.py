from django.conf import settings
from django.core.management.base import CommandError
from django.urls import reverse

from tutor.commands import DomainCommand
from tutor.lti.models import ToolKey
from tutor.lti.services.registrations import registration_register
from tutor.models import Course


class Command(DomainCommand):
    help = (
        "Register an LMS (LTI 1.3 platform) for one course, or update its registration. "
        "Idempotent: the same values again change nothing; new deployment ids are added."
    )

    def add_arguments(self, parser):
        parser.add_argument("--issuer", required=True, help="the platform's issuer (iss)")
        parser.add_argument("--client-id", required=True, help="the client id the platform gave the tool")
        parser.add_argument(
            "--deployment-id",
            required=True,
            action="append",
            dest="deployment_ids",
            metavar="DEP",
            help="a deployment id (repeat for several)",
        )
        parser.add_argument("--auth-url", required=True, help="the platform's OIDC authorization endpoint")
        parser.add_argument("--token-url", required=True, help="the platform's OAuth 2 token endpoint")
        parser.add_argument("--jwks-url", required=True, help="the platform's public key set URL")
        parser.add_argument("--course", required=True, help="slug of the course this platform launches into")
        parser.add_argument(
            "--context-id",
            action="append",
            dest="context_ids",
            metavar="CTX",
            help="the LMS course (context id) that is this course; repeat for several. Once one is "
            "bound, launches and rosters from any other LMS course are refused",
        )
        parser.add_argument(
            "--auth-audience",
            help="the audience of the tool's token requests when the platform names one (Brightspace: "
            "its 'OAuth2 Audience', https://api.brightspace.com/auth/token); '' resets it to the token URL",
        )
        parser.add_argument(
            "--role-map",
            help="LMS roles -> tutor role for this platform, first match wins, e.g. "
            "'Instructor=staff;TeachingAssistant=staff;Learner=student'; '' resets it to LTI_ROLE_MAP",
        )
        parser.add_argument(
            "--pending-scores",
            choices=["pending_manual", "fully_graded_provisional", "hold", ""],
            help="what the gradebook gets while staff review is pending; '' resets it to LTI_PENDING_SCORES",
        )

    def handle(
        self,
        *args,
        issuer,
        client_id,
        deployment_ids,
        auth_url,
        token_url,
        jwks_url,
        course,
        context_ids=None,
        auth_audience=None,
        role_map=None,
        pending_scores=None,
        **options,
    ):
        target = Course.objects.filter(slug=course).first()
        if target is None:
            raise CommandError(f"unknown course {course!r}")
        result = registration_register(
            issuer=issuer,
            client_id=client_id,
            deployment_ids=deployment_ids,
            auth_url=auth_url,
            token_url=token_url,
            jwks_url=jwks_url,
            course=target,
            context_ids=context_ids,
            auth_audience=auth_audience,
            role_map=role_map,
            pending_scores=pending_scores,
        )
        reg = result.registration
        if result.created:
            what = "registered"
        elif result.changed or result.added_deployments or result.bound_contexts:
            changes = (
                result.changed
                + [f"deployment {d}" for d in result.added_deployments]
                + [f"context {c}" for c in result.bound_contexts]
            )
            what = "updated (" + ", ".join(changes) + ")"
        else:
            what = "unchanged"
        self.stdout.write(f"{reg.issuer} client {reg.client_id} for course {target.slug}: {what}")
        if result.other_deployments:
            self.stderr.write(
                "kept deployments not named here: "
                + ", ".join(result.other_deployments)
                + " (remove them in admin)"
            )
        if result.outside_launchers:
            self.stderr.write(
                f"{len(result.outside_launchers)} user(s) enrolled in {target.slug} by launches from other "
                f"LMS courses keep that enrolment until `manage.py lti_sync_roster {target.slug}` runs (or "
                "staff remove it): " + ", ".join(result.outside_launchers)
            )
        if not result.all_bound_contexts:
            self.stderr.write(
                f"no LMS course is bound: a launch through these deployments from any LMS course "
                f"enrols into {target.slug} (instructors as its staff). Name the LMS course with "
                "--context-id, or bind its context in admin (LMS integration › Contexts) after a first launch"
            )
        base = (settings.LTI_TOOL_URL or "https://<this host>").rstrip("/")
        self.stderr.write("configure the LMS with:")
        for label, name in (
            ("login URL", "lti-login"),
            ("launch/redirect URL", "lti-launch"),
            ("JWKS URL", "lti-jwks"),
        ):
            self.stderr.write(f"  {label}: {base}{reverse(name)}")
        self.stderr.write("  custom parameter on each link: task=<task slug>")
        if not ToolKey.objects.filter(status=ToolKey.Status.ACTIVE).exists():
            self.stderr.write("no tool key yet: run `manage.py lti_keys generate` before grades or rosters")
