"""``manage.py eval_corrections``: correction detection measured on the
labelled corpus (SPEC §5, §14; ``corrections/eval/README.md``).

Prints the figures of the whole corpus and of its held-out part, and exits
non-zero when the whole corpus misses a goal. ``--model`` reads the same
corpus with the configured model classifier after the rules (for operators:
it calls the model once per message the widened gate passes).
"""

from __future__ import annotations

from pathlib import Path

from django.core.management.base import CommandError

from corrections import classifier
from corrections.detection import detect
from corrections.eval.measure import (
    CORPUS,
    CorpusError,
    goals_missed,
    load_corpus,
    read_corpus,
    render,
    render_misses,
    score,
)
from tutor import llm
from tutor.commands import DomainCommand
from tutor.kernel.redaction import redact


def rules_reader(row):
    """What the detection task would record from the rules alone: the texts
    redacted first, as ``corrections.services.intake`` does."""
    return detect(redact(row.message).text, assistant=redact(row.tutor).text or None)


def model_reader(row):
    return classifier.classify(
        message=redact(row.message).text, assistant=redact(row.tutor).text or None, use_model=True
    )


class Command(DomainCommand):
    help = "Measure correction detection on the labelled corpus; exit 1 below the goals (SPEC §14)."

    def add_arguments(self, parser):
        parser.add_argument(
            "--corpus", type=Path, default=CORPUS, help="a corpus in the same JSON lines format"
        )
        parser.add_argument(
            "--split",
            choices=("all", "tune", "heldout"),
            default="all",
            help="the rows measured: all (the default; the held-out part is printed too), tune or heldout",
        )
        parser.add_argument(
            "--model", action="store_true", help="read with the configured model classifier too"
        )
        parser.add_argument("--misses", action="store_true", help="list every row read wrongly")

    def handle(self, *args, corpus: Path, split: str, model: bool, misses: bool, **options):
        try:
            rows = load_corpus(corpus)
        except CorpusError as exc:
            raise CommandError(str(exc)) from None
        if model and not llm.is_configured():
            raise CommandError("--model needs a configured model (TUTOR_LLM_BASE_URL and TUTOR_LLM_MODEL)")
        if split != "all":
            rows = [r for r in rows if r.split == split]
            if not rows:
                raise CommandError(f"the corpus has no {split} rows")
        reader = model_reader if model else rules_reader
        label = f"model classifier ({llm.model_name()}) after the rules" if model else "rules"
        readings = read_corpus(
            rows,
            reader,
            progress=(lambda done, total: self.progress("reading", done, total)) if model else None,
        )
        whole = score(readings)
        title = f"{label}, {'whole corpus' if split == 'all' else split + ' part'}"
        self.stdout.write("\n".join(render(whole, title)))
        if split == "all":
            held = [r for r in readings if r.row.split == "heldout"]
            if held:
                self.stdout.write("")
                self.stdout.write("\n".join(render(score(held), f"{label}, held-out part")))
        if misses:
            self.stdout.write("misses:")
            self.stdout.write("\n".join(render_misses(whole)) or "  none")
        missed = goals_missed(whole)
        self.stdout.write("")
        if missed:
            for line in missed:
                self.stdout.write(f"goal missed: {line}")
            raise CommandError(f"{len(missed)} goal(s) missed")
        self.stdout.write("all goals met")
