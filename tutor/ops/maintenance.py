"""Database upkeep (SPEC §10 ingest at volume).

SQLite plans without statistics until ANALYZE has run: the review-cache
lookup then scanned completed attempts with a temporary B-tree inside the
write lock (3 submissions per second at 100k rows). ANALYZE with
``analysis_limit`` samples each index instead of reading it whole, so it
stays a matter of milliseconds at any size; it runs after ``migrate`` and
periodically (beat, and the embedded server's maintenance thread).
PostgreSQL has autovacuum's ANALYZE.
"""

from __future__ import annotations

import logging

from django.db import connections

log = logging.getLogger(__name__)
# How often the periodic run happens (beat and the embedded server), seconds.
DATABASE_OPTIMIZE_INTERVAL = 3600


def database_optimize(*, using: str = "default") -> bool:
    """Refresh SQLite's planner statistics; False (nothing done) elsewhere."""
    connection = connections[using]
    if connection.vendor != "sqlite":
        return False
    with connection.cursor() as cursor:
        # analysis_limit bounds the work on a big table: statistics from a
        # sample are as good for the planner as those of a full scan.
        cursor.execute("PRAGMA analysis_limit=1000")
        cursor.execute("ANALYZE")
    log.info("sqlite planner statistics refreshed")
    return True
