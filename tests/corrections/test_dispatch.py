"""The detection outbox (SPEC §5: detection runs on every stored user message).

Every stored user message that can be a correction has a
``PendingDetection`` row, written in its transaction, until its detection
task has run; one that cannot (no trigger word, no number outside a
question) has none, and no task. A web process that dies
before publishing, a broker that refuses the task or loses it: the sweep
publishes the detection again when its row is due, and the task, safe to run
twice, records the correction once.
"""

from __future__ import annotations

import logging
from datetime import timedelta

import pytest
from django.utils import timezone
from kombu.exceptions import OperationalError

from corrections.models import Correction, Fact, PendingDetection
from corrections.services.dispatch import detections_sweep
from corrections.tasks import detect_correction, sweep_detections
from tests.corrections.conftest import RAINFALL_500, RAINFALL_QUESTION
from tutor.models import TutorMessage

CORRECTION = "不对，北京年均降雨量是 630mm 左右"


class Broker:
    """``detect_correction.delay`` as a broker that is down until ``up()``."""

    def __init__(self, monkeypatch):
        self.down = True
        self.published: list[tuple] = []
        real = detect_correction.delay

        def delay(*args):
            if self.down:
                raise OperationalError("Error 111 connecting to 127.0.0.1:6390. Connection refused.")
            self.published.append(args)
            return real(*args)

        monkeypatch.setattr(detect_correction, "delay", delay)

    def up(self) -> None:
        self.down = False


@pytest.fixture
def broker(monkeypatch):
    return Broker(monkeypatch)


def later(seconds: float):
    return timezone.now() + timedelta(seconds=seconds)


@pytest.mark.django_db
def test_a_detection_the_broker_refused_is_kept_and_sent_by_the_sweep(student, chat_for, broker, settings):
    chat = chat_for(student)
    broker.up()
    chat.send(RAINFALL_QUESTION, reply=RAINFALL_500)
    broker.down = True

    chat.send(CORRECTION)  # the exchange succeeds; the detection cannot be published

    assert not Correction.objects.exists()
    kept = PendingDetection.objects.get()
    message = TutorMessage.objects.get(content=CORRECTION)
    assert (kept.message_id, kept.failures, kept.sends) == (message.pk, 1, 0)
    assert kept.correlation_id == message.correlation_id

    broker.up()
    # Not before a sweep interval has passed since the failure.
    assert detections_sweep(now=later(1)) == {"published": 0, "failed": 0}
    assert detections_sweep(now=later(settings.CORRECTIONS_DETECTION_SWEEP_INTERVAL + 1)) == {
        "published": 1,
        "failed": 0,
    }

    assert not PendingDetection.objects.exists()  # the task ran, and took its row
    correction = Correction.objects.get()
    assert (correction.message_id, correction.tiers) == (message.pk, ["system", "user", "case"])
    assert Fact.objects.get().statement == "北京年均降雨量是 630mm 左右"
    assert broker.published[-1] == (str(message.pk), message.correlation_id)


@pytest.mark.django_db
def test_a_web_process_that_dies_before_publishing_loses_no_detection(student, task, broker, settings):
    """The message is committed and the on-commit publish never runs (the
    process is gone): its outbox row, written in the same transaction, is
    sent by the sweep once a visibility timeout has passed."""
    from tests.factories import client_for

    client = client_for(student)
    session = client.post("/api/tutor/sessions/", {"task": task.pk}, format="json").json()["id"]
    broker.up()
    # No on-commit callback runs: in the test's transaction they are dropped, as by a crash.
    response = client.post(f"/api/tutor/sessions/{session}/messages/", {"content": CORRECTION}, format="json")
    assert response.status_code == 201
    message = TutorMessage.objects.get(content=CORRECTION)
    kept = PendingDetection.objects.get()
    assert kept.message_id == message.pk and not broker.published and not Correction.objects.exists()

    # A published task may still wait in the queue: not sent again before Redis would redeliver it.
    assert detections_sweep(now=later(settings.CELERY_VISIBILITY_TIMEOUT - 5)) == {
        "published": 0,
        "failed": 0,
    }
    assert detections_sweep(now=later(settings.CELERY_VISIBILITY_TIMEOUT + 1)) == {
        "published": 1,
        "failed": 0,
    }

    assert Correction.objects.get().message_id == message.pk
    assert not PendingDetection.objects.exists()


@pytest.mark.django_db
def test_only_user_messages_enter_the_outbox_and_a_failing_task_keeps_its_row(
    student, chat_for, broker, settings, monkeypatch, caplog
):
    from corrections.services import intake

    broker.up()
    chat = chat_for(student)
    chat.send("Is it 630 mm?", reply="Read the task again.")  # a number, but in a question
    chat.send("不对，是 600mm", reply="Read the task again.")
    assert not PendingDetection.objects.exists()  # detected, row gone; the reply never had one
    assert len(broker.published) == 1  # the correction's; a message that can be none has no task

    def broken(**kwargs):
        raise RuntimeError("detection bug")

    monkeypatch.setattr(intake, "correction_detect_message", broken)
    chat.send(CORRECTION)
    kept = PendingDetection.objects.get()
    assert kept.message_id == TutorMessage.objects.get(content=CORRECTION).pk

    # The sweep sends it again at most CORRECTIONS_DETECTION_MAX_SENDS times,
    # says so on the last, then leaves it to an operator.
    settings.CORRECTIONS_DETECTION_MAX_SENDS = 2
    visibility = settings.CELERY_VISIBILITY_TIMEOUT
    with caplog.at_level(logging.ERROR, logger="corrections.services.dispatch"):
        for n in range(1, 4):
            detections_sweep(now=later(n * (visibility + 1)))
    assert PendingDetection.objects.get().sends == 2
    assert len(broker.published) == 2 + 2  # the two corrections' own publishes, two sweeps
    assert [r.getMessage() for r in caplog.records if "for the last time" in r.getMessage()] == [
        f"detection of message {kept.message_id} sent for the last time (2 sends); if it does not "
        "complete, it waits for an operator (admin: Pending detections)"
    ]


@pytest.mark.django_db
@pytest.mark.parametrize(
    "content", ["what now?", "My CI still fails on the empty-array test. Why?", "Is it 630 mm?"]
)
def test_a_message_that_can_be_no_correction_has_no_outbox_row_and_no_task(
    student, task, broker, content, django_capture_on_commit_callbacks
):
    """Detection's first rule is taken as the message is stored: without a
    trigger word or a number outside a question nothing can be detected, so
    the turn writes no outbox row and publishes nothing."""
    from tests.factories import client_for

    broker.up()
    client = client_for(student)
    session = client.post("/api/tutor/sessions/", {"task": task.pk}, format="json").json()["id"]
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(
            f"/api/tutor/sessions/{session}/messages/", {"content": content}, format="json"
        )

    assert response.status_code == 201
    assert TutorMessage.objects.filter(content=content, role="user").exists()
    assert not PendingDetection.objects.exists() and broker.published == []


@pytest.mark.django_db
def test_a_sweep_while_the_broker_is_still_down_keeps_the_row(student, chat_for, broker, settings):
    chat_for(student).send(CORRECTION)
    interval = settings.CORRECTIONS_DETECTION_SWEEP_INTERVAL

    assert detections_sweep(now=later(interval + 1)) == {"published": 0, "failed": 1}

    kept = PendingDetection.objects.get()
    assert (kept.failures, kept.sends) == (2, 0)  # a refused publish gives its send back
    # The refused retry makes it due a whole interval later again.
    assert detections_sweep(now=later(interval + 2)) == {"published": 0, "failed": 0}
    broker.up()
    assert detections_sweep(now=later(2 * interval + 2))["published"] == 1
    assert Correction.objects.count() == 1


@pytest.mark.django_db
def test_an_outage_longer_than_the_sends_allowed_loses_no_detection(student, chat_for, broker, settings):
    chat_for(student).send(CORRECTION)
    interval = settings.CORRECTIONS_DETECTION_SWEEP_INTERVAL
    settings.CORRECTIONS_DETECTION_MAX_SENDS = 2

    for n in range(1, 6):  # five refused sweeps, more than the two sends allowed
        assert detections_sweep(now=later(n * (interval + 1))) == {"published": 0, "failed": 1}
    broker.up()

    assert detections_sweep(now=later(6 * (interval + 1))) == {"published": 1, "failed": 0}
    assert Correction.objects.count() == 1 and not PendingDetection.objects.exists()


@pytest.mark.django_db
def test_a_sweep_stops_at_the_first_publish_the_broker_still_refuses(student, chat_for, broker, settings):
    chat = chat_for(student)
    for text in (CORRECTION, "I prefer short answers.", "我希望回答简短一些"):
        chat.send(text)
    assert PendingDetection.objects.count() == 3
    interval = settings.CORRECTIONS_DETECTION_SWEEP_INTERVAL

    assert detections_sweep(now=later(interval + 1)) == {"published": 0, "failed": 1}

    assert sorted(PendingDetection.objects.values_list("failures", flat=True)) == [1, 1, 2]
    broker.up()
    assert detections_sweep(now=later(interval + 2)) == {"published": 2, "failed": 0}  # the two that waited
    assert detections_sweep(now=later(2 * interval + 2)) == {"published": 1, "failed": 0}
    assert not PendingDetection.objects.exists()


@pytest.mark.django_db
def test_a_row_another_sweep_claimed_meanwhile_is_left_to_it(
    student, chat_for, broker, settings, monkeypatch
):
    chat = chat_for(student)
    for text in ("I prefer short answers.", "我希望回答简短一些"):
        chat.send(text)
    first, second = PendingDetection.objects.order_by("due_at").values_list("message_id", flat=True)
    now = later(settings.CORRECTIONS_DETECTION_SWEEP_INTERVAL + 1)
    broker.up()
    real = detect_correction.delay
    inner = []

    def delay(*args):
        # While this sweep publishes its first row, another sweep runs over
        # the second (read here, not claimed yet) and fails to publish it.
        if not inner:
            inner.append(None)
            broker.down = True
            inner[0] = detections_sweep(now=now)
            broker.down = False
        return real(*args)  # the broker's: it records the publish

    monkeypatch.setattr(detect_correction, "delay", delay)
    outer = detections_sweep(now=now)

    assert inner == [{"published": 0, "failed": 1}] and outer == {"published": 1, "failed": 0}
    assert [args[0] for args in broker.published] == [str(first)]
    # The other sweep's failure stands: the row waits a whole interval, not re-sent at once.
    kept = PendingDetection.objects.get()
    assert (kept.message_id, kept.failures, kept.sends) == (second, 2, 0)


@pytest.mark.django_db
def test_a_repeat_after_the_detection_ran_writes_nothing_twice(student, chat_for, broker, settings):
    chat_for(student).send(CORRECTION)
    message = TutorMessage.objects.get(content=CORRECTION)
    broker.up()
    detect_correction.apply(args=[str(message.pk)])  # e.g. the failed publish did reach the broker
    assert not PendingDetection.objects.exists()
    detect_correction.apply(args=[str(message.pk)])  # and a duplicate delivery

    assert Correction.objects.count() == 1 and not PendingDetection.objects.exists()


@pytest.mark.django_db
def test_a_published_detection_leaves_no_outbox_row_once_it_ran(student, chat_for, broker):
    broker.up()
    chat_for(student).send(CORRECTION)

    assert Correction.objects.count() == 1
    assert not PendingDetection.objects.exists()


@pytest.mark.django_db
def test_the_sweep_is_scheduled_and_runs_as_a_task(settings, broker):
    entry = settings.CELERY_BEAT_SCHEDULE["sweep-correction-detections"]

    assert entry["task"] == sweep_detections.name
    assert entry["schedule"] == float(settings.CORRECTIONS_DETECTION_SWEEP_INTERVAL)
    assert sweep_detections.apply().get() == {"published": 0, "failed": 0}


@pytest.mark.django_db
def test_superusers_see_the_outbox_in_admin_read_only_and_course_staff_do_not(
    student, chat_for, broker, admin_client, staff
):
    from django.test import Client

    chat = chat_for(student)
    chat.send(CORRECTION)  # the broker is down: the detection waits in the outbox
    kept = PendingDetection.objects.get()
    url = "/admin/corrections/pendingdetection/"

    page = admin_client.get(url)

    assert page.status_code == 200
    assert str(kept.message_id) in page.content.decode()
    assert CORRECTION not in page.content.decode()  # ids and counts, never the message
    assert admin_client.get(f"{url}{kept.pk}/delete/").status_code == 403
    assert admin_client.post(f"{url}{kept.pk}/change/", {"failures": 0}).status_code == 403
    staff_browser = Client()
    staff_browser.force_login(staff)
    assert staff_browser.get(url).status_code == 403


@pytest.mark.django_db
def test_a_superuser_sends_given_up_detections_again_from_admin(
    student, chat_for, broker, admin_client, settings
):
    chat_for(student).send(CORRECTION)
    settings.CORRECTIONS_DETECTION_MAX_SENDS = 1
    detections_sweep(now=later(settings.CORRECTIONS_DETECTION_SWEEP_INTERVAL + 1))  # refused: no send used
    PendingDetection.objects.update(sends=1)  # as after a send that never completed
    url = "/admin/corrections/pendingdetection/"
    kept = PendingDetection.objects.get()
    assert str(kept.message_id) in admin_client.get(url, {"given_up": "yes"}).content.decode()
    assert str(kept.message_id) not in admin_client.get(url, {"given_up": "no"}).content.decode()
    assert detections_sweep(now=later(10 * settings.CELERY_VISIBILITY_TIMEOUT))["published"] == 0

    response = admin_client.post(
        url, {"action": "send_again", "_selected_action": [str(kept.pk)]}, follow=True
    )

    assert "1 detection(s) due now" in response.content.decode()
    assert PendingDetection.objects.get().sends == 0
    broker.up()
    assert detections_sweep(now=later(1))["published"] == 1
    assert Correction.objects.count() == 1 and not PendingDetection.objects.exists()


@pytest.mark.django_db
def test_the_sweep_reads_only_the_rows_that_may_still_be_sent(student, task, broker, settings):
    """Rows that have had all their sends wait for an operator, and they add
    up over the months: the sweep's lookup leaves them out of the index
    range it reads rather than filtering them one by one (SPEC §10)."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from tutor.models import TutorSession

    session = TutorSession.objects.create(student=student, task=task)
    given_up, live = 600, 3
    messages = TutorMessage.objects.bulk_create(
        TutorMessage(session=session, position=n, role="user", content=f"m{n}")
        for n in range(given_up + live)
    )
    most = settings.CORRECTIONS_DETECTION_MAX_SENDS
    old = timezone.now() - timedelta(days=30)
    PendingDetection.objects.bulk_create(
        PendingDetection(message=m, due_at=old + timedelta(seconds=n), sends=most if n < given_up else 0)
        for n, m in enumerate(messages)
    )
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")
    broker.up()

    with CaptureQueriesContext(connection) as queries:
        assert detections_sweep() == {"published": live, "failed": 0}

    [lookup] = [q["sql"] for q in queries.captured_queries if q["sql"].startswith("SELECT")][:1]
    explain = "EXPLAIN QUERY PLAN " if connection.vendor == "sqlite" else "EXPLAIN "
    with connection.cursor() as cursor:
        cursor.execute(explain + lookup)
        plan = "\n".join(" ".join(str(column) for column in row) for row in cursor.fetchall())
    assert "pendingdetection_live_idx" in plan, plan
    if connection.vendor == "sqlite":
        assert "(sends<?)" in plan, plan  # a range on sends: the given-up rows are not read
    else:
        assert "Index Cond: ((sends < " in plan and "Seq Scan" not in plan, plan
    # The live ones were sent and their detections ran; the others still wait for an operator.
    assert list(PendingDetection.objects.values_list("sends", flat=True).distinct()) == [most]
    assert PendingDetection.objects.count() == given_up


@pytest.mark.django_db
@pytest.mark.parametrize(("classifier", "published"), [(False, 0), (True, 1)])
def test_the_model_classifier_widens_the_first_rule(
    student, task, broker, fake_llm, settings, classifier, published, django_capture_on_commit_callbacks
):
    """With the model classifier on, a message with a word of contrast,
    negation, preference or instruction and no cue of the rules is sent to
    detection too (issue 36); off, it is not."""
    from tests.factories import client_for

    settings.CORRECTIONS_LLM_CLASSIFIER = classifier
    broker.up()
    fake_llm.default = '{"type": "none", "confidence": 0.9}'
    client = client_for(student)
    session = client.post("/api/tutor/sessions/", {"task": task.pk}, format="json").json()["id"]
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(
            f"/api/tutor/sessions/{session}/messages/",
            {"content": "ok but our linter is strict"},
            format="json",
        )

    assert response.status_code == 201
    assert len(broker.published) == published
    assert not PendingDetection.objects.exists()  # no row, or the detection ran and took it
