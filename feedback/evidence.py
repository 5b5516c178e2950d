"""Evidence normalisation, limits and the snapshot hash (SPEC §2)."""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

from django.conf import settings

from tutor.kernel.errors import PayloadTooLarge
from tutor.kernel.redaction import redact, unmarked


class EvidenceTooLarge(PayloadTooLarge):
    """Evidence over a size limit: the API answers 413 and stores nothing."""


def normalize_evidence(raw: dict[str, Any]) -> dict[str, Any]:
    """Fill the optional keys with their empty values (SPEC §2): missing
    ``report`` → "", ``files`` → {}, ``ci`` → null, provenance → ""."""
    return {
        "report": raw.get("report") or "",
        "files": dict(raw.get("files") or {}),
        "ci": raw.get("ci") or None,
        "head_sha": raw.get("head_sha") or "",
        "repo_url": raw.get("repo_url") or "",
    }


def _utf8_len(text: str) -> int:
    return len(text.encode("utf-8"))


def check_evidence_limits(evidence: dict[str, Any]) -> None:
    """Raise EvidenceTooLarge naming the limit that was crossed (SPEC §2:
    1 MiB total, 200 files, 256 KiB per file)."""
    files = evidence["files"]
    if len(files) > settings.EVIDENCE_MAX_FILES:
        raise EvidenceTooLarge(
            f"evidence.files has {len(files)} files; at most {settings.EVIDENCE_MAX_FILES} are allowed"
        )
    for path, text in files.items():
        size = _utf8_len(text)
        if size > settings.EVIDENCE_MAX_FILE_BYTES:
            raise EvidenceTooLarge(
                f"evidence.files[{path[:80]!r}] is {size} bytes; at most "
                f"{settings.EVIDENCE_MAX_FILE_BYTES} bytes per file are allowed"
            )
    total = _utf8_len(json.dumps(evidence, ensure_ascii=False, separators=(",", ":")))
    if total > settings.EVIDENCE_MAX_BYTES:
        raise EvidenceTooLarge(
            f"evidence is {total} bytes; at most {settings.EVIDENCE_MAX_BYTES} bytes are allowed"
        )


_COMMIT_SHA = re.compile(r"^[0-9a-fA-F]{7,64}$")


def redact_evidence(evidence: dict[str, Any]) -> tuple[dict[str, Any], dict[str, int]]:
    """The evidence as it is stored (SPEC §2, turn 3): every text redacted
    (``tutor.kernel.redaction``), and how many redactions each field had --
    ``report``, ``files/<path>``, ``ci.log_tail``, ``repo_url``, ``head_sha``
    -- for staff. File paths stay as sent (checks name them); a commit
    hash in ``head_sha`` is provenance, not a secret."""
    counts: dict[str, int] = {}

    def text(name: str, value: str) -> str:
        result = redact(unmarked(value)) if value else None
        if result is None:
            return value
        if result.count:
            counts[name] = result.count
        return result.text

    stored = dict(evidence)
    stored["report"] = text("report", evidence["report"])
    stored["files"] = {path: text(f"files/{path}", body) for path, body in evidence["files"].items()}
    ci = evidence["ci"]
    if isinstance(ci, dict) and isinstance(ci.get("log_tail"), str):
        stored["ci"] = {**ci, "log_tail": text("ci.log_tail", ci["log_tail"])}
    stored["repo_url"] = text("repo_url", evidence["repo_url"])
    if not _COMMIT_SHA.match(evidence["head_sha"]):
        stored["head_sha"] = text("head_sha", evidence["head_sha"])
    return stored, counts


def snapshot_hash(evidence: dict[str, Any]) -> str:
    """SHA-256 of the canonical JSON of {report, files, ci} (SPEC §2);
    ``head_sha`` and ``repo_url`` are provenance and do not take part."""
    canonical = json.dumps(
        {"report": evidence["report"], "files": evidence["files"], "ci": evidence["ci"]},
        sort_keys=True,
        ensure_ascii=False,
        separators=(",", ":"),
    )
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def evidence_summary(evidence: dict[str, Any]) -> dict[str, Any]:
    """What a list of submissions shows instead of the evidence (SPEC §7):
    sizes, file names and the CI result, never the text itself."""
    files = evidence.get("files") or {}
    ci = evidence.get("ci") or None
    return {
        "report_chars": len(evidence.get("report") or ""),
        "file_count": len(files),
        "files": [{"path": path, "bytes": _utf8_len(text)} for path, text in sorted(files.items())],
        "total_bytes": _utf8_len(json.dumps(evidence, ensure_ascii=False, separators=(",", ":"))),
        "ci_status": ci.get("status") if ci else None,
        "ci_exit_code": ci.get("exit_code") if ci else None,
    }
