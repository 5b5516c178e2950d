"""The benchmark of SPEC §10: seeded volumes and the context endpoint's latency ratio."""
