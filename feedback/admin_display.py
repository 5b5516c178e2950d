"""How review records read in admin (SPEC §8): tables, not raw JSON."""

from __future__ import annotations

from collections import Counter

from django.utils.html import format_html, format_html_join
from django.utils.translation import gettext as _

from tutor.kernel.rubrics import Verdict

STATUS_STYLE = {
    Verdict.PASS: "color:#1a7f37",
    Verdict.FAIL: "color:#cf222e;font-weight:bold",
    Verdict.NEED_REVIEW: "color:#9a6700;font-weight:bold",
}


def criteria_of(result) -> list[dict]:
    if not isinstance(result, dict) or not isinstance(result.get("criteria"), list):
        return []
    return [c for c in result["criteria"] if isinstance(c, dict)]


def basis_summary(result) -> str:
    """ "check 2 · ci 1 · model 1": who judged how many criteria."""
    counts = Counter(str(c.get("basis", "?")) for c in criteria_of(result))
    return " · ".join(f"{basis} {n}" for basis, n in sorted(counts.items())) or "-"


def overall_of(result) -> str:
    if isinstance(result, dict) and result.get("overall"):
        return str(result["overall"])
    return "-"


def criteria_table(result):
    """The criteria of a result as an HTML table: id, kind, status, basis, reason, evidence."""
    rows = criteria_of(result)
    if not rows:
        return "-"
    body = format_html_join(
        "",
        '<tr><td><b>{}</b></td><td>{}</td><td style="{}">{}</td><td>{}</td><td>{}</td>'
        '<td style="white-space:pre-wrap">{}</td><td style="white-space:pre-wrap">{}</td></tr>',
        (
            (
                c.get("rubric_id", ""),
                c.get("criterion", ""),
                STATUS_STYLE.get(c.get("status"), ""),
                c.get("status", ""),
                c.get("kind", ""),
                c.get("basis", ""),
                c.get("reason", ""),
                c.get("evidence", ""),
            )
            for c in rows
        ),
    )
    next_step = result.get("next_step") if isinstance(result, dict) else ""
    return format_html(
        '<table class="criteria-table"><thead><tr><th>id</th><th>criterion</th><th>status</th>'
        "<th>kind</th><th>basis</th><th>reason</th><th>evidence</th></tr></thead><tbody>{}</tbody></table>"
        "<p><b>Next step:</b> {}</p>",
        body,
        next_step or "-",
    )


def evidence_summary(evidence) -> str:
    """Sizes, file names and the CI status: what a list may show of 1 MiB of evidence."""
    if not isinstance(evidence, dict):
        return "-"
    files = evidence.get("files") or {}
    ci = evidence.get("ci") or {}
    names = ", ".join(sorted(files)[:10]) + (" …" if len(files) > 10 else "")
    report = evidence.get("report") or ""
    ci_text = f"CI {ci.get('status')} (exit {ci.get('exit_code')})" if ci else "no CI result"
    return f"report {len(report)} chars; {len(files)} files{': ' + names if names else ''}; {ci_text}"


def _size(text: str) -> str:
    """Bytes and lines (a last line without a newline counts; a final newline adds none)."""
    lines = text.count("\n") + (1 if text and not text.endswith("\n") else 0)
    return _("%(bytes)s bytes, %(lines)s lines") % {"bytes": len(text.encode("utf-8")), "lines": lines}


def _file_block(name: str, text: str, *, css: str = ""):
    """One text as a block: its name, its size, and its lines numbered."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    body = format_html_join("", "<li>{}</li>", ((line,) for line in lines)) if lines else ""
    return format_html(
        '<section class="evidence-file {}"><header><span class="path">{}</span>'
        '<span class="size">{}</span></header><pre><ol>{}</ol></pre></section>',
        css,
        name,
        _size(text),
        body or format_html("<li><i>{}</i></li>", _("(empty)")),
    )


def redaction_counts(counts) -> str:
    """Per field, how many secrets were replaced before the evidence was
    stored (``Submission.evidence_redactions``, SPEC §2)."""
    if not isinstance(counts, dict) or not counts:
        return ""
    text = ", ".join(f"{field} ×{n}" for field, n in sorted(counts.items()) if n)
    return format_html('<p class="evidence-redactions">{} {}</p>', _("Redacted before storage:"), text or "0")


def evidence_files(evidence, redactions=None):
    """The evidence as files (SPEC §8): the report as text, each file a block
    with line numbers and its size, the CI part as status, exit code and log
    tail. Staff see all of it (SPEC §9: hidden checks hide from students)."""
    if not isinstance(evidence, dict):
        return "-"
    ci = evidence.get("ci") if isinstance(evidence.get("ci"), dict) else None
    files = evidence.get("files") if isinstance(evidence.get("files"), dict) else {}
    if ci:
        ci_html = format_html(
            '<section class="evidence-ci"><dl><dt>{}</dt><dd>{}</dd><dt>{}</dt><dd>{}</dd></dl>{}</section>',
            _("CI status"),
            ci.get("status", "-"),
            _("exit code"),
            ci.get("exit_code", "-"),
            _file_block(_("CI log tail"), str(ci.get("log_tail") or ""), css="ci-log"),
        )
    else:
        ci_html = format_html('<p class="evidence-ci">{}</p>', _("No CI result."))
    return format_html(
        '<div class="evidence">{}{}{}{}</div>',
        redaction_counts(redactions),
        _file_block("REPORT", str(evidence.get("report") or ""), css="report"),
        format_html_join("", "{}", ((_file_block(path, str(text)),) for path, text in sorted(files.items()))),
        ci_html,
    )
