"""The versions a review attempt is stamped with (SPEC §2, §3).

An attempt is *compatible* (current) when its rubric version and hash, prompt
version and engine version equal the task's current ones. The model is
provenance only: changing it never makes an attempt stale.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.conf import settings

from tutor.models import Rubric, Task


@dataclass(frozen=True)
class Versions:
    rubric: Rubric
    rubric_version: str
    rubric_hash: str
    prompt_version: str
    engine_version: str
    model: str

    def stamp(self) -> dict:
        return {
            "rubric": self.rubric,
            "rubric_version": self.rubric_version,
            "rubric_hash": self.rubric_hash,
            "prompt_version": self.prompt_version,
            "engine_version": self.engine_version,
            "model": self.model,
        }

    def compatible_filter(self, prefix: str = "") -> dict:
        """Lookup kwargs selecting attempts made under these versions."""
        return {
            f"{prefix}rubric_version": self.rubric_version,
            f"{prefix}rubric_hash": self.rubric_hash,
            f"{prefix}prompt_version": self.prompt_version,
            f"{prefix}engine_version": self.engine_version,
        }


class NoRubric(ValueError):
    pass


def current_versions(task: Task) -> Versions:
    rubric = task.current_rubric
    if rubric is None:
        raise NoRubric(f"task {task.pk} has no rubric")
    return Versions(
        rubric=rubric,
        rubric_version=rubric.version,
        rubric_hash=rubric.content_hash,
        prompt_version=settings.REVIEW_PROMPT_VERSION,
        engine_version=settings.REVIEW_ENGINE_VERSION,
        model=settings.TUTOR_LLM_MODEL,
    )


def is_compatible(attempt, versions: Versions) -> bool:
    return (
        attempt.rubric_version == versions.rubric_version
        and attempt.rubric_hash == versions.rubric_hash
        and attempt.prompt_version == versions.prompt_version
        and attempt.engine_version == versions.engine_version
    )
