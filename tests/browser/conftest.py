"""Browser tests: headless Chromium driven by selenium against a live server.

What runs: Debian's ``chromium`` and ``chromium-driver`` (``/usr/bin/chromium``,
``/usr/bin/chromedriver``; ``CHROMIUM_BIN`` / ``CHROMEDRIVER_BIN`` name others),
started by the ``browser`` fixture with a fresh profile and no network
services of its own, against pytest-django's ``live_server`` (a real HTTP
server in a thread of the test process, on the test database). ``.ci/run``
installs both packages; tests marked ``browser`` are skipped, with the reason,
only when a binary is missing.

The model: ``model_server`` is the fake OpenAI-compatible server of
``tests/worker/fakellm.py`` on 127.0.0.1, and the live server is configured
at it, so each test reads back the exact requests the tutor sent.

Reviews: by default they run eagerly inside the submission request.
``held_reviews`` instead holds dispatched attempts, as a broker does before a
worker picks them up: the page sees them ``queued`` until the test runs the
real review task in a thread.

Reuse: mark a module ``pytestmark = pytest.mark.browser``; ask for
``browser`` (one window) or ``browser_factory`` (``browser_factory("bob",
phone=True)`` for each further person, each with a profile of its own),
``model_server`` and ``held_reviews`` as needed; ``tests/browser/factories.py``
makes users who can sign in and long sessions.

Artefacts: every ``Browser.shot(name)`` is a PNG under the test's artefact
directory -- ``$BROWSER_ARTIFACTS/<module>--<test>/`` when that variable is set
(``.ci/run`` points it into its logs directory), else the test's ``tmp_path``
-- and a failing test leaves a screenshot, the page source and the browser's
console log there.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import re
import shutil
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.worker.fakellm import FakeLLM

CHROMIUM_BIN = os.environ.get("CHROMIUM_BIN", "/usr/bin/chromium")
CHROMEDRIVER_BIN = os.environ.get("CHROMEDRIVER_BIN", "/usr/bin/chromedriver")
WINDOW_SIZE = (1280, 900)
PHONE_SIZE = (390, 844)
WAIT_SECONDS = 10
FAKE_MODEL = "fake-model"

# Flags of a quiet, reproducible browser: no sandbox (containers run as
# root), no GPU, nothing fetched from the network on its own.
CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
)


def missing_binaries() -> list[str]:
    return [path for path in (CHROMIUM_BIN, CHROMEDRIVER_BIN) if not shutil.which(path)]


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    missing = missing_binaries()
    if not missing:
        return
    reason = (
        f"browser tests need {' and '.join(missing)} "
        "(Debian packages chromium and chromium-driver; .ci/run installs them)"
    )
    for item in items:
        if item.get_closest_marker("browser") is not None:
            item.add_marker(pytest.mark.skip(reason=reason))


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item: pytest.Item, call):
    # Kept on the item so the browser fixture knows, at teardown, whether the
    # test failed and should leave its evidence behind.
    report = yield
    setattr(item, f"browser_report_{report.when}", report)
    return report


# --- artefacts -----------------------------------------------------------------------


@pytest.fixture
def browser_artifacts(request, tmp_path) -> Path:
    """Where this test's screenshots go (see the module docstring)."""
    root = os.environ.get("BROWSER_ARTIFACTS")
    if not root:
        return tmp_path
    test_id = request.node.nodeid.removeprefix("tests/browser/").replace(".py::", "--")
    name = re.sub(r"[^A-Za-z0-9_.-]+", "-", test_id).strip("-")
    path = Path(root) / name
    if path.exists():
        shutil.rmtree(path)
    path.mkdir(parents=True)
    return path


# --- the browser ---------------------------------------------------------------------


class Browser:
    """A Chromium window with the waits and lookups the tests need."""

    def __init__(self, driver, base_url: str, artifacts: Path, label: str):
        self.driver = driver
        self.base_url = base_url
        self.artifacts = artifacts
        self.label = label
        self._shots = 0
        self._emulated: tuple[int, int] | None = None

    def emulate_phone(self, size: tuple[int, int] = PHONE_SIZE) -> None:
        """A phone's viewport (width, height, touch, device-width layout).
        Headless Chromium will not make a window narrower than 500 px, so the
        viewport is set through the DevTools protocol instead."""
        self._set_viewport(*size)
        self._emulated = size

    def _set_viewport(self, width: int, height: int) -> None:
        self.driver.execute_cdp_cmd(
            "Emulation.setDeviceMetricsOverride",
            {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": True},
        )

    # navigation and lookups
    def open(self, path: str = "/") -> None:
        self.driver.get(self.base_url + path)

    def find(self, css: str):
        from selenium.webdriver.common.by import By

        return self.driver.find_element(By.CSS_SELECTOR, css)

    def find_all(self, css: str) -> list:
        from selenium.webdriver.common.by import By

        return self.driver.find_elements(By.CSS_SELECTOR, css)

    def click(self, target) -> None:
        """Click an element (or the first match of a selector) as a person
        would: scrolled to the middle of the window first, so a sticky panel
        never covers it."""
        element = self.find(target) if isinstance(target, str) else target
        self.js("arguments[0].scrollIntoView({block: 'center'})", element)
        element.click()

    def text(self, css: str) -> str:
        return self.find(css).text

    def js(self, script: str, *args):
        return self.driver.execute_script(script, *args)

    def wait_until(self, predicate: Callable[[], object], message, timeout: float = WAIT_SECONDS):
        """Poll ``predicate`` (exceptions count as not yet) until truthy."""
        deadline = time.monotonic() + timeout
        last_error = None
        while True:
            try:
                value = predicate()
            except Exception as exc:  # the element may not exist yet
                value, last_error = None, exc
            if value:
                return value
            if time.monotonic() >= deadline:
                text = message() if callable(message) else message
                detail = f" (last error: {last_error!r})" if last_error else ""
                self.shot("timeout")
                raise AssertionError(f"{self.label}: after {timeout}s: {text}{detail}")
            time.sleep(0.1)

    def wait_for(self, css: str, timeout: float = WAIT_SECONDS):
        """The first element matching ``css`` once it is displayed."""
        return self.wait_until(
            lambda: next((e for e in self.find_all(css) if e.is_displayed()), None),
            f"no visible element matches {css!r}",
            timeout,
        )

    def wait_for_text(self, css: str, text: str, timeout: float = WAIT_SECONDS):
        return self.wait_until(
            lambda: text in self.text(css),
            lambda: f"{css!r} does not contain {text!r}; it shows {self._safe_text(css)!r}",
            timeout,
        )

    def wait_for_tutor_view(self, state: str, timeout: float = WAIT_SECONDS) -> None:
        """The review card's line on what the tutor's next reply will know."""
        self.wait_until(
            lambda: self.find("#tutor-view").get_attribute("data-state") == state,
            lambda: f"the tutor view shows {self._safe_text('#tutor-view')!r}, not state {state!r}",
            timeout,
        )

    def _safe_text(self, css: str) -> str:
        try:
            return self.text(css)
        except Exception as exc:
            return f"<{exc.__class__.__name__}>"

    # the client's own steps
    def sign_in_with_token(self, token: str) -> None:
        self.wait_for("#token-input").send_keys(token)
        self.click("#token-form button[type=submit]")
        self.wait_for("#app")

    def sign_in_with_password(self, username: str, password: str) -> None:
        self.wait_for("#signin-username").send_keys(username)
        self.find("#signin-password").send_keys(password)
        self.click("#password-form button[type=submit]")
        self.wait_for("#app")

    def messages(self) -> list:
        return self.find_all("#chat-log .message")

    def wait_for_message_count(self, count: int, timeout: float = WAIT_SECONDS) -> list:
        self.wait_until(
            lambda: len(self.messages()) == count,
            lambda: f"expected {count} messages in the chat, see {len(self.messages())}",
            timeout,
        )
        return self.messages()

    def send_chat(self, text: str) -> None:
        box = self.wait_for("#chat-input")
        box.clear()
        box.send_keys(text)
        self.click("#send-button")

    def progress_step(self) -> str | None:
        current = self.find_all("#review-progress .step.current")
        return current[0].get_attribute("data-step") if current else None

    def wait_for_step(self, step: str, timeout: float = WAIT_SECONDS) -> None:
        self.wait_until(
            lambda: self.progress_step() == step,
            lambda: f"the review progress shows {self.progress_step()!r}, not {step!r}",
            timeout,
        )

    # evidence
    @contextlib.contextmanager
    def _whole_page(self):
        """The viewport as tall as the page for a picture, then as it was
        (scrolled to the top meanwhile; scroll positions restored after)."""
        height = min(int(self.js("return document.documentElement.scrollHeight")), 4000)
        scrolled = self.js("return [window.scrollX, window.scrollY]")
        original = self.driver.get_window_size()
        if self._emulated:
            self._set_viewport(self._emulated[0], height)
        else:
            self.driver.set_window_size(original["width"], height + 120)
        try:
            self.js("window.scrollTo(0, 0)")
            yield
        finally:
            if self._emulated:
                self._set_viewport(*self._emulated)
            else:
                self.driver.set_window_size(original["width"], original["height"])
            self.js("window.scrollTo(arguments[0], arguments[1])", *scrolled)

    def _next_path(self, name: str) -> Path:
        self._shots += 1
        return self.artifacts / f"{self.label}-{self._shots:02d}-{name}.png"

    def shot(self, name: str) -> Path:
        """Save a PNG of the whole page as ``<label>-NN-name.png`` in the artefact directory."""
        path = self._next_path(name)
        with self._whole_page():
            self.driver.save_screenshot(str(path))
        return path

    def shot_element(self, css: str, name: str) -> Path:
        """A PNG of one element only (small: for documentation)."""
        path = self._next_path(name)
        with self._whole_page():
            # The newest messages in view, as after a reply.
            self.js(
                "for (const log of document.querySelectorAll('.chat-log')) log.scrollTop = log.scrollHeight"
            )
            path.write_bytes(self.find(css).screenshot_as_png)
        return path

    def console(self) -> list[dict]:
        return self.driver.get_log("browser")

    def script_errors(self) -> list[str]:
        """Uncaught JavaScript errors (not failed requests, which tests provoke)."""
        return [
            entry["message"]
            for entry in self.console()
            if entry["level"] == "SEVERE" and entry.get("source") != "network"
        ]

    def save_failure(self) -> None:
        self.shot("failure")
        (self.artifacts / f"{self.label}-failure.html").write_text(self.driver.page_source)
        (self.artifacts / f"{self.label}-console.json").write_text(json.dumps(self.console(), indent=1))


def _start_chromium(profile: str, size: tuple[int, int]):
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM_BIN
    for flag in CHROMIUM_FLAGS:
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={profile}")
    options.add_argument(f"--window-size={size[0]},{size[1]}")
    options.add_argument("--lang=en-US")
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    # Both paths given: selenium's driver manager, which would go to the
    # network to look for a driver, is never asked.
    return webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER_BIN), options=options)


@pytest.fixture
def browser_factory(request, live_server, browser_artifacts):
    """Start one or more browsers (``browser_factory("bob")``): each its own
    Chromium with a fresh profile, so no cookie or storage is shared."""
    started: list[tuple[Browser, str]] = []

    def start(label: str = "browser", *, phone: bool = False) -> Browser:
        profile = tempfile.mkdtemp(prefix=f"chromium-{label}-")
        driver = _start_chromium(profile, WINDOW_SIZE)
        driver.set_page_load_timeout(30)
        browser = Browser(driver, live_server.url, browser_artifacts, label)
        started.append((browser, profile))
        if phone:
            browser.emulate_phone()
        return browser

    yield start
    failed = any(
        getattr(getattr(request.node, f"browser_report_{when}", None), "failed", False)
        for when in ("setup", "call")
    )
    for browser, profile in started:
        try:
            if failed:
                browser.save_failure()
        finally:
            browser.driver.quit()
            shutil.rmtree(profile, ignore_errors=True)
    if failed:
        print(f"browser artefacts: {browser_artifacts}")


@pytest.fixture
def browser(browser_factory) -> Browser:
    return browser_factory()


# --- the model and the reviews ---------------------------------------------------------


@pytest.fixture
def model_server(settings):
    """The fake model server, with the live server's model client pointed at it."""
    server = FakeLLM().start()
    settings.TUTOR_LLM_BASE_URL = server.base_url
    settings.TUTOR_LLM_MODEL = FAKE_MODEL
    settings.TUTOR_LLM_API_KEY = "fake-key-for-browser-tests"
    settings.TUTOR_LLM_RETRIES = 0  # a scripted failure is final: no waiting on backoff
    settings.TUTOR_LLM_BACKOFF = 0
    settings.TUTOR_LLM_TIMEOUT = 20
    yield server
    server.stop()


def tutor_requests(server: FakeLLM) -> list[list[dict]]:
    """The ``messages`` of every tutor request the server received, in order
    (review requests left out)."""
    from tutor.chat.assembler import BASE_TUTOR_RULES

    found = []
    for request in server.requests:
        messages = request.json()["messages"]
        if (
            messages
            and messages[0]["role"] == "system"
            and messages[0]["content"].startswith(BASE_TUTOR_RULES)
        ):
            found.append(messages)
    return found


class HeldReviews:
    """Review attempts dispatched but not yet picked up by a worker: their
    rows stay ``queued`` until ``run`` starts the real review task."""

    def __init__(self) -> None:
        self._queue: queue.Queue[str] = queue.Queue()
        self._threads: list[threading.Thread] = []

    def dispatch(self, attempt_id) -> None:
        self._queue.put(str(attempt_id))

    def next(self, timeout: float = WAIT_SECONDS) -> str:
        try:
            return self._queue.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError(f"no review attempt was dispatched within {timeout}s") from None

    def run(self, attempt_id: str) -> threading.Thread:
        """Run the review task for ``attempt_id`` in a thread, as a worker would."""

        def work() -> None:
            from django.db import connection

            from feedback.tasks import review_attempt

            try:
                review_attempt.apply(args=[attempt_id])
            finally:
                connection.close()

        thread = threading.Thread(target=work, name=f"review-{attempt_id}", daemon=True)
        thread.start()
        self._threads.append(thread)
        return thread

    def join(self, timeout: float = 30) -> None:
        for thread in self._threads:
            thread.join(timeout)


@pytest.fixture
def held_reviews(monkeypatch):
    held = HeldReviews()
    monkeypatch.setattr("feedback.services.dispatch.attempt_dispatch", held.dispatch)
    yield held
    held.join()
