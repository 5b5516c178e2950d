"""Hooks other apps listen to, so that tutor never imports them (STYLE).

``user_message_handled``: a user message was stored and the tutor's turn is
over -- with a stored ``reply``, or with ``reply=None`` when the model was
unavailable (the message is kept). Sent once per message, after the model
call and outside any transaction: once the reply's transaction has
committed, or after the 503. The corrections app enqueues its detection
from here (SPEC §4: on commit, after the reply or the 503, never before the
tutor's model call).

``user_message_records``: a user message is about to be stored. Each
receiver returns the unsaved model instances its app stores with it --
written with the message, exactly when it is: the corrections app's
detection outbox row. How they are written is the tutor turn's concern
(``tutor.chat.services``). The message is unsaved then: its id, session,
role and content are set, its position not yet.
"""

from django.dispatch import Signal

# kwargs: message (TutorMessage), session (TutorSession), reply (TutorMessage | None)
user_message_handled = Signal()

# kwargs: message (TutorMessage, unsaved); returns a list of unsaved model instances
user_message_records = Signal()
