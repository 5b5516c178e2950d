"""How review records read in admin (SPEC §8): tables, not raw JSON."""

from __future__ import annotations

from collections import Counter

from django.utils.html import format_html, format_html_join

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
