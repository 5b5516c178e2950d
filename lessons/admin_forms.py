"""The forms of the lessons admin (SPEC §6, §8): staff's manual entry, a
rejection with its template reason, and the edit of a pending draft. Each
field is checked by the rule every door shares (``lessons.validation``)."""

from __future__ import annotations

from django import forms
from django.utils import timezone

from lessons import access
from lessons.models import Lesson, RejectReason
from lessons.validation import clean_body, clean_symptoms, clean_tags, clean_title
from tutor.kernel.errors import DomainError
from tutor.models import Course


def _lines(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if line.strip()]


class LessonAddForm(forms.ModelForm):
    """Staff's manual entry: one tag or symptom per line; stored through
    ``lesson_create`` (redacted, pending)."""

    tags_text = forms.CharField(
        label="tags", required=False, widget=forms.Textarea(attrs={"rows": 3}), help_text="one per line"
    )
    symptoms_text = forms.CharField(
        label="symptoms",
        required=False,
        widget=forms.Textarea(attrs={"rows": 3}),
        help_text="one phrase per line, as it appears in feedback or messages",
    )
    review_by = forms.DateField(required=False, help_text="default: 90 days from today")

    class Meta:
        model = Lesson
        fields = ["course", "title", "body", "kind"]

    def __init__(self, *args, request=None, **kwargs):
        super().__init__(*args, **kwargs)
        user = self.user = request.user if request is not None else None
        courses = Course.objects.all()
        if user is not None and not user.is_superuser:
            courses = courses.filter(pk__in=access.staff_course_ids(user))
            self.fields["course"].required = True
        self.fields["course"].queryset = courses
        self.fields["course"].help_text = "empty: a global lesson (superusers only)"

    def clean_tags_text(self):
        try:
            return clean_tags(_lines(self.cleaned_data["tags_text"]))
        except DomainError as exc:
            raise forms.ValidationError(exc.public_message()) from None

    def clean_symptoms_text(self):
        try:
            return clean_symptoms(_lines(self.cleaned_data["symptoms_text"]))
        except DomainError as exc:
            raise forms.ValidationError(exc.public_message()) from None

    def clean_review_by(self):
        value = self.cleaned_data.get("review_by")
        if value is not None and value < timezone.localdate():
            raise forms.ValidationError("must not be in the past")
        return value

    def clean(self):
        data = super().clean()
        course = data.get("course")
        if self.user is not None and not access.can_manage(self.user, course.pk if course else None):
            self.add_error("course", "only superusers create global lessons; pick one of your courses")
        return data


class RejectForm(forms.Form):
    reason = forms.ChoiceField(choices=RejectReason.choices)
    note = forms.CharField(
        required=False, widget=forms.Textarea(attrs={"rows": 3}), help_text="required for 'other'"
    )

    def clean(self):
        data = super().clean()
        if data.get("reason") == RejectReason.OTHER and not (data.get("note") or "").strip():
            self.add_error("note", "a rejection for 'other' needs a note")
        return data


def _field_error(clean, value):
    """A lesson field's rule (``lessons.validation``) as a form field's error."""
    try:
        return clean(value)
    except DomainError as exc:
        raise forms.ValidationError(exc.public_message()) from None


class DraftEditForm(forms.Form):
    """A staff edit of a pending draft: one tag or symptom per line; the same
    rules as every door (text that shows nothing is empty)."""

    title = forms.CharField(strip=False)
    body = forms.CharField(strip=False, widget=forms.Textarea(attrs={"rows": 12}))
    tags_text = forms.CharField(
        label="tags", required=False, widget=forms.Textarea(attrs={"rows": 3}), help_text="one per line"
    )
    symptoms_text = forms.CharField(
        label="symptoms",
        required=False,
        widget=forms.Textarea(attrs={"rows": 3}),
        help_text="one phrase per line, as it appears in feedback or messages",
    )
    note = forms.CharField(
        required=False, widget=forms.Textarea(attrs={"rows": 2}), help_text="why (kept in the audit trail)"
    )

    @classmethod
    def initial_for(cls, lesson: Lesson) -> dict:
        return {
            "title": lesson.title,
            "body": lesson.body,
            "tags_text": "\n".join(lesson.tags),
            "symptoms_text": "\n".join(lesson.symptoms),
        }

    def clean_title(self):
        return _field_error(clean_title, self.cleaned_data["title"])

    def clean_body(self):
        return _field_error(clean_body, self.cleaned_data["body"])

    def clean_tags_text(self):
        return _field_error(clean_tags, _lines(self.cleaned_data["tags_text"]))

    def clean_symptoms_text(self):
        return _field_error(clean_symptoms, _lines(self.cleaned_data["symptoms_text"]))
