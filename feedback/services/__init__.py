"""Writes of the feedback app (SPEC §2), one module per idea:

- ``sequences``: gapless, commit-ordered numbers for submissions and attempts;
- ``dispatch``: sending a queued attempt to the workers (the row is the outbox);
- ``intake``: submissions and new attempts, the review cache, review requests;
- ``verdicts``: staff verdicts;
- ``worker``: a worker's claim and terminal write, and the sweep.

Every transition is a conditional UPDATE: a row count other than 1 means
someone else got there first, and the caller backs off instead of
overwriting (a duplicate task delivery, a late worker, the sweep).
"""
