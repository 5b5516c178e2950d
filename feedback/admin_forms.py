"""The staff verdict form of the admin queue (SPEC §2, §8): one row per
criterion of the current rubric, status and reason, and an optional next step."""

from __future__ import annotations

from django import forms

from feedback.serializers import VERDICT_NEXT_STEP_MAX_CHARS, VERDICT_REASON_MAX_CHARS
from tutor.kernel.rubrics import Verdict

KEEP = ""


class VerdictForm(forms.Form):
    next_step = forms.CharField(
        required=False,
        max_length=VERDICT_NEXT_STEP_MAX_CHARS,
        widget=forms.Textarea(attrs={"rows": 2, "cols": 80}),
        help_text="Optional. Without it, the earlier next step is kept only while it names a criterion "
        "that is still not PASS.",
    )

    def __init__(self, *args, criteria: list[dict], current: dict[str, dict], **kwargs):
        super().__init__(*args, **kwargs)
        self.criteria = criteria
        self.current = current
        for c in criteria:
            cid = c["id"]
            now = current.get(cid, {})
            self.fields[f"status_{cid}"] = forms.ChoiceField(
                label=f"{cid} status",
                required=False,
                choices=[(KEEP, f"keep ({now.get('status', 'not reviewed')})")] + list(Verdict.choices),
            )
            self.fields[f"reason_{cid}"] = forms.CharField(
                label=f"{cid} reason",
                required=False,
                max_length=VERDICT_REASON_MAX_CHARS,
                widget=forms.TextInput(attrs={"size": 60}),
            )

    def rows(self):
        """(criterion, current result entry, status field, reason field) per criterion."""
        for c in self.criteria:
            yield c, self.current.get(c["id"], {}), self[f"status_{c['id']}"], self[f"reason_{c['id']}"]

    def clean(self):
        cleaned = super().clean()
        verdicts = []
        for c in self.criteria:
            status = cleaned.get(f"status_{c['id']}")
            reason = (cleaned.get(f"reason_{c['id']}") or "").strip()
            if status:
                if not reason:
                    self.add_error(f"reason_{c['id']}", "A verdict needs a reason the student can read.")
                verdicts.append({"rubric_id": c["id"], "status": status, "reason": reason})
            elif reason:
                self.add_error(f"status_{c['id']}", "Choose a status for this reason, or clear the reason.")
        if not verdicts and not self.errors:
            raise forms.ValidationError("Set the status of at least one criterion.")
        cleaned["verdicts"] = verdicts
        return cleaned
