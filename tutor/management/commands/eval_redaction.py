"""``manage.py eval_redaction``: the redaction evaluation (SPEC §14).

Prints recall per source, context and language and the false-positive
rate on near misses, for this project's redaction and for detect-secrets
alone, on the tuning vectors and on the held-out fifth; exits 1 below the
goals (ours, every part). ``--misses N`` lists up to N misses of the tuning
part (never of the held-out part).
"""

from __future__ import annotations

import statistics
import time

from django.core.management.base import CommandError

from tutor.commands import DomainCommand
from tutor.kernel.redaction import redact_text
from tutor.kernel.redaction_eval import scoring

CHAT_MESSAGE_CHARS = 2048
CHAT_MESSAGE_BUDGET_MS = 5.0


class Command(DomainCommand):
    help = "Evaluate redaction on the scanners' test vectors and near misses; exit 1 below the goals."

    def add_arguments(self, parser):
        parser.add_argument("--misses", type=int, default=0, help="list up to N misses of the tuning part")
        parser.add_argument("--no-baseline", action="store_true", help="skip detect-secrets alone (faster)")

    def handle(self, *args, misses: int = 0, no_baseline: bool = False, **options):
        if misses < 0:
            raise CommandError("--misses must be 0 or more")
        header, vectors = scoring.load_vectors()
        near = scoring.load_near_misses()
        self.stdout.write(
            f"{len(vectors)} vectors from "
            + ", ".join(f"{k}@{v[:12]}" for k, v in header["commits"].items())
            + f"; {len(near)} near misses"
        )
        problems = []
        for part, chosen in (("tuning", False), ("held-out", True)):
            cases = scoring.placements([v for v in vectors if scoring.held_out(v) == chosen])
            self.stderr.write(f"{part}: {len(cases)} placements")
            ours = scoring.evaluate("ours", redact_text, cases, near)
            reports = [ours]
            if not no_baseline:
                reports.append(
                    scoring.evaluate("detect-secrets alone", scoring.detect_secrets_alone(), cases, near)
                )
            self._table(part, reports)
            problems += [f"{part}: {line}" for line in scoring.failures(ours)]
            if misses and not chosen:
                self._misses(ours, misses)
        self._speed()
        if problems:
            for line in problems:
                self.stdout.write(f"BELOW GOAL {line}")
            raise CommandError(f"redaction is below its goals ({len(problems)})")
        self.stdout.write("redaction meets its goals")

    def _table(self, part: str, reports: list) -> None:
        names = [r.name for r in reports]
        self.stdout.write(f"\n== {part} vectors: recall (partial) ==")
        self.stdout.write(f"{'':24}" + "".join(f"{n:>28}" for n in names))
        keys = sorted(reports[0].by, key=lambda k: (k[0] != "all", k))
        for key in keys:
            label = "overall" if key[0] == "all" else f"{key[0]} {key[1]}"
            cells = []
            for report in reports:
                tally = report.by[key]
                cells.append(f"{tally.recall:7.1%} ({tally.partial:3d}) of {tally.total:5d}")
            self.stdout.write(f"{label:24}" + "".join(f"{c:>28}" for c in cells))
        self.stdout.write("false positives on near misses")
        families = sorted(reports[0].fp_by_family)
        for family in families:
            cells = [f"{r.fp_by_family[family][0]:3d} of {r.fp_by_family[family][1]:3d}" for r in reports]
            self.stdout.write(f"  {family:22}" + "".join(f"{c:>28}" for c in cells))
        cells = [f"{r.fp_rate:7.1%} of {r.near_misses:5d}" for r in reports]
        self.stdout.write(f"{'  all':24}" + "".join(f"{c:>28}" for c in cells))
        cells = [f"{r.seconds:6.1f} s" for r in reports]
        self.stdout.write(f"{'  time':24}" + "".join(f"{c:>28}" for c in cells))

    def _misses(self, report, limit: int) -> None:
        self.stdout.write(f"\n-- misses of the tuning part (first {limit}) --")
        for result, source, rule, text in report.overall.misses[:limit]:
            self.stdout.write(f"{result:8} {source}/{rule}: {text[:160]!r}")
        self.stdout.write("-- false positives --")
        for family, text, redacted in report.fp_examples[:limit]:
            self.stdout.write(f"{family}: {text[:120]!r} -> {redacted[:120]!r}")

    def _speed(self) -> None:
        """The median time to redact a 2 KB chat message (a student's
        question with a log excerpt and one key in it)."""
        line = "My test for first() fails on an empty array, the log says TypeError at line 12. "
        message = (line * (CHAT_MESSAGE_CHARS // len(line) + 1))[: CHAT_MESSAGE_CHARS - 60]
        message += " key sk-proj-A1b2C3d4E5f6G7h8J9k0L1m2 thanks"
        redact_text(message)
        times = []
        for _ in range(50):
            started = time.perf_counter()
            redact_text(message)
            times.append((time.perf_counter() - started) * 1000)
        median = statistics.median(times)
        self.stdout.write(
            f"\nredaction of a {len(message)}-character chat message: median {median:.2f} ms "
            f"(budget {CHAT_MESSAGE_BUDGET_MS} ms)"
        )
