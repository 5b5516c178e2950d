"""Writes of the LTI app (SPEC §12), one module per idea:

- ``keys``: the tool's signing keys, their rotation and grace period;
- ``registrations``: platforms registered for a course;
- ``launch``: login nonces, and a verified launch turned into a user,
  an enrolment and a resource link;
- ``scores``: the outbox of scores going back to the platform (AGS);
- ``roster``: course membership read from the platform (NRPS).
"""
