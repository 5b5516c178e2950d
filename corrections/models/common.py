"""The choices and the topic mixin every corrections model shares (SPEC §5)."""

from __future__ import annotations

from django.db import models


class CorrectionType(models.TextChoices):
    FACTUAL = "factual"
    PREFERENCE = "preference"
    PROCESS = "process"
    NEGATIVE = "negative"


class Tier(models.TextChoices):
    """Where a correction was written; ``case`` marks a review case."""

    SESSION = "session"
    USER = "user"
    SYSTEM = "system"
    CASE = "case"


class Source(models.TextChoices):
    CHAT = "chat"  # detected on a stored tutor message
    EXPLICIT = "explicit"  # POST /api/corrections/


class Classifier(models.TextChoices):
    RULES = "rules"
    MODEL = "model"
    # The classifier was on but failed (no answer, or one out of shape): the rules decided.
    RULES_FALLBACK = "rules_fallback", "Rules (the model failed)"


class TopicMixin(models.Model):
    """A topic: its tokens in order (``topic`` reads them joined), and the
    sorted key (``corrections.text.topic_key``) for exact lookups."""

    topic = models.CharField(max_length=255, blank=True)
    topic_tokens = models.JSONField(default=list, blank=True)
    topic_key = models.CharField(max_length=255, blank=True)
    token_count = models.PositiveSmallIntegerField(default=0)

    class Meta:
        abstract = True
