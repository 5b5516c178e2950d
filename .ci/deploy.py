"""The deployment recipe as CI runs it (deploy/README.md), without systemd.

Usage: .venv/bin/python .ci/deploy.py DATABASE_URL REDIS_URL

The environment is deploy/tutor.env.example with this machine's values put in
(as step 5 of the recipe has the operator do); the web, worker and beat
command lines are read from the ExecStart= lines of deploy/systemd/*.service,
with /srv/tutor (the code) and /var/lib/tutor (the state directory) put where
they are here. Then: the nginx site's timeouts nest above gunicorn's, the
migrations run, the three processes start, /healthz reports the worker, one
submission is reviewed by the worker, /metrics shows the counts -- those of
the web workers and of the Celery worker -- and beat keeps its schedule
where the unit says. Every process is stopped at the end.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
DEPLOY = ROOT / "deploy"
CODE_DIR, STATE_DIR = "/srv/tutor", "/var/lib/tutor"
UNITS = ("tutor-web", "tutor-worker", "tutor-beat")
WAIT_SECONDS = 90


def say(text: str) -> None:
    print(f"deploy: {text}", flush=True)


def fail(text: str) -> None:
    raise SystemExit(f"deploy: FAILED: {text}")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def here(text: str, state: Path) -> str:
    return text.replace(CODE_DIR, str(ROOT)).replace(STATE_DIR, str(state))


def env_file(state: Path, values: dict[str, str]) -> dict[str, str]:
    """The example's KEY=value lines, as systemd's EnvironmentFile reads them
    (no quotes, no expansion), with ``values`` put in."""
    env = {}
    for line in (DEPLOY / "tutor.env.example").read_text().splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        key, _, value = line.partition("=")
        env[key] = here(value, state)
    missing = set(values) - set(env)
    if missing:
        fail(f"the example env file does not set {sorted(missing)}")
    env.update(values)
    return env


def unit_command(unit: str, state: Path) -> list[str]:
    text = (DEPLOY / "systemd" / f"{unit}.service").read_text()
    [line] = re.findall(r"^ExecStart=(.+)$", text, re.MULTILINE)
    return here(line, state).split()


def manage(env: dict[str, str], *args: str) -> str:
    done = subprocess.run(
        [str(ROOT / ".venv/bin/python"), "manage.py", *args],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    if done.returncode != 0:
        fail(f"manage.py {' '.join(args)}: {done.stderr[-2000:]}")
    return done.stdout


def check_timeouts_nest(env: dict[str, str]) -> None:
    site = (DEPLOY / "nginx" / "tutor.conf").read_text()
    read_timeout = int(re.search(r"proxy_read_timeout\s+(\d+)s;", site).group(1))
    printed = manage(env, "shell", "-c", "from django.conf import settings; print(settings.WEB_TIMEOUT)")
    web_timeout = int(printed.split()[-1])
    if not web_timeout < read_timeout:
        fail(f"nginx proxy_read_timeout {read_timeout}s must exceed gunicorn's WEB_TIMEOUT {web_timeout}s")
    say(f"timeouts nest: gunicorn {web_timeout}s < nginx proxy_read_timeout {read_timeout}s")


def wait_for(what: str, check, processes) -> object:
    deadline = time.monotonic() + WAIT_SECONDS
    while time.monotonic() < deadline:
        for name, process in processes.items():
            if process.poll() is not None:
                fail(f"{name} exited with status {process.returncode} while waiting for {what}")
        try:
            result = check()
        except httpx.TransportError:
            result = None
        if result:
            return result
        time.sleep(0.5)
    fail(f"no {what} within {WAIT_SECONDS}s")


def run(database_url: str, redis_url: str) -> None:
    started = time.monotonic()
    work = Path(tempfile.mkdtemp(prefix="tutor-deploy-"))
    state = work / "state"  # what systemd's StateDirectory= makes
    state.mkdir()
    port = free_port()
    token = secrets.token_urlsafe(24)
    values = {
        "SECRET_KEY": secrets.token_urlsafe(50),
        "ALLOWED_HOSTS": "127.0.0.1",
        "DATABASE_URL": database_url,
        "REDIS_URL": redis_url,
        "WEB_BIND": f"127.0.0.1:{port}",
        "METRICS_TOKEN": token,
    }
    base_env = {k: v for k, v in os.environ.items() if k in ("PATH", "LANG", "LC_ALL", "HOME", "TMPDIR")}
    env = {**base_env, **env_file(state, values)}
    check_timeouts_nest(env)
    say("migrate")
    manage(env, "migrate", "--noinput")
    manage(env, "import_course", "tutor/demo/course.yaml")
    student = f"deploy-{secrets.token_hex(4)}"
    [line] = manage(env, "enroll", "se-101", student, "--create", "--print-token").splitlines()
    student_token = line.split()[1]

    logs = {unit: (work / f"{unit}.log").open("w") for unit in UNITS}
    processes = {}
    try:
        for unit in UNITS:
            command = unit_command(unit, state)
            say(f"start {unit}: {' '.join(command)}")
            processes[unit] = subprocess.Popen(
                command,
                cwd=ROOT,
                env=env,
                stdout=logs[unit],
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        base = f"http://127.0.0.1:{port}"
        client = httpx.Client(base_url=base, headers={"Host": "127.0.0.1"}, timeout=30)

        def healthy():
            body = client.get("/healthz").json()
            return body if body["status"] == "ok" and body["checks"]["worker"] == "ok" else None

        health = wait_for("healthy /healthz with a worker", healthy, processes)
        say(f"/healthz: {json.dumps(health)}")

        auth = {"Authorization": f"Token {student_token}"}
        task = client.get("/api/tasks/", headers=auth).json()["results"][0]["id"]
        submitted = client.post(
            "/api/submissions/",
            headers=auth,
            json={"task": task, "evidence": {"report": "first() is undefined"}},
        )
        if submitted.status_code != 201:
            fail(f"submission: {submitted.status_code} {submitted.text[:500]}")
        attempt = submitted.json()["attempts"][0]["id"]

        def reviewed():
            body = client.get(f"/api/review-attempts/{attempt}/", headers=auth).json()
            return body if body["status"] not in ("queued", "running") else None

        review = wait_for("review by the worker", reviewed, processes)
        if review["status"] != "completed":
            fail(f"the review ended {review['status']}: {review}")
        say(f"review {attempt} completed by the worker")

        if client.get("/metrics").status_code != 403:
            fail("/metrics answered without the token")

        def counted():
            text = client.get("/metrics", headers={"Authorization": f"Bearer {token}"}).text
            finished = re.search(
                r'^tutor_review_attempts_finished_total\{status="completed"\} (\S+)$', text, re.M
            )
            return text if finished and float(finished.group(1)) >= 1 else None

        text = wait_for("the worker's count in /metrics", counted, processes)
        for pattern in (
            r'^tutor_http_requests_total\{method="POST",route="api/submissions/",status="201"\} 1\.0$',
            r'^tutor_http_requests_total\{method="GET",route="healthz",status="200"\} [1-9]',
            r'^tutor_review_attempts\{status="queued"\} 0\.0$',
            r'^tutor_outbox_depth\{outbox="lti_scores"\} 0\.0$',
        ):
            if not re.search(pattern, text, re.M):
                fail(f"/metrics has no line matching {pattern}:\n{text[-3000:]}")
        say("/metrics: the web's requests and the worker's finished review are counted")

        schedule = wait_for(
            "beat's schedule in the state directory",
            lambda: sorted(state.glob("celerybeat-schedule*")),
            processes,
        )
        say(f"beat keeps its schedule at {schedule[0].relative_to(work)} (the state directory)")
    except SystemExit:
        for unit, log in logs.items():
            log.flush()
            print(
                f"--- {unit} log (last lines) ---\n{(work / f'{unit}.log').read_text()[-4000:]}", flush=True
            )
        raise
    finally:
        for process in processes.values():
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
        for process in processes.values():
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
        for log in logs.values():
            log.close()
    shutil.rmtree(work)
    say(f"passed in {time.monotonic() - started:.0f}s")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        raise SystemExit("usage: .ci/deploy.py DATABASE_URL REDIS_URL")
    run(sys.argv[1], sys.argv[2])
