"""Lessons and the playbook (SPEC §6). Not installed yet: the package marks where
the lessons app lives; the tutor context already reserves its section."""
