"""Everything held about a person, as one document (SPEC §13: GDPR Art. 15
and 20, FERPA inspection).

Each registered part (``tutor.rights.registry``) adds its section under its
``export_key``, read as the person reads it through the API (hidden checks
stay hidden, staff-only traces stay staff's). ``student_export_zip`` adds the
evidence files as they were submitted, next to ``export.json``.
"""

from __future__ import annotations

import functools
import io
import json
import zipfile

from django.core.serializers.json import DjangoJSONEncoder
from django.utils import timezone
from rest_framework import serializers

from tutor.rights.registry import Subject, parts

EXPORT_FORMAT = "tutor-export-1"


class ExportUserSerializer(serializers.Serializer):
    username = serializers.CharField()
    display_name = serializers.CharField()
    email = serializers.CharField()
    date_joined = serializers.DateTimeField()
    last_login = serializers.DateTimeField(allow_null=True)


@functools.cache
def export_serializer_class() -> type[serializers.Serializer]:
    """The document's shape, from the registered parts (read once apps are ready)."""
    fields = {
        "format": serializers.CharField(help_text=EXPORT_FORMAT),
        "generated_at": serializers.DateTimeField(),
        "user": ExportUserSerializer(),
    }
    for part in parts():
        serializer = part.export_serializer()
        if part.export_key and serializer is not None:
            fields[part.export_key] = serializer
    return type("StudentExportSerializer", (serializers.Serializer,), fields)


def student_export(*, user) -> dict:
    """The document for ``user``: only their own rows, nothing of anyone else."""
    subject = Subject(user=user)
    document = {
        "format": EXPORT_FORMAT,
        "generated_at": timezone.now().isoformat(),
        "user": ExportUserSerializer(
            {
                "username": user.get_username(),
                "display_name": user.get_full_name() or user.get_username(),
                "email": user.email,
                "date_joined": user.date_joined,
                "last_login": user.last_login,
            }
        ).data,
    }
    for part in parts():
        if part.export_key:
            document[part.export_key] = part.export(subject)
    return document


def student_export_zip(*, user) -> bytes:
    """``export.json`` and the evidence files (``files/…``) in one zip."""
    buffer = io.BytesIO()
    subject = Subject(user=user)
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        text = json.dumps(student_export(user=user), cls=DjangoJSONEncoder, ensure_ascii=False, indent=2)
        archive.writestr("export.json", text)
        for part in parts():
            for path, content in part.evidence_files(subject):
                archive.writestr(f"files/{_safe(path)}", content)
    return buffer.getvalue()


def _safe(path: str) -> str:
    """A path inside the archive: no parent steps, no absolute paths."""
    pieces = [p for p in path.replace("\\", "/").split("/") if p not in ("", ".", "..")]
    return "/".join(pieces) or "file"
