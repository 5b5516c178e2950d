"""Hooks other apps listen to, so that feedback never imports them (STYLE).

``attempt_finished``: a review attempt reached a terminal state -- a worker's
terminal write, a completion from the review cache, or a staff verdict.
Sent once per attempt, after the commit that made it terminal (so a listener
that enqueues work never sees a row that could still roll back). The lessons
app captures drafts from it; LTI grade passback posts scores from it.
"""

from django.dispatch import Signal

# kwargs: attempt_id (UUID), status (str)
attempt_finished = Signal()
