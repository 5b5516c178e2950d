// The reference student client (served at /). It keeps nothing of its own:
// who you are, the tasks, the latest review and the whole conversation are
// read from the API whenever the page loads, so a reload loses nothing.
// `/?task=<task id>` opens that task directly.

import { api, apiAll, ApiError, auth, sleep } from "./api.js";
import { clear, h, show } from "./dom.js";
import { applyLanguage, chooseLanguage, setUpLanguageSelect, t } from "./i18n.js";
import { EvidenceForm } from "./evidence.js";
import { correctionText, messageNode, renderMessages } from "./chat.js";
import { closeMemory, renderMemory, setUpMemory } from "./memory.js";
import { newestAttempt, renderProgress, renderReview, renderTutorView, submissionNumber, TERMINAL } from "./review.js";
import { isNoticeRequired, openNotice, setUpNotice } from "./notice.js";

const $ = (id) => document.getElementById(id);
const POLL_FIRST_MS = 500;
const POLL_MAX_MS = 3000;
const REPLY_WAIT_MS = 2000;
const REPLY_WAIT_ROUNDS = 30;
// A correction's outcome is read again until its detection has run (a worker's job).
const OUTCOME_WAIT_MS = 1500;
const OUTCOME_WAIT_ROUNDS = 20;

const state = {
  me: null,
  tasks: [],
  task: null,
  session: null,
  submission: null,
  tutorView: null,
  messages: [],
  // Bumped whenever another task is opened: loops of the previous one stop.
  generation: 0,
  sending: false,
};

let evidenceForm;

// --- status lines ----------------------------------------------------------

function pageStatus(text) {
  const status = $("page-status");
  // From now on the code says what the line shows: a language switch must
  // not bring back the first "Loading…".
  delete status.dataset.i18n;
  status.textContent = text;
}

function pageError(error) {
  show($("page-error"), error ? errorText(error) : "");
}

function errorText(error) {
  if (error instanceof ApiError) {
    if (error.status === 429) return t("too_many");
    if (error.status === 401) return t("signed_out");
    return t("generic_error", { detail: error.detail });
  }
  return t("generic_error", { detail: String(error && error.message ? error.message : error) });
}

// A 401 anywhere: the token was revoked or the session ended.
function handleAuthError(error) {
  if (error instanceof ApiError && error.status === 401) {
    auth.clearToken();
    showSignIn(t("signed_out"));
    return true;
  }
  return false;
}

// --- signing in ------------------------------------------------------------

function showSignIn(message) {
  $("app").hidden = true;
  $("whoami").hidden = true;
  $("logout-form").hidden = true;
  $("admin-link").hidden = true;
  $("signin").hidden = false;
  $("signin-next").value = window.location.pathname + window.location.search;
  pageStatus("");
  show($("token-error"), message || "");
  $("signin-heading").setAttribute("tabindex", "-1");
  $("signin-heading").focus();
}

function setUpSignIn() {
  $("token-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    const token = $("token-input").value.trim();
    if (!token) return;
    auth.setToken(token);
    try {
      state.me = await api("GET", "/api/me/");
    } catch (error) {
      auth.clearToken();
      show($("token-error"), error instanceof ApiError && error.status === 401 ? t("token_rejected") : errorText(error));
      $("token-input").focus();
      return;
    }
    $("token-input").value = "";
    show($("token-error"), "");
    await showApp();
  });
  // Signing out ends both: the tab's token and the Django session.
  $("logout-form").addEventListener("submit", () => auth.clearToken());
}

// --- tasks -----------------------------------------------------------------

function enrollmentFor(courseId) {
  return state.me.enrollments.find((e) => e.course === courseId) || null;
}

function fillTaskSelect() {
  const select = $("task-select");
  clear(select);
  const byCourse = new Map();
  for (const task of state.tasks) {
    if (!byCourse.has(task.course)) byCourse.set(task.course, []);
    byCourse.get(task.course).push(task);
  }
  for (const [courseId, tasks] of byCourse) {
    const enrollment = enrollmentFor(courseId);
    const label = enrollment ? `${enrollment.course_title} (${enrollment.role})` : courseId;
    select.append(
      h(
        "optgroup",
        { label },
        tasks.map((task) => h("option", { value: task.id }, task.title)),
      ),
    );
  }
}

function taskFromUrl() {
  // A UUID in either case (a link may carry it in upper case).
  const wanted = (new URLSearchParams(window.location.search).get("task") || "").toLowerCase();
  return state.tasks.find((task) => task.id === wanted) || null;
}

function firstStudentTask() {
  return state.tasks.find((task) => enrollmentFor(task.course)?.role === "student") || state.tasks[0] || null;
}

async function showApp() {
  const me = state.me;
  $("signin").hidden = true;
  $("whoami").textContent = t("signed_in_as", { name: me.display_name });
  $("whoami").hidden = false;
  $("logout-form").hidden = false;
  $("admin-link").hidden = !(me.is_staff || me.enrollments.some((e) => e.role === "staff"));
  pageStatus(t("loading"));
  try {
    state.tasks = await apiAll("/api/tasks/?page_size=200");
  } catch (error) {
    if (!handleAuthError(error)) pageError(error);
    return;
  }
  $("app").hidden = false;
  pageStatus("");
  if (!state.tasks.length) {
    show($("task-note"), t("no_tasks"));
    $("task-select").hidden = true;
    return;
  }
  fillTaskSelect();
  const wanted = new URLSearchParams(window.location.search).get("task");
  if (wanted && !taskFromUrl()) show($("page-error"), t("task_not_found"));
  const task = taskFromUrl() || firstStudentTask();
  $("task-select").value = task.id;
  await openTask(task);
}

function setUpTaskSelect() {
  $("task-select").addEventListener("change", async () => {
    const task = state.tasks.find((x) => x.id === $("task-select").value);
    if (!task) return;
    // The address names the task, so a reload (or a shared link) opens it.
    const url = new URL(window.location.href);
    url.searchParams.set("task", task.id);
    window.history.replaceState(null, "", url);
    await openTask(task);
  });
}

function renderTaskDetails(task) {
  $("task-heading").textContent = task.title;
  $("task-goal").textContent = task.goal;
  clear($("task-steps")).append(...(task.steps || []).map((step) => h("li", {}, step)));
  clear($("task-criteria")).append(
    ...(task.criteria || []).map((c) =>
      h(
        "li",
        { dataset: { criterion: c.id } },
        h("strong", {}, c.id),
        ` (${t(`kind_${c.kind}`)}) `,
        c.text,
        c.visibility === "hidden" ? [" ", h("span", { class: "tag" }, t("hidden_tag"))] : null,
      ),
    ),
  );
}

async function openTask(task) {
  state.generation += 1;
  state.task = task;
  state.session = null;
  state.submission = null;
  state.tutorView = null;
  clear($("tutor-view"));
  $("workspace").hidden = false;
  renderTaskDetails(task);
  const role = enrollmentFor(task.course)?.role;
  const isStudent = role === "student";
  $("evidence").hidden = !isStudent;
  $("review").hidden = !isStudent;
  $("chat").hidden = !isStudent;
  $("jump-nav").hidden = !isStudent;
  show($("task-note"), isStudent || !role ? "" : t("staff_course_note", { role }));
  if (!isStudent) return;
  show($("review-status"), "");
  show($("chat-error"), "");
  $("chat-status").textContent = "";
  await Promise.all([loadReview(), openSession(false), openNotice(state.me, task.course).catch(() => {})]);
}

// --- the review ----------------------------------------------------------------

async function loadReview() {
  const generation = state.generation;
  const task = state.task;
  let page;
  try {
    const query = new URLSearchParams({ task: task.id, student: state.me.username, page_size: "1" });
    page = await api("GET", `/api/submissions/?${query}`);
  } catch (error) {
    if (!handleAuthError(error)) pageError(error);
    return;
  }
  if (generation !== state.generation) return;
  showSubmission(page.results[0] || null);
  await loadTutorView();
}

// What the tutor's next turn will be given: the feedback block of the
// context preview (no side effects on the server). It names the state of
// SPEC §3 -- pending, stale_rules, ... -- as the server decides it.
async function loadTutorView() {
  const generation = state.generation;
  let feedback = null;
  try {
    const preview = await api("GET", `/api/tutor/context/?task=${encodeURIComponent(state.task.id)}`);
    feedback = preview.feedback;
  } catch (error) {
    handleAuthError(error);
  }
  if (generation !== state.generation) return;
  state.tutorView = feedback;
  renderTutorView($("tutor-view"), feedback, { onRetry: retryReview });
}

function renderSubmission(submission) {
  const attempt = newestAttempt(submission);
  renderReview($("review-card"), { submission, task: state.task, onRetry: retryReview, onRegrade: askRegrade });
  renderProgress($("review-progress"), attempt ? attempt.status : null);
  if (attempt) announceAttempt(submission, attempt.status);
  return attempt;
}

function showSubmission(submission) {
  state.submission = submission;
  const attempt = renderSubmission(submission);
  if (attempt && !TERMINAL.has(attempt.status)) watchAttempt(attempt.id);
}

function announceAttempt(submission, status) {
  show(
    $("review-status"),
    t("attempt_status_announce", { n: submissionNumber(submission), status: t(`status_${status}`) }),
  );
}

// Poll the attempt until it is terminal, then read the submission again
// for the full review card.
async function watchAttempt(attemptId) {
  const generation = state.generation;
  const submission = state.submission;
  let delay = POLL_FIRST_MS;
  let last = null;
  for (;;) {
    await sleep(delay);
    if (generation !== state.generation || state.submission !== submission) return;
    let attempt;
    try {
      attempt = await api("GET", `/api/review-attempts/${attemptId}/`);
    } catch (error) {
      if (handleAuthError(error)) return;
      delay = Math.min(delay * 2, POLL_MAX_MS);
      continue;
    }
    if (generation !== state.generation || state.submission !== submission) return;
    renderProgress($("review-progress"), attempt.status);
    if (attempt.status !== last) {
      last = attempt.status;
      announceAttempt(submission, attempt.status);
    }
    if (TERMINAL.has(attempt.status)) {
      await loadReview();
      return;
    }
    delay = Math.min(Math.round(delay * 1.5), POLL_MAX_MS);
  }
}

function setUpEvidenceForm() {
  evidenceForm = new EvidenceForm($("evidence-form"));
  $("evidence-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    // An empty submission would replace the latest review with one of
    // nothing: the student confirms it (the API refuses the emptiest).
    const question = evidenceForm.emptiness();
    if (question && !window.confirm(t(question))) return;
    const body = evidenceForm.body(state.task.id);
    if (body === null) return;
    const button = $("submit-button");
    button.disabled = true;
    evidenceForm.showError("");
    show($("review-status"), t("submitting"));
    try {
      const submission = await api("POST", "/api/submissions/", body);
      showSubmission(submission);
      loadTutorView();
      $("review-heading").setAttribute("tabindex", "-1");
      $("review").scrollIntoView({ block: "start" });
    } catch (error) {
      show($("review-status"), "");
      if (!handleAuthError(error)) evidenceForm.showError(errorText(error));
    } finally {
      button.disabled = false;
    }
  });
}

async function retryReview(event) {
  const submission = state.submission;
  if (!submission) return;
  event.target.disabled = true;
  try {
    await api("POST", `/api/submissions/${submission.id}/reviews/`, {});
  } catch (error) {
    if (!handleAuthError(error)) pageError(error);
    event.target.disabled = false;
    return;
  }
  await loadReview();
}

// A regrade request on one criterion (SPEC §7). The card is then rebuilt
// from the API -- the request's status is the server's, not the page's --
// and focus goes to the new request's line. Errors go back to the form.
async function askRegrade(rubricId, reason) {
  const submission = state.submission;
  try {
    await api("POST", `/api/submissions/${submission.id}/regrade-requests/`, { rubric_id: rubricId, reason });
  } catch (error) {
    handleAuthError(error);
    throw error;
  }
  await loadReview();
  show($("review-status"), t("regrade_sent", { id: rubricId }));
  const selector = `.criterion[data-rubric-id="${CSS.escape(rubricId)}"] .regrade-request[data-status="open"]`;
  $("review-card").querySelector(selector)?.focus();
}

// --- the conversation --------------------------------------------------------------

async function openSession(fresh) {
  const generation = state.generation;
  try {
    const body = fresh ? { task: state.task.id, new: true } : { task: state.task.id };
    const session = await api("POST", "/api/tutor/sessions/", body);
    if (generation !== state.generation) return;
    state.session = session;
    await loadMessages();
  } catch (error) {
    if (!handleAuthError(error)) show($("chat-error"), errorText(error));
  }
}

async function loadMessages() {
  const generation = state.generation;
  const session = state.session;
  const log = $("chat-log");
  log.setAttribute("aria-busy", "true");
  try {
    const messages = await apiAll(`/api/tutor/sessions/${session.id}/messages/?page_size=200`);
    if (generation !== state.generation || session !== state.session) return;
    state.messages = messages;
    renderMessages(log, messages);
    log.dataset.count = String(messages.length);
  } finally {
    log.setAttribute("aria-busy", "false");
  }
}

function appendMessages(...messages) {
  const log = $("chat-log");
  log.querySelector(".empty")?.remove();
  for (const message of messages) {
    state.messages.push(message);
    log.append(messageNode(message));
  }
  log.dataset.count = String(state.messages.length);
  log.scrollTop = log.scrollHeight;
}

// After a 409 the earlier reply is on its way: read the history again until
// it has arrived (the newest message is the tutor's).
async function waitForPendingReply() {
  const generation = state.generation;
  for (let round = 0; round < REPLY_WAIT_ROUNDS; round += 1) {
    await sleep(REPLY_WAIT_MS);
    if (generation !== state.generation || state.sending) return;
    try {
      await loadMessages();
    } catch {
      continue;
    }
    const newest = state.messages[state.messages.length - 1];
    if (newest && newest.role === "assistant") {
      show($("chat-error"), "");
      $("chat-status").textContent = t("reply_arrived");
      return;
    }
  }
}

// A 409: either a reply to this session is still being written (wait for
// it), or the session was archived meanwhile by a new conversation started
// elsewhere (switch to the open one).
async function followConflict(session) {
  try {
    const open = await api("POST", "/api/tutor/sessions/", { task: state.task.id });
    if (open.id !== session.id) {
      state.session = open;
      await loadMessages();
      return;
    }
  } catch (error) {
    if (!handleAuthError(error)) show($("chat-error"), errorText(error));
    return;
  }
  waitForPendingReply();
}

async function sendMessage() {
  const input = $("chat-input");
  const content = input.value;
  if (state.sending || !state.session) return;
  if (!content.trim()) {
    show($("chat-error"), t("message_empty"));
    input.focus();
    return;
  }
  const generation = state.generation;
  const session = state.session;
  state.sending = true;
  $("send-button").disabled = true;
  show($("chat-error"), "");
  $("chat-status").textContent = t("tutor_writing");
  try {
    const exchange = await api("POST", `/api/tutor/sessions/${session.id}/messages/`, { content });
    if (generation !== state.generation) return;
    input.value = "";
    appendMessages({ ...exchange.user_message, correction: exchange.correction }, {
      ...exchange.reply,
      context_meta: exchange.reply.context_meta || exchange.context_meta,
      context_texts: exchange.context_texts || {},
    });
    announceCorrection(exchange.correction);
    if (exchange.correction?.status === "pending") watchCorrection(exchange.user_message.id);
  } catch (error) {
    $("chat-status").textContent = "";
    if (handleAuthError(error)) return;
    if (error instanceof ApiError && error.status === 503) {
      // The server stored the message before the model failed: show it from
      // the server's history, not from the page.
      input.value = "";
      show($("chat-error"), t("tutor_unavailable"));
      await loadMessages();
    } else if (isNoticeRequired(error)) {
      show($("chat-error"), t("notice_required"));
      await openNotice(state.me, state.task.course, { force: true });
    } else if (error instanceof ApiError && error.status === 409) {
      show($("chat-error"), t("reply_still_coming"));
      await followConflict(session);
    } else {
      show($("chat-error"), errorText(error));
    }
  } finally {
    state.sending = false;
    $("send-button").disabled = false;
  }
}

// The reply, and what became of the message if it read as a correction.
function announceCorrection(outcome) {
  const said = correctionText(outcome);
  $("chat-status").textContent = said ? `${t("reply_arrived")} ${said}` : t("reply_arrived");
}

// Read the history again until the message's detection has run, then show
// (and announce) what became of it -- or drop the line when it was none.
async function watchCorrection(messageId) {
  const generation = state.generation;
  const session = state.session;
  for (let round = 0; round < OUTCOME_WAIT_ROUNDS; round += 1) {
    await sleep(OUTCOME_WAIT_MS);
    if (generation !== state.generation || session !== state.session) return;
    let messages;
    try {
      messages = await apiAll(`/api/tutor/sessions/${session.id}/messages/?page_size=200`);
    } catch {
      continue;
    }
    const found = messages.find((message) => message.id === messageId);
    if (!found || found.correction?.status === "pending") continue;
    if (generation !== state.generation || session !== state.session || state.sending) return;
    const index = state.messages.findIndex((message) => message.id === messageId);
    const node = $("chat-log").querySelector(`.message[data-id="${CSS.escape(messageId)}"]`);
    if (index >= 0) state.messages[index] = found;
    node?.replaceWith(messageNode(found));
    if (found.correction) $("chat-status").textContent = correctionText(found.correction);
    return;
  }
}

function setUpChat() {
  $("chat-form").addEventListener("submit", (event) => {
    event.preventDefault();
    sendMessage();
  });
  $("chat-input").addEventListener("keydown", (event) => {
    if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) {
      event.preventDefault();
      sendMessage();
    }
  });
  $("ai-notice-open").addEventListener("click", () => openNotice(state.me, state.task.course, { force: true }));
  setUpNotice(() => show($("chat-error"), ""));
  $("new-session-button").addEventListener("click", async () => {
    await openSession(true);
    $("chat-input").focus();
  });
}

// --- start ---------------------------------------------------------------------

async function start() {
  applyLanguage(chooseLanguage());
  setUpLanguageSelect($("lang-select"), () => {
    // Text built from data is rebuilt in the new language from the same reads.
    if (!state.me) return;
    $("whoami").textContent = t("signed_in_as", { name: state.me.display_name });
    if (state.task && enrollmentFor(state.task.course)?.role === "student") {
      renderTaskDetails(state.task);
      renderMessages($("chat-log"), state.messages);
      renderSubmission(state.submission);
      renderTutorView($("tutor-view"), state.tutorView, { onRetry: retryReview });
    }
    renderMemory();
  });
  setUpSignIn();
  setUpTaskSelect();
  setUpEvidenceForm();
  setUpChat();
  // A forgotten item leaves "what the tutor knew" too: the history is read again.
  setUpMemory(() => (state.session ? loadMessages().catch(() => {}) : null));
  try {
    state.me = await api("GET", "/api/me/");
  } catch (error) {
    if (error instanceof ApiError && error.status === 401) {
      const hadToken = Boolean(auth.token());
      auth.clearToken();
      showSignIn(hadToken ? t("token_rejected") : "");
    } else {
      pageStatus("");
      pageError(error);
    }
    return;
  }
  await showApp();
}

start();
