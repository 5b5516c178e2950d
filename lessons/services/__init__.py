"""Writes of the lessons app (SPEC §6), one module per idea:

- ``store``: writing a lesson row -- redaction first, token estimate, recall keys;
- ``lifecycle``: staff entry and the human-gated transitions, with their audit events;
- ``capture``: drafts from criteria fixed between two submissions;
- ``deltas``: playbook deltas backed by an external signal;
- ``usage``: stored recall traces, hit counts, promotion to skill candidates;
- ``imports``: ``import_lessons``.
"""
