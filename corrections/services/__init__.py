"""Writes of the corrections app: intake (detection and recording), routing
to the memory tiers, system facts, review cases, memory."""
