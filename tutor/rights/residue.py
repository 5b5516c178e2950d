"""The residue check that ends every erasure (SPEC §13): is anything of the
person left? Generic on purpose: one query per table of the app registry.
Details: docs/architecture.md, Data rights.
"""

from __future__ import annotations

import json
import re
from collections import deque
from dataclasses import dataclass

from django.apps import apps
from django.conf import settings
from django.contrib.contenttypes.models import ContentType
from django.db import models
from django.db.models import Q
from django.db.models.functions import Cast

from tutor.rights.subjects import PERSON_KEYS, json_number_forms

PROJECT_APPS = ("tutor", "feedback", "corrections", "lessons", "lti")
PERSON_TABLES = ("auth.User", "authtoken.Token", "admin.LogEntry")
TEXT_FIELDS = (models.CharField, models.TextField)
COURSE_PATH_DEPTH = 4


@dataclass(frozen=True)
class Hit:
    """One column of one row that still holds the person: ``what`` is the
    needle's label ("username", "canary 3", "user id"), never its value."""

    table: str
    column: str
    pk: str
    what: str

    def line(self) -> str:
        return f"{self.table}.{self.column} row {self.pk}: {self.what}"


def project_models() -> list[type[models.Model]]:
    """Every model of the project's apps, managed or not, in a fixed order."""
    found = []
    for label in PROJECT_APPS:
        found.extend(apps.get_app_config(label).get_models(include_auto_created=True))
    return sorted(found, key=lambda m: m._meta.label)


def scanned_models() -> list[type[models.Model]]:
    return project_models() + [apps.get_model(label) for label in PERSON_TABLES]


def course_path(model) -> str | None:
    """The lookup from ``model`` to its course's id through foreign keys
    (shortest first), or None."""
    course = apps.get_model("tutor", "Course")
    if model is course:
        return "pk"
    queue = deque([(model, "")])
    seen = {model}
    while queue:
        current, path = queue.popleft()
        if path.count("__") >= COURSE_PATH_DEPTH:
            continue
        fields = sorted(
            (f for f in current._meta.concrete_fields if f.is_relation and f.many_to_one),
            key=lambda f: (f.name != "course", f.name),
        )
        for field in fields:
            lookup = f"{path}__{field.name}" if path else field.name
            if field.related_model is course:
                return lookup
            if field.related_model not in seen and field.related_model._meta.app_label in PROJECT_APPS:
                seen.add(field.related_model)
                queue.append((field.related_model, lookup))
    return None


def _word(needle: str) -> re.Pattern:
    return re.compile(rf"(?<!\w){re.escape(needle)}(?!\w)", re.IGNORECASE)


def _json_forms(needle: str) -> set[str]:
    """The needle as it may stand inside stored JSON (escaped, or not)."""
    return {needle, json.dumps(needle)[1:-1], json.dumps(needle, ensure_ascii=False)[1:-1]}


@dataclass(frozen=True)
class Needle:
    value: str
    label: str
    whole_word: bool

    def found_in(self, text: str) -> bool:
        if self.whole_word:
            return bool(_word(self.value).search(text))
        return self.value.lower() in text.lower()


def _strings(value):
    if isinstance(value, dict):
        for v in value.values():
            yield from _strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)
    elif isinstance(value, str):
        yield value


def _person_ids(value, key: str = ""):
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _person_ids(v, str(k))
    elif isinstance(value, list):
        for v in value:
            yield from _person_ids(v, key)
    elif isinstance(value, int) and not isinstance(value, bool) and PERSON_KEYS.match(key):
        yield value


def residue_scan(
    *, user_id: int, names: dict[str, str], canaries: tuple[str, ...] = (), course_ids=None
) -> list[Hit]:
    """Every place the person is left: ``names`` maps identifiers to labels
    (whole words), ``canaries`` are texts they wrote (anywhere)."""
    needles = [Needle(v, label, True) for v, label in names.items() if v]
    needles += [Needle(c, f"canary {i}", False) for i, c in enumerate(canaries, start=1) if c]
    user_model = apps.get_model(settings.AUTH_USER_MODEL)
    user_type = ContentType.objects.get_for_model(user_model)
    hits: list[Hit] = []
    for model in scanned_models():
        rows = model._base_manager.all()
        if course_ids is not None:
            path = course_path(model)
            if path is None:
                continue
            rows = rows.filter(**{f"{path}__in": list(course_ids)})
        hits.extend(_scan_table(model, rows, user_id, user_type, needles))
    return hits


def _scan_table(model, rows, user_id, user_type, needles) -> list[Hit]:
    table = model._meta.db_table
    texts, jsons, people, generic = [], [], [], []
    for field in model._meta.concrete_fields:
        if field.is_relation and field.many_to_one and field.related_model is user_type.model_class():
            people.append(field)
        elif isinstance(field, models.JSONField):
            jsons.append(field)
        elif isinstance(field, TEXT_FIELDS) and not field.choices:
            texts.append(field)
    for field in model._meta.concrete_fields:
        if field.is_relation and field.related_model is ContentType:
            prefix = field.name.removesuffix("_type").removesuffix("content")
            partner = next((f for f in texts if f.name in (f"{prefix}_id", "object_id", f"{prefix}id")), None)
            if partner is not None:
                generic.append((field, partner))
    where = Q()
    annotations = {}
    for field in texts:
        for needle in needles:
            where |= Q(**{f"{field.name}__icontains": needle.value})
    for field in jsons:
        alias = f"_residue_{field.name}"
        annotations[alias] = Cast(field.name, models.TextField())
        forms = {form for needle in needles for form in _json_forms(needle.value)}
        for form in forms:
            where |= Q(**{f"{alias}__icontains": form})
        for form in json_number_forms(user_id):
            where |= Q(**{f"{alias}__contains": form})
    for field in people:
        where |= Q(**{field.attname: user_id})
    for type_field, id_field in generic:
        where |= Q(**{type_field.attname: user_type.pk, id_field.name: str(user_id)})
    if not where:
        return []
    columns = [f.attname for f in [*texts, *jsons, *people]]
    columns += [f.attname for pair in generic for f in pair]
    candidates = rows.annotate(**annotations).filter(where).values("pk", *dict.fromkeys(columns))
    hits = []
    for row in candidates.iterator(chunk_size=500):
        pk = str(row["pk"])
        for field in texts:
            value = row[field.attname] or ""
            hits += [Hit(table, field.column, pk, n.label) for n in needles if n.found_in(value)]
        for field in jsons:
            value = row[field.attname]
            if isinstance(value, str):  # a JSON text Django did not decode
                value = _decoded(value)
            strings = list(_strings(value))
            hits += [
                Hit(table, field.column, pk, n.label) for n in needles if any(n.found_in(s) for s in strings)
            ]
            if user_id in set(_person_ids(value)):
                hits.append(Hit(table, field.column, pk, "user id"))
        for field in people:
            if row[field.attname] == user_id:
                hits.append(Hit(table, field.column, pk, "user id"))
        for type_field, id_field in generic:
            if row[type_field.attname] == user_type.pk and row[id_field.attname] == str(user_id):
                hits.append(Hit(table, f"{type_field.column}+{id_field.column}", pk, "user id"))
    return hits


def _decoded(text: str):
    try:
        return json.loads(text)
    except ValueError:
        return text
