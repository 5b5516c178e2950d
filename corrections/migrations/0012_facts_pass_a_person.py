"""Facts that became ``verified`` without a staff decision go back to
``proposed``, each with an open case (SPEC §5, turn 3): before this, one
student's correction (``CORRECTIONS_MIN_SUPPORTERS`` = 1) verified a course
fact. An upgraded course loses nothing -- the statement, its supporters and
their words wait in the staff queue -- and trusts nothing nobody checked.

"Without a staff decision": verified with no ``decided_by`` (staff accepting
a case or verifying a fact always set it). The fact joins its topic's
undecided case when there is one, else a new case; its statement becomes a
proposal carrying its supporters. Each move is audited (``fact_changed``,
actor: the operator). The course's fact snapshots are versioned anew, so no
process keeps injecting a fact that is now proposed.

Not reversed: going back would verify again what nobody checked.
"""

import secrets
import uuid

from django.db import migrations
from django.utils import timezone

REASON = "verified without a staff decision: back to proposed until staff decide (migration 0012)"


def _case_for(apps, fact):
    CorrectionCase = apps.get_model("corrections", "CorrectionCase")
    case = CorrectionCase.objects.filter(
        course_id=fact.course_id, kind="fact", topic_key=fact.topic_key, status__in=["open", "claimed"]
    ).first()
    if case is None:
        case = CorrectionCase.objects.create(
            course_id=fact.course_id,
            kind="fact",
            topic=fact.topic,
            topic_tokens=list(fact.topic_tokens),
            topic_key=fact.topic_key,
            token_count=fact.token_count,
            active_fact=fact,
        )
    elif case.active_fact_id is None:
        CorrectionCase.objects.filter(pk=case.pk).update(active_fact=fact)
    return case


def _propose(apps, case, fact):
    Proposal = apps.get_model("corrections", "Proposal")
    ProposalSupporter = apps.get_model("corrections", "ProposalSupporter")
    FactSupporter = apps.get_model("corrections", "FactSupporter")
    proposal, _ = Proposal.objects.get_or_create(
        case=case,
        statement_key=fact.statement_key,
        defaults={"statement": fact.statement, "statement_unit": fact.statement_unit},
    )
    known = set(ProposalSupporter.objects.filter(proposal=proposal).values_list("user_id", flat=True))
    for supporter in FactSupporter.objects.filter(fact=fact).order_by("created_at", "id"):
        if supporter.user_id not in known:
            ProposalSupporter.objects.create(
                proposal=proposal, user_id=supporter.user_id, correction_id=supporter.correction_id
            )
            known.add(supporter.user_id)
    Proposal.objects.filter(pk=proposal.pk).update(supporter_count=len(known))


def facts_back_to_proposed(apps, schema_editor):
    Fact = apps.get_model("corrections", "Fact")
    AuditEvent = apps.get_model("tutor", "AuditEvent")
    ContentType = apps.get_model("contenttypes", "ContentType")
    ScopeVersion = apps.get_model("tutor", "ScopeVersion")
    unchecked = Fact.objects.filter(status="verified", decided_by__isnull=True).order_by("created_at", "id")
    fact_type = None
    courses = set()
    for fact in unchecked.iterator():
        case = _case_for(apps, fact)
        _propose(apps, case, fact)
        Fact.objects.filter(pk=fact.pk, status="verified").update(status="proposed", case=case)
        if fact_type is None:
            fact_type, _ = ContentType.objects.get_or_create(app_label="corrections", model="fact")
        AuditEvent.objects.create(
            actor=None,
            actor_label="operator",
            event="fact_changed",
            course_id=fact.course_id,
            target_type=fact_type,
            target_id=str(fact.pk),
            target_repr=f"{fact.topic or '(no topic)'}: {fact.statement[:60]}"[:200],
            from_state="verified",
            to_state="proposed",
            reason=REASON,
            extra={"case": str(case.pk), "migration": "0012_facts_pass_a_person"},
        )
        courses.add(fact.course_id)
    now = timezone.now()
    for course_id in courses:
        # tutor.db.snapshots.scope_key("corrections", course_id): a new version drops every snapshot.
        ScopeVersion.objects.update_or_create(
            key=f"corrections:{uuid.UUID(str(course_id)).hex}", defaults={"version": secrets.randbits(62), "changed_at": now}
        )


class Migration(migrations.Migration):
    dependencies = [
        ("corrections", "0011_fact_staff_note"),
        ("tutor", "0005_scope_versions"),
        ("contenttypes", "0002_remove_content_type_name"),
    ]

    operations = [migrations.RunPython(facts_back_to_proposed, migrations.RunPython.noop)]
