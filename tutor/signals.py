"""Hooks other apps listen to, so that tutor never imports them (STYLE):
``user_message_handled`` and ``user_message_records``. Details:
docs/architecture.md, Signals.
"""

from django.dispatch import Signal

# kwargs: message (TutorMessage), session (TutorSession), reply (TutorMessage | None)
user_message_handled = Signal()

# kwargs: message (TutorMessage, unsaved); returns a list of unsaved model instances
user_message_records = Signal()
