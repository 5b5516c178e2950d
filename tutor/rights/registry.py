"""Data rights per app (SPEC §13): each app erases, pseudonymises and
exports its own rows.

The section providers' pattern: tutor never imports an app. Each app
registers one ``RightsPart`` from its ``AppConfig.ready()``; the services of
``tutor.rights`` run every registered part in ``position`` order (erasure in
one transaction, export into one document). A part names the rule for each
of its models in ``rules`` -- "deleted", "pseudonymised: …", "holds no
person" -- and a test fails when a model of the project has no rule, so a
model added later cannot be forgotten.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from django.db import models


@dataclass(frozen=True)
class Subject:
    """The person whose data a service handles.

    ``course_ids`` is None for the whole person, else the courses whose data
    goes (``erase_student --course``). ``pseudonym`` is the stand-in user
    that records kept for the course point at instead (``erased-<hash>``);
    ``identifiers`` are the strings that name the person (username, e-mail,
    LTI subjects, names), replaced by the pseudonym's name in kept text."""

    user: Any
    course_ids: tuple | None = None
    pseudonym: Any = None
    identifiers: tuple[str, ...] = ()

    @property
    def user_id(self) -> int:
        return self.user.pk

    @property
    def whole(self) -> bool:
        """The whole person goes (and their user row last)."""
        return self.course_ids is None

    def in_scope(self, queryset: models.QuerySet, course_path: str) -> models.QuerySet:
        """``queryset`` limited to the subject's courses (``course_path``: the
        lookup from its model to the course id)."""
        if self.course_ids is None:
            return queryset
        return queryset.filter(**{f"{course_path}__in": self.course_ids})


@dataclass(frozen=True)
class RetentionScope:
    """Which courses' rows a retention batch handles: ``course_ids``, or
    (None) every row whose course is not in ``other_course_ids`` -- rows
    without a course included: the courses that follow the setting."""

    course_ids: tuple | None
    other_course_ids: tuple = ()

    def of(self, queryset: models.QuerySet, course_path: str) -> models.QuerySet:
        if self.course_ids is not None:
            return queryset.filter(**{f"{course_path}__in": self.course_ids})
        if not self.other_course_ids:
            return queryset
        return queryset.exclude(**{f"{course_path}__in": self.other_course_ids})


def delete_batch(queryset: models.QuerySet, *, limit: int | None, dry_run: bool) -> int:
    """Delete the oldest ``limit`` rows of ``queryset`` by primary key in a
    short transaction of their own (never a lock over a whole table), or
    count them all in a dry run."""
    from django.db import transaction

    if dry_run:
        return queryset.count()
    pks = list(queryset.order_by("pk").values_list("pk", flat=True)[:limit])
    if not pks:
        return 0
    with transaction.atomic():
        queryset.model._base_manager.filter(pk__in=pks).delete()
    return len(pks)


@dataclass
class Ledger:
    """What an erasure did (or, in a dry run, would do), per model label:
    ``deleted`` and ``pseudonymised`` row counts; and the rows whose audit
    records must forget what they showed of them (``targets``: model label ->
    primary keys as strings)."""

    deleted: Counter = field(default_factory=Counter)
    pseudonymised: Counter = field(default_factory=Counter)
    targets: dict[str, set[str]] = field(default_factory=dict)

    def delete(self, queryset: models.QuerySet, *, dry_run: bool) -> int:
        """Delete ``queryset`` (with what cascades) and count per model."""
        self.forget_targets(queryset)
        if dry_run:
            label = queryset.model._meta.label
            count = queryset.count()
            if count:
                self.deleted[label] += count
            return count
        total, per_model = queryset.delete()
        for label, count in per_model.items():
            if count:
                self.deleted[label] += count
        return total

    def pseudonymise(self, model: type[models.Model], count: int) -> None:
        if count:
            self.pseudonymised[model._meta.label] += count

    def forget_targets(self, queryset: models.QuerySet) -> None:
        label = queryset.model._meta.label
        self.targets.setdefault(label, set()).update(str(pk) for pk in queryset.values_list("pk", flat=True))

    def counts(self) -> dict[str, dict[str, int]]:
        labels = sorted(set(self.deleted) | set(self.pseudonymised))
        return {
            label: {"deleted": self.deleted.get(label, 0), "pseudonymised": self.pseudonymised.get(label, 0)}
            for label in labels
        }


class RightsPart(ABC):
    """One app's rows under the data rights. ``rules``: model label -> what
    an erasure does to its rows (the README's data protection table reads
    them); ``export_key``: the key of its section in the export document."""

    name: str = ""
    position: int = 0
    rules: dict[str, str] = {}
    export_key: str | None = None

    def retention(self) -> dict[str, Callable[..., int]]:
        """The kinds of data (``tutor.models.RetentionKind``) whose retention
        this app applies: kind -> ``fn(*, scope, before, limit, dry_run)``
        deleting (or pseudonymising) at most ``limit`` rows older than
        ``before`` in ``scope`` (``RetentionScope``) in one short transaction
        and returning how many; with ``dry_run``, counting them all."""
        return {}

    @abstractmethod
    def erase(self, subject: Subject, ledger: Ledger, *, dry_run: bool) -> None:
        """Delete or pseudonymise the subject's rows of this app (inside the
        erasure's transaction; with ``dry_run`` count them and write nothing)."""

    def identifiers(self, user) -> list[str]:
        """Strings of this app that name ``user`` (replaced in kept text)."""
        return []

    def scan_identifiers(self, user) -> list[str]:
        """Those of them the residue scan looks for (SPEC §13: the LTI ``sub``)."""
        return []

    def export(self, subject: Subject) -> Any:
        """This app's section of the subject's export document."""
        return None

    def export_serializer(self):
        """A serializer instance describing ``export``'s shape (OpenAPI)."""
        return None

    def evidence_files(self, subject: Subject) -> list[tuple[str, str]]:
        """Files of the export zip: ``(path, text)``."""
        return []


_registry: dict[str, RightsPart] = {}


def register(part: RightsPart) -> None:
    """Add ``part``, or replace the one registered under its name."""
    if not part.name:
        raise ValueError("a rights part needs a name")
    _registry[part.name] = part


def parts() -> list[RightsPart]:
    return sorted(_registry.values(), key=lambda p: (p.position, p.name))


def rules() -> dict[str, str]:
    """Every registered rule, by model label."""
    merged: dict[str, str] = {}
    for part in parts():
        merged.update(part.rules)
    return merged
