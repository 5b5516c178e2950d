"""A student's whole life in the three loops, through the HTTP API, with a
unique canary in everything they write (SPEC §13's residue check).

The person arrives by an LTI launch (so they have an identity, an LMS
``sub`` and e-mail, a login session and a score going back), submits twice
-- reviewed by the model through the fake model server -- asks for a
regrade, talks to the tutor (a factual correction, a preference, an
explicit correction), and their fixed criterion becomes a lesson that staff
edit and approve. A classmate lives alongside, so that what is theirs can be checked
to stay."""

from __future__ import annotations

import json
import random
import uuid
from dataclasses import dataclass, field

from feedback.models import RegradeRequest
from feedback.services.regrades import regrade_decline
from lessons.models import Lesson
from tests.factories import client_for, enroll
from tests.lti.conftest import Browser
from tutor.lti.models import Identity

WORDS = ("amber", "birch", "cedar", "dune", "ember", "fjord", "grove", "heron", "iris", "juniper", "kestrel")


def canary(kind: str) -> str:
    """Unique words, not a random hex run: stored text is redacted, and a
    high-entropy token would be taken for a secret and replaced."""
    rng = random.Random(uuid.uuid4().int)
    return f"canary-{kind}-" + "-".join(rng.choice(WORDS) for _ in range(5))


def fake_model(body: dict) -> str:
    """Reviews get a verdict quoting the evidence; the tutor echoes the student."""
    last = body["messages"][-1]["content"]
    if "<<<BEGIN EVIDENCE>>>" in last:
        quoted = next((word for word in last.split() if word.startswith("canary-")), "the report")
        return json.dumps(
            {
                "verdicts": [
                    {"rubric_id": "A3", "status": "PASS", "reason": f"explains {quoted}", "evidence": quoted}
                ],
                "next_step": f"Keep {quoted} in mind.",
            }
        )
    return f"You said: {last}"


@dataclass
class Life:
    person: object
    classmate: object
    sub: str
    email: str
    canaries: list[str] = field(default_factory=list)
    submissions: list[str] = field(default_factory=list)
    lesson: Lesson | None = None

    def write(self, kind: str) -> str:
        value = canary(kind)
        self.canaries.append(value)
        return value


def submit(client, task, report: str, files: dict, log_tail: str, capture) -> dict:
    evidence = {
        "report": report,
        "files": files,
        "ci": {"status": "passed", "exit_code": 0, "log_tail": log_tail},
    }
    with capture(execute=True):
        response = client.post(
            "/api/submissions/", {"task": str(task.pk), "evidence": evidence}, format="json"
        )
    assert response.status_code == 201, response.content
    return response.json()


def chat(client, task, content: str, capture) -> dict:
    session = client.post("/api/tutor/sessions/", {"task": str(task.pk)}, format="json").json()["id"]
    with capture(execute=True):
        response = client.post(
            f"/api/tutor/sessions/{session}/messages/", {"content": content}, format="json"
        )
    assert response.status_code == 201, response.content
    return response.json()


def live(*, course, task, platform, staff, fake_llm, capture, sub: str | None = None) -> Life:
    fake_llm.default = fake_model
    sub = sub or canary("sub")
    email = f"{canary('mail')}@school.example"
    browser = Browser(platform)
    assert browser.launch(sub=sub, email=email, name="Grace Hopper").status_code == 302
    person = Identity.objects.get(subject=sub).user
    classmate = enroll(course, "classmate-kim")
    life = Life(person=person, classmate=classmate, sub=sub, email=email)
    client, other, staff_client = client_for(person), client_for(classmate), client_for(staff)

    # Review -> guidance: a failing report (A2 wants "first" and "undefined"), then a fixed one.
    first = submit(
        client,
        task,
        f"first() returns the first element. {life.write('report')}",
        {"src/first.js": f"// {life.write('file')}\nexport const first = (a) => a[0];"},
        f"3 passing {life.write('log')}",
        capture,
    )
    life.submissions.append(first["id"])
    assert first["attempts"][0]["result"]["overall"] == "FAIL", first
    regrade = client.post(
        f"/api/submissions/{first['id']}/regrade-requests/",
        {"rubric_id": "A2", "reason": f"I did name it: {life.write('regrade')}"},
        format="json",
    )
    assert regrade.status_code == 201, regrade.content
    regrade_decline(request=RegradeRequest.objects.get(pk=regrade.json()["id"]), staff=staff, response="kept")
    second = submit(
        client,
        task,
        f"first() returns undefined for an empty array. {life.write('report2')}",
        {"src/first.js": "export const first = (a) => a[0];"},
        "4 passing",
        capture,
    )
    life.submissions.append(second["id"])
    assert second["attempts"][0]["result"]["overall"] == "PASS", second
    submit(
        other, task, "first() returns undefined for an empty array; classmate's own words.", {}, "", capture
    )

    # The captured lesson: staff edit it (a revision keeps the captured text)
    # and approve it, so it stays for the course.
    [draft] = staff_client.get("/api/lessons/", {"status": "pending"}).json()["results"]
    edit = {"body": draft["body"] + "\nName both words in the report.", "note": "clearer"}
    assert staff_client.patch(f"/api/lessons/{draft['id']}/", edit, format="json").status_code == 200
    assert staff_client.post(f"/api/lessons/{draft['id']}/approve/", {}, format="json").status_code == 200
    life.lesson = Lesson.objects.get(pk=draft["id"])

    # Corrections -> memory: a question, a factual correction, a preference, an explicit one.
    chat(client, task, f"How long is the beam? {life.write('question')}", capture)
    fake_llm.reply("The beam is 500 mm long.")
    session = client.post("/api/tutor/sessions/", {"task": str(task.pk)}, format="json").json()["id"]
    for content in (
        "How long is the beam?",
        f"That's wrong, the beam is 630 mm long {life.write('fact')}",
        f"I prefer short answers with {life.write('preference')}",
    ):
        with capture(execute=True):
            response = client.post(
                f"/api/tutor/sessions/{session}/messages/", {"content": content}, format="json"
            )
        assert response.status_code == 201, response.content
    explicit = client.post(
        "/api/corrections/",
        {"content": f"Actually the beam is 640 mm {life.write('explicit')}"},
        format="json",
    )
    assert explicit.status_code in (200, 201), explicit.content
    chat(other, task, "How long is the beam, says the classmate?", capture)
    return life
