"""Process and provider faults with real processes (SPEC §2, §4, §10): a real
Celery worker on Redis reviewing through real HTTP, and a real gunicorn
serving the tutor -- on the database of the run (PostgreSQL in CI).

- A model verdict carrying NUL characters and lone surrogates: the attempt
  still reaches its terminal state (on PostgreSQL it used to stay
  ``running`` until the sweep declared the worker lost).
- A web worker killed while a tutor reply is pending: the session answers
  409 only until the tutor request budget has passed, then takes messages.
- A hung model under gunicorn: the JSON 503 comes within the budget, long
  before gunicorn's worker timeout would kill the request.
- The worker's log lines are JSON and carry the submitting request's id.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from django.db import connection
from rest_framework.authtoken.models import Token

from tests.worker.conftest import PROJECT_DIR, child_pids, wait_for, worker_env
from tests.worker.fakellm import Call, Hang, Reply
from tests.worker.test_review_worker import EVIDENCE, submit, wait_terminal
from tutor.models import ModelCall, TutorMessage, TutorSession

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]

# A review answer with a raw NUL in a string and the escapes of a NUL and of
# lone surrogates: what a misbehaving provider can send.
HOSTILE_ANSWER = (
    '{"verdicts": [{"rubric_id": "A3", "status": "PASS", '
    '"reason": "clear\x00 and \\u0000correct\\ud800", "evidence": "quote\\udfff"}], '
    '"next_step": "Keep\\u0000 going"}'
)


def test_a_verdict_with_nul_and_lone_surrogates_ends_the_attempt_completed(
    celery_worker, fake_llm, task, student_client
):
    fake_llm.script(Reply(HOSTILE_ANSWER))

    attempt_id = submit(student_client, task, correlation_id="worker-nul-verdict")["attempts"][0]["id"]
    final = wait_terminal(student_client, attempt_id, celery_worker)

    assert final["status"] == "completed", (final, celery_worker.log_tail())
    a3 = next(c for c in final["result"]["criteria"] if c["rubric_id"] == "A3")
    assert (a3["reason"], a3["evidence"]) == ("clear and correct\ufffd", "quote\ufffd")
    assert final["result"]["next_step"] == "Keep going"
    [call] = ModelCall.objects.filter(purpose="review")
    assert call.status == ModelCall.Status.OK
    assert "\x00" not in call.response_text


def test_worker_log_lines_are_json_with_the_requests_correlation_id(
    celery_worker, fake_llm, task, student_client
):
    from tests.worker.fakellm import review_answer

    fake_llm.script(Reply(review_answer({"A3": "PASS"})))

    attempt_id = submit(student_client, task, correlation_id="worker-log-cid")["attempts"][0]["id"]
    wait_terminal(student_client, attempt_id, celery_worker)

    def lines():
        text = celery_worker.log_path.read_text(errors="replace")
        return [json.loads(line) for line in text.splitlines() if line.startswith("{")]

    tagged = wait_for(
        lambda: [line for line in lines() if line["correlation_id"] == "worker-log-cid"],
        timeout=10,
        message=lambda: celery_worker.log_tail(),
    )
    loggers = {line["logger"] for line in tagged}
    assert {"feedback.pipeline", "celery.app.trace"} <= loggers, tagged
    assert any(line["message"] == f"review of attempt {attempt_id} ended completed" for line in tagged)
    # The worker writes nothing but JSON lines once it runs.
    body = [line for line in celery_worker.log_path.read_text().splitlines() if line.strip()]
    started = next(i for i, line in enumerate(body) if '"celery.apps.worker"' in line or "ready." in line)
    assert all(line.startswith("{") for line in body[started:]), body[started:]
    assert REPORT_WORDS not in celery_worker.log_path.read_text()


REPORT_WORDS = EVIDENCE["report"]


# --- a killed web worker ------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Gunicorn:
    """gunicorn with the shipped configuration (one worker) on the test database."""

    def __init__(self, env: dict[str, str], log_path: Path):
        self.port = free_port()
        self.log_path = log_path
        self._log = log_path.open("wb")
        self.process = subprocess.Popen(
            [
                sys.executable, "-m", "gunicorn", "--config", "python:tutor.ops.gunicorn_conf",
                "--bind", f"127.0.0.1:{self.port}", "--workers", "1", "tutor.wsgi:application",
            ],
            cwd=PROJECT_DIR, env=env, stdout=self._log, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
        self.base = f"http://127.0.0.1:{self.port}"
        try:
            wait_for(self._up, timeout=45, interval=0.2, message=lambda: self.log_tail())
        except BaseException:
            self.stop()  # a server that never came up must not outlive the test (and hold the database)
            raise

    def _up(self) -> bool:
        if self.process.poll() is not None:
            raise AssertionError(f"gunicorn exited:\n{self.log_tail()}")
        try:
            urllib.request.urlopen(f"{self.base}/healthz", timeout=2)
        except urllib.error.HTTPError:
            return True  # answering at all is enough
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            return False  # not listening yet, or its worker still starting on a busy machine
        return True

    def workers(self) -> list[int]:
        return child_pids(self.process.pid)

    def log_tail(self, lines: int = 60) -> str:
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])

    def stop(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()
        self._log.close()


@pytest.fixture
def web(transactional_db, worker_limits, fake_llm, tmp_path):
    env = worker_env(fake_llm)
    env.update(ALLOWED_HOSTS="127.0.0.1", TUTOR_THROTTLE_MESSAGES="100000/min")
    server = Gunicorn(env, tmp_path / "gunicorn.log")
    yield server
    server.stop()


def post(base: str, path: str, token: str, body: dict) -> int:
    request = urllib.request.Request(
        base + path,
        method="POST",
        data=json.dumps(body).encode(),
        headers={"Authorization": f"Token {token}", "Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status
    except urllib.error.HTTPError as error:
        return error.code


def tutor_budget(env_limits: dict) -> float:
    """The web process's TUTOR_REQUEST_BUDGET under the worker limits."""
    from django.conf import settings

    tries = env_limits["TUTOR_LLM_RETRIES"] + 1
    return tries * env_limits["TUTOR_LLM_TIMEOUT"] + settings.TUTOR_REQUEST_OVERHEAD


def test_a_killed_web_worker_leaves_the_session_busy_only_for_the_request_budget(
    web, fake_llm, worker_limits, task, student
):
    token = Token.objects.get_or_create(user=student)[0].key
    assert post(web.base, "/api/tutor/sessions/", token, {"task": str(task.pk)}) == 201
    session = TutorSession.objects.get(student=student)
    messages = f"/api/tutor/sessions/{session.pk}/messages/"
    killed: list[int] = []

    def kill_the_web_worker(request):
        for pid in web.workers():
            os.kill(pid, signal.SIGKILL)
            killed.append(pid)

    fake_llm.script(Call(kill_the_web_worker, then=Hang(5)), then=Reply("Here is a hint."))

    with pytest.raises((urllib.error.URLError, ConnectionError, OSError)):
        post(web.base, messages, token, {"content": "first"})
    assert killed, "the web worker was not found when the model call arrived"
    claimed_at = TutorSession.objects.get(pk=session.pk).reply_pending_since
    assert claimed_at is not None  # the dead request's claim is left behind
    wait_for(lambda: [p for p in web.workers() if p not in killed], timeout=30, message=web.log_tail)

    # Within the budget the claim still stands: it could belong to a live request.
    assert post(web.base, messages, token, {"content": "second"}) == 409

    budget = tutor_budget(worker_limits)
    statuses: list[int] = []

    def accepted():
        statuses.append(post(web.base, messages, token, {"content": "third"}))
        return statuses[-1] == 201

    wait_for(accepted, timeout=budget + 15, interval=1, message=lambda: f"{statuses}\n{web.log_tail()}")

    connection.close()  # read what the web process committed
    released_after = time.time() - claimed_at.timestamp()
    assert released_after >= budget - 1
    assert set(statuses[:-1]) <= {409}
    rows = TutorMessage.objects.filter(session=session).order_by("position").values_list("role", "content")
    assert list(rows) == [("user", "first"), ("user", "third"), ("assistant", "Here is a hint.")]
    assert TutorSession.objects.get(pk=session.pk).reply_pending_since is None


def test_a_hung_model_under_gunicorn_is_the_promised_json_503_within_the_budget(
    web, fake_llm, worker_limits, task, student
):
    token = Token.objects.get_or_create(user=student)[0].key
    assert post(web.base, "/api/tutor/sessions/", token, {"task": str(task.pk)}) == 201
    session = TutorSession.objects.get(student=student)
    fake_llm.script(Hang(60))
    request = urllib.request.Request(
        f"{web.base}/api/tutor/sessions/{session.pk}/messages/",
        method="POST",
        data=json.dumps({"content": "are you there?"}).encode(),
        headers={"Authorization": f"Token {token}", "Content-Type": "application/json"},
    )
    started = time.monotonic()

    with pytest.raises(urllib.error.HTTPError) as answered:
        urllib.request.urlopen(request, timeout=60)

    assert answered.value.code == 503
    assert answered.value.headers["Content-Type"] == "application/json"
    assert json.loads(answered.value.read())["errors"][0]["code"] == "model_unavailable"
    assert time.monotonic() - started < tutor_budget(worker_limits)
