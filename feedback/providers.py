"""The feedback section of the tutor's system message (SPEC §3 placement).

The fixed usage text, then the fenced, budgeted block of the student's latest
review. The selection and its rendering come with the request (every
provider may read them: the lessons app looks for symptoms in the block's
items), so this provider reads nothing itself.
"""

from __future__ import annotations

from feedback.block import FEEDBACK_USAGE_TEXT
from tutor.context.providers import FEEDBACK_POSITION, ContextRequest, Section, SectionProvider


class FeedbackSection(SectionProvider):
    name = "feedback"
    position = FEEDBACK_POSITION
    ids_key = "feedback_rubric_ids"
    omitted_key = "feedback_items"

    def build(self, request: ContextRequest) -> Section:
        rendered = request.feedback_block
        meta = rendered.meta
        return Section(
            text=f"{FEEDBACK_USAGE_TEXT}\n\n{rendered.text}",
            ids=meta["included_rubric_ids"],
            omitted=meta["omitted_count"],
            used_chars=meta["chars"],
            budget_chars=meta["budget_chars"],
            truncated=meta["truncated_fields"],
        )
