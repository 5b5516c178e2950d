"""Corrections and memory tiers (SPEC §5). Not installed yet: the package marks
where the corrections app lives; the tutor context already reserves its sections."""
