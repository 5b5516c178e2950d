"""The corrections app's part of the data rights (SPEC §13; ``tutor.rights``).

Erasure: the person's memory items (session and user tier) and corrections
go. Course facts: their supporter rows go; a proposed fact that only they
supported goes with them (it was their proposal alone); a fact others
support, or that staff verified, stays -- it is the course's -- without
their link. In review cases their supporter rows go, a proposal only they
supported goes, and an undecided case left without proposals goes. A staff
member's decisions stay without their name or their free text.
"""

from __future__ import annotations

from django.db.models import F, Q
from django.utils import timezone
from rest_framework import serializers

from corrections.models import (
    UNDECIDED_CASE_STATUSES,
    Correction,
    CorrectionCase,
    Fact,
    FactSupporter,
    MemoryItem,
    ProcessRule,
    Proposal,
    ProposalSupporter,
)
from corrections.selectors import memory_list
from corrections.selectors.course_snapshot import corrections_changed
from corrections.selectors.memory_snapshot import memory_changed
from corrections.serializers import CorrectionSerializer, MemoryItemSerializer
from tutor.models import ModelCall, RetentionKind
from tutor.rights.own import texts_forget
from tutor.rights.registry import Ledger, RightsPart, Subject, delete_batch


class CorrectionsExportSerializer(serializers.Serializer):
    memory = MemoryItemSerializer(
        many=True, help_text="session, user and (as tier system) the facts you stated"
    )
    corrections = CorrectionSerializer(many=True, help_text="your detected corrections and where they went")


class CorrectionsRights(RightsPart):
    name = "corrections"
    position = 20
    export_key = "corrections"
    rules = {
        "corrections.MemoryItem": "deleted",
        "corrections.MemoryToken": "deleted with its memory item",
        "corrections.Correction": "deleted",
        "corrections.PendingDetection": "deleted with the person's tutor messages",
        "corrections.FactSupporter": "deleted",
        "corrections.Fact": "deleted when the person alone supported it and no staff member decided it (its "
        "statement is also removed from the course's model calls and tutor replies); else kept without their "
        "link (proposer, decider and the decider's reason)",
        "corrections.FactToken": "holds no person (deleted with its fact)",
        "corrections.FactKey": "holds no person (deleted with its fact)",
        "corrections.TaskToken": "holds no person",
        "corrections.TaskFactOverlap": "holds no person (deleted with its fact)",
        "corrections.ProposalSupporter": "deleted",
        "corrections.Proposal": "deleted when the person alone supported it",
        "corrections.CorrectionCase": "deleted when undecided and left without proposals; else kept without "
        "the person as claimant or decider",
        "corrections.ProcessRule": "kept (the course's); a staff member loses their name and reason",
    }

    def retention(self):
        # Counted from the last update: a preference stated again stays.
        return {
            RetentionKind.MEMORY: lambda *, scope, before, limit, dry_run: delete_batch(
                scope.of(MemoryItem.objects.filter(updated_at__lt=before), "course_id"),
                limit=limit,
                dry_run=dry_run,
            )
        }

    def erase(self, subject: Subject, ledger: Ledger, *, dry_run: bool) -> None:
        user = subject.user
        memory = MemoryItem.objects.filter(user=user)
        if not subject.whole:
            memory = memory.filter(
                Q(course_id__in=subject.course_ids) | Q(session__task__course_id__in=subject.course_ids)
            )
        corrections = subject.in_scope(Correction.objects.filter(user=user), "course_id")
        correlation_ids = set(corrections.exclude(correlation_id="").values_list("correlation_id", flat=True))
        ledger.delete(
            ModelCall.objects.filter(
                student__isnull=True,
                purpose=ModelCall.Purpose.CLASSIFICATION,
                correlation_id__in=correlation_ids,
            ),
            dry_run=dry_run,
        )
        ledger.delete(memory, dry_run=dry_run)
        ledger.delete(corrections, dry_run=dry_run)
        courses = set(self._facts(subject, ledger, dry_run=dry_run))
        courses |= self._cases(subject, ledger, dry_run=dry_run)
        if not dry_run:
            if courses:
                corrections_changed(*courses)
            if not subject.whole:
                memory_changed(user.pk)

    def _facts(self, subject: Subject, ledger: Ledger, *, dry_run: bool) -> set:
        user = subject.user
        supporters = subject.in_scope(FactSupporter.objects.filter(user=user), "fact__course_id")
        fact_ids = set(supporters.values_list("fact_id", flat=True))
        proposed = subject.in_scope(Fact.objects.filter(proposed_by=user), "course_id")
        fact_ids |= set(proposed.values_list("pk", flat=True))
        facts = Fact.objects.filter(pk__in=fact_ids)
        # Kept only what staff decided (SPEC §13: "a verified fact staff approved stays").
        alone = facts.filter(decided_by__isnull=True).exclude(
            pk__in=FactSupporter.objects.filter(fact_id__in=fact_ids).exclude(user=user).values("fact_id")
        )
        courses = set(facts.values_list("course_id", flat=True))
        decided = subject.in_scope(Fact.objects.filter(decided_by=user), "course_id")
        if dry_run:
            ledger.delete(supporters, dry_run=True)
            ledger.delete(alone, dry_run=True)
            ledger.pseudonymise(Fact, facts.exclude(pk__in=alone).count() + decided.count())
            return courses
        alone_ids = set(alone.values_list("pk", flat=True))
        # Each user supports a fact once: the facts that stay lose one supporter.
        kept = set(supporters.values_list("fact_id", flat=True)) - alone_ids
        courses |= set(decided.values_list("course_id", flat=True))
        ledger.delete(supporters, dry_run=False)
        Fact.objects.filter(pk__in=kept, supporter_count__gt=0).update(
            supporter_count=F("supporter_count") - 1
        )
        gone = Fact.objects.filter(pk__in=alone_ids)
        # Their statement reached classmates' tutor requests while it was a course fact.
        for course_id in set(gone.values_list("course_id", flat=True)):
            statements = gone.filter(course_id=course_id).values_list("statement", flat=True)
            ledger.pseudonymise(
                ModelCall, texts_forget(texts=statements, course_ids=[course_id], dry_run=False)
            )
        ledger.delete(gone, dry_run=False)
        ledger.pseudonymise(
            Fact, Fact.objects.filter(pk__in=fact_ids, proposed_by=user).update(proposed_by=None)
        )
        ledger.pseudonymise(Fact, decided.update(decided_by=None, decision_reason=""))
        return courses

    def _cases(self, subject: Subject, ledger: Ledger, *, dry_run: bool) -> set:
        user = subject.user
        supporters = subject.in_scope(
            ProposalSupporter.objects.filter(user=user), "proposal__case__course_id"
        )
        proposal_ids = set(supporters.values_list("proposal_id", flat=True))
        alone = Proposal.objects.filter(pk__in=proposal_ids).exclude(
            pk__in=ProposalSupporter.objects.filter(proposal_id__in=proposal_ids)
            .exclude(user=user)
            .values("proposal_id")
        )
        case_ids = set(Proposal.objects.filter(pk__in=proposal_ids).values_list("case_id", flat=True))
        claimed = subject.in_scope(CorrectionCase.objects.filter(claimed_by=user), "course_id")
        decided = subject.in_scope(CorrectionCase.objects.filter(decided_by=user), "course_id")
        rules = subject.in_scope(ProcessRule.objects.filter(approved_by=user), "course_id")
        courses = set(CorrectionCase.objects.filter(pk__in=case_ids).values_list("course_id", flat=True))
        if dry_run:
            ledger.delete(supporters, dry_run=True)
            ledger.delete(alone, dry_run=True)
            ledger.pseudonymise(CorrectionCase, claimed.count() + decided.count())
            ledger.pseudonymise(ProcessRule, rules.count())
            return courses
        ledger.delete(supporters, dry_run=False)
        kept = Proposal.objects.filter(pk__in=proposal_ids).exclude(pk__in=alone)
        kept.update(supporter_count=F("supporter_count") - 1)
        ledger.delete(alone, dry_run=False)
        empty = CorrectionCase.objects.filter(pk__in=case_ids, status__in=UNDECIDED_CASE_STATUSES).exclude(
            pk__in=Proposal.objects.filter(case_id__in=case_ids).values("case_id")
        )
        ledger.delete(empty, dry_run=False)
        ledger.pseudonymise(CorrectionCase, claimed.update(claimed_by=None, claimed_until=None))
        ledger.pseudonymise(CorrectionCase, decided.update(decided_by=None, reason=""))
        ledger.pseudonymise(ProcessRule, rules.update(approved_by=None, reason=""))
        return courses

    def export(self, subject: Subject):
        memory = memory_list(subject.user, now=timezone.now())
        corrections = (
            Correction.objects.filter(user=subject.user).select_related("user").order_by("created_at")
        )
        return CorrectionsExportSerializer({"memory": list(memory), "corrections": list(corrections)}).data

    def export_serializer(self):
        return CorrectionsExportSerializer()
