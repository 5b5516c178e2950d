"""Routes of the lessons API, registered on the project's router (``tutor.urls``)."""

from lessons import api


def register(router) -> None:
    # The more specific prefixes first; lesson ids are UUIDs, so "recall",
    # "deltas", "traces" and "skill-candidates" never read as one.
    router.register("lessons/skill-candidates", api.SkillCandidateViewSet, basename="skill-candidate")
    router.register("lessons/traces", api.RecallTraceViewSet, basename="recall-trace")
    router.register("lessons", api.LessonViewSet, basename="lesson")
