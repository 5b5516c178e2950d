"""The lessons app's staff queues on the desk (SPEC §6, §8): drafts to
approve, approved lessons not in use yet, harmful lessons (quarantined, and
for superusers the held global ones) and skill candidates. Global lessons
are a superuser's: a course scope counts its courses' lessons only."""

from __future__ import annotations

from django.db.models import Q
from django.utils.translation import gettext_lazy as _

from lessons.models import Lesson, LessonStatus, SkillCandidate, SkillCandidateStatus
from lessons.services.lifecycle import held_global_lessons
from tutor.desk.queues import QuerysetQueue


def _scoped(qs, course_ids, path: str = "course_id"):
    return qs if course_ids is None else qs.filter(**{f"{path}__in": course_ids})


class DraftsQueue(QuerysetQueue):
    name = "lesson_drafts"
    label = _("Lesson drafts")
    position = 40
    admin_url = "admin:lessons_lesson_changelist"
    query = "queue=pending"

    def items(self, *, course_ids):
        return _scoped(Lesson.objects.filter(status=LessonStatus.PENDING), course_ids)


class ApprovedQueue(QuerysetQueue):
    name = "lessons_approved_unused"
    label = _("Approved lessons not in use")
    position = 45
    admin_url = "admin:lessons_lesson_changelist"
    query = "queue=approved"

    def items(self, *, course_ids):
        return _scoped(Lesson.objects.filter(status=LessonStatus.APPROVED), course_ids)


class HarmfulQueue(QuerysetQueue):
    name = "lessons_harmful"
    label = _("Harmful lessons")
    position = 50
    admin_url = "admin:lessons_lesson_changelist"
    query = "queue=harmful"

    def items(self, *, course_ids):
        return harmful_queue(Lesson.objects.all(), course_ids=course_ids)


def harmful_queue(qs, *, course_ids):
    """Quarantined lessons (a person decides: inject again or retire) and,
    in every-course scope, the held global lessons (``held_global_lessons``)."""
    if course_ids is None:
        return qs.filter(Q(status=LessonStatus.QUARANTINED) | Q(pk__in=held_global_lessons().values("pk")))
    return qs.filter(status=LessonStatus.QUARANTINED, course_id__in=course_ids)


class SkillCandidatesQueue(QuerysetQueue):
    name = "skill_candidates"
    label = _("Skill candidates")
    position = 55
    admin_url = "admin:lessons_skillcandidate_changelist"
    query = "status=open"

    def items(self, *, course_ids):
        qs = SkillCandidate.objects.filter(status=SkillCandidateStatus.OPEN)
        return _scoped(qs, course_ids, "lesson__course_id")


QUEUES = (DraftsQueue(), ApprovedQueue(), HarmfulQueue(), SkillCandidatesQueue())
