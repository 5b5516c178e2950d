"""Validation and import of course files (SPEC §9, §1 ``import_course``).

The whole file is validated before anything is written; an error names the
field by its path (``tasks[1].rubric.criteria[0].id``) and nothing changes.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from django.db import transaction

from tutor.audit import audit_record
from tutor.kernel.datafiles import DataFileError, data_file_load
from tutor.kernel.errors import DomainError
from tutor.kernel.rubrics import RUBRIC_ID_MAX_CHARS, CheckType, CriterionKind, Visibility
from tutor.kernel.tags import tags_cleaned, tags_path, tags_problem
from tutor.models import AuditEvent, Course, Rubric, Task

SLUG_MAX_CHARS = 64


class CourseFileError(DomainError):
    """A malformed course file; ``field`` is the path of the offending value."""

    def __init__(self, field: str, message: str):
        super().__init__(f"invalid course file: {field}: {message}", field=field)


def load_course_file(path: str | Path) -> Any:
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise CourseFileError("FILE", f"cannot read {path}: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise CourseFileError("FILE", f"{path} is not UTF-8 text") from None
    try:
        return data_file_load(text, json_file=path.suffix.lower() == ".json")
    except DataFileError as exc:
        raise CourseFileError("FILE", f"{path} is not valid JSON/YAML: {exc}") from None


def _str(data: dict, key: str, where: str, *, required: bool = True, max_len: int | None = None):
    value = data.get(key)
    if value is None:
        if required:
            raise CourseFileError(f"{where}{key}", "is required")
        return ""
    if not isinstance(value, str):
        raise CourseFileError(f"{where}{key}", "must be a string")
    if required and not value.strip():
        raise CourseFileError(f"{where}{key}", "must not be empty")
    if max_len is not None and len(value) > max_len:
        raise CourseFileError(f"{where}{key}", f"must be at most {max_len} characters")
    return value


def _str_list(data: dict, key: str, where: str) -> list[str]:
    value = data.get(key, [])
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise CourseFileError(f"{where}{key}", "must be a list of strings")
    return value


def _tags(data: dict, where: str) -> list[str]:
    value = data.get("tags", [])
    if value is None:
        return []
    problem = tags_problem(value)
    if problem is None:
        return tags_cleaned(value)
    index, message = problem
    if index is not None and not isinstance(value[index], str):
        # YAML reads an unquoted on, 3.10 or 2026-01-01 as a boolean, number or date.
        message += f" (got {type(value[index]).__name__}: quote it)"
    raise CourseFileError(f"{where}{tags_path(index)}", message)


def _slug(data: dict, key: str, where: str) -> str:
    value = _str(data, key, where, max_len=SLUG_MAX_CHARS)
    if not all(c.isascii() and (c.isalnum() or c in "-_") for c in value):
        raise CourseFileError(f"{where}{key}", "may contain only letters, digits, '-' and '_'")
    return value


def validate_check(check: Any, where: str) -> dict | None:
    if check is None:
        return None
    if not isinstance(check, dict):
        raise CourseFileError(where, "must be a mapping with a 'type'")
    kind = check.get("type")
    if kind not in CheckType.values:
        raise CourseFileError(f"{where}.type", f"must be one of {', '.join(CheckType.values)}")
    if kind in ("ci_passed", "semantic"):
        extra = set(check) - {"type"}
        if extra:
            raise CourseFileError(where, f"unexpected keys for {kind}: {', '.join(sorted(extra))}")
        return {"type": kind}
    if kind == "file_exists":
        path = _str(check, "path", f"{where}.")
        return {"type": kind, "path": path}
    # contains: exactly one of field=report / file=PATH, and all/any terms
    if ("field" in check) == ("file" in check):
        raise CourseFileError(where, "contains needs exactly one of 'field: report' or 'file: PATH'")
    result: dict[str, Any] = {"type": kind}
    if "field" in check:
        if check["field"] != "report":
            raise CourseFileError(f"{where}.field", "must be 'report'")
        result["field"] = "report"
    else:
        result["file"] = _str(check, "file", f"{where}.")
    for key in ("all", "any"):
        if key in check:
            terms = _str_list(check, key, f"{where}.")
            if not terms or not all(t.strip() for t in terms):
                raise CourseFileError(f"{where}.{key}", "must be a non-empty list of non-empty strings")
            result[key] = terms
    if "all" not in result and "any" not in result:
        raise CourseFileError(where, "contains needs 'all' or 'any'")
    extra = set(check) - {"type", "field", "file", "all", "any"}
    if extra:
        raise CourseFileError(where, f"unexpected keys: {', '.join(sorted(extra))}")
    return result


def validate_criteria(criteria: Any, where: str) -> list[dict]:
    if not isinstance(criteria, list) or not criteria:
        raise CourseFileError(where, "must be a non-empty list")
    seen: set[str] = set()
    cleaned = []
    for i, item in enumerate(criteria):
        at = f"{where}[{i}]"
        if not isinstance(item, dict):
            raise CourseFileError(at, "must be a mapping")
        cid = item.get("id")
        if isinstance(cid, int) and not isinstance(cid, bool):
            cid = str(cid)
        if not isinstance(cid, str) or not cid.strip():
            raise CourseFileError(f"{at}.id", "is required and must be a string")
        if len(cid) > RUBRIC_ID_MAX_CHARS:
            raise CourseFileError(f"{at}.id", f"must be at most {RUBRIC_ID_MAX_CHARS} characters")
        if cid in seen:
            raise CourseFileError(f"{at}.id", f"duplicate criterion id {cid!r}")
        seen.add(cid)
        kind = item.get("kind")
        if kind not in CriterionKind.values:
            raise CourseFileError(f"{at}.kind", "must be 'acceptance' or 'learning'")
        text = _str(item, "text", f"{at}.")
        extra = set(item) - {"id", "kind", "text", "check", "visibility"}
        if extra:
            raise CourseFileError(at, f"unexpected keys: {', '.join(sorted(extra))}")
        entry = {
            "id": cid,
            "kind": kind,
            "text": text,
            "check": validate_check(item.get("check"), f"{at}.check"),
        }
        visibility = item.get("visibility", Visibility.VISIBLE)
        if visibility not in Visibility.values:
            raise CourseFileError(f"{at}.visibility", "must be 'visible' or 'hidden'")
        # Only a hidden criterion carries the key: the content hash of every
        # rubric written before visibility existed stays what it was.
        if visibility == Visibility.HIDDEN:
            entry["visibility"] = Visibility.HIDDEN.value
        cleaned.append(entry)
    return cleaned


def criteria_hash(criteria: list[dict]) -> str:
    """Canonical content hash of a criteria list (stamped on attempts, SPEC §2)."""
    canonical = json.dumps(criteria, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


@dataclass
class TaskSpec:
    slug: str
    title: str
    goal: str
    steps: list[str]
    materials: str
    tags: list[str]
    rubric_version: str
    criteria: list[dict]


@dataclass
class CourseSpec:
    slug: str
    title: str
    tasks: list[TaskSpec]


def validate_course(data: Any) -> CourseSpec:
    if not isinstance(data, dict):
        raise CourseFileError("(top level)", "must be a mapping with slug, title and tasks")
    slug = _slug(data, "slug", "")
    title = _str(data, "title", "", max_len=200)
    tasks_raw = data.get("tasks")
    if not isinstance(tasks_raw, list) or not tasks_raw:
        raise CourseFileError("tasks", "must be a non-empty list")
    tasks, seen = [], set()
    for i, raw in enumerate(tasks_raw):
        at = f"tasks[{i}]."
        if not isinstance(raw, dict):
            raise CourseFileError(f"tasks[{i}]", "must be a mapping")
        tslug = _slug(raw, "slug", at)
        if tslug in seen:
            raise CourseFileError(f"{at}slug", f"duplicate task slug {tslug!r}")
        seen.add(tslug)
        rubric = raw.get("rubric")
        if not isinstance(rubric, dict):
            raise CourseFileError(f"{at}rubric", "is required and must be a mapping")
        version = rubric.get("version")
        # An unquoted 2026.10 reaches us as the float 2026.1: turning it back into
        # text would silently merge two versions, so a decimal version must be quoted.
        if isinstance(version, float):
            raise CourseFileError(
                f"{at}rubric.version", "must be a quoted string: unquoted, 2026.10 is read as 2026.1"
            )
        if isinstance(version, int) and not isinstance(version, bool):
            version = str(version)
        if not isinstance(version, str) or not version.strip() or len(version) > 64:
            raise CourseFileError(f"{at}rubric.version", "is required: a string of 1-64 characters")
        tasks.append(
            TaskSpec(
                slug=tslug,
                title=_str(raw, "title", at, max_len=200),
                goal=_str(raw, "goal", at, required=False),
                steps=_str_list(raw, "steps", at),
                materials=_str(raw, "materials", at, required=False),
                tags=_tags(raw, at),
                rubric_version=version,
                criteria=validate_criteria(rubric.get("criteria"), f"{at}rubric.criteria"),
            )
        )
    return CourseSpec(slug=slug, title=title, tasks=tasks)


@dataclass
class ImportReport:
    course: Course
    created_tasks: list[str] = field(default_factory=list)
    updated_tasks: list[str] = field(default_factory=list)
    unchanged_tasks: list[str] = field(default_factory=list)
    rubric_changed: list[Task] = field(default_factory=list)


def course_import(*, spec: CourseSpec, actor=None, source: str = "") -> ImportReport:
    """Create or update a course from a validated spec, all or nothing.

    Rule (SPEC §1): a changed rubric ``version`` adds a Rubric row and keeps
    the old one; changed criteria under an existing version are refused, since
    attempts stamped with that version would silently change meaning. An
    import that changes something is audited as ``course_imported``, each new
    current rubric as ``rubric_bumped``; ``actor`` None is an operator.
    """
    with transaction.atomic():
        course, created = Course.objects.get_or_create(slug=spec.slug, defaults={"title": spec.title})
        title_changed = not created and course.title != spec.title
        if title_changed:
            course.title = spec.title
            course.save(update_fields=["title"])
        report = ImportReport(course=course)
        existing = {t.slug: t for t in Task.objects.filter(course=course).select_related("current_rubric")}
        for position, ts in enumerate(spec.tasks):
            fields = {
                "title": ts.title,
                "goal": ts.goal,
                "steps": ts.steps,
                "materials": ts.materials,
                "tags": ts.tags,
                "position": position,
            }
            task = existing.get(ts.slug)
            if task is None:
                task = Task.objects.create(course=course, slug=ts.slug, **fields)
                report.created_tasks.append(ts.slug)
                changed_fields = []
            else:
                changed_fields = [k for k, v in fields.items() if getattr(task, k) != v]
                for k in changed_fields:
                    setattr(task, k, fields[k])
            digest = criteria_hash(ts.criteria)
            rubric = Rubric.objects.filter(task=task, version=ts.rubric_version).first()
            if rubric is None:
                rubric = Rubric.objects.create(
                    task=task, version=ts.rubric_version, criteria=ts.criteria, content_hash=digest
                )
            elif rubric.content_hash != digest:
                raise CourseFileError(
                    f"tasks[{position}].rubric",
                    f"criteria changed: bump the rubric version (version {ts.rubric_version!r} "
                    "already exists with different criteria)",
                )
            if task.current_rubric_id != rubric.pk:
                if task.current_rubric_id is not None:
                    report.rubric_changed.append(task)
                    audit_record(
                        actor=actor,
                        event=AuditEvent.Event.RUBRIC_BUMPED,
                        target=task,
                        course=course,
                        from_state=task.current_rubric.version,
                        to_state=rubric.version,
                        extra={"rubric_hash": rubric.content_hash},
                    )
                task.current_rubric = rubric
                changed_fields.append("current_rubric")
            if changed_fields:
                task.save(update_fields=changed_fields)
                if ts.slug not in report.created_tasks:
                    report.updated_tasks.append(ts.slug)
            elif ts.slug not in report.created_tasks:
                report.unchanged_tasks.append(ts.slug)
        if created or report.created_tasks or report.updated_tasks or title_changed:
            audit_record(
                actor=actor,
                event=AuditEvent.Event.COURSE_IMPORTED,
                target=course,
                course=course,
                to_state="created" if created else "updated",
                extra={
                    "source": source,
                    "created_tasks": report.created_tasks,
                    "updated_tasks": report.updated_tasks,
                    "rubric_bumped": [t.slug for t in report.rubric_changed],
                },
            )
        return report
