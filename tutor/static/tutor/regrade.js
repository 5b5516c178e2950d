// Regrade requests on the review card (SPEC §7): a student asks staff to
// look at one criterion of the newest completed review of their latest
// submission. Which criteria may be asked about follows the server's rule
// (a non-PASS acceptance criterion whose basis is not `ci`, with no open
// request); the server still decides, and its answer is shown next to the
// field it names. Requests and their outcome are always read from the
// submission (`regrade_requests`), never remembered by the page.

import { ApiError } from "./api.js";
import { h, formatTime, show } from "./dom.js";
import { locale, t } from "./i18n.js";

export const REASON_MAX_CHARS = 1000;
// How long typing pauses before the remaining characters are announced.
const ANNOUNCE_AFTER_MS = 700;

// The form a student has open, so that rebuilding the card (another
// language, a finished poll) keeps what they typed. Lost on a reload, like
// any unsent text.
let draft = null; // {submissionId, rubricId, text}

// The server counts characters (code points) of the trimmed reason.
export function reasonLength(text) {
  return [...text.trim()].length;
}

export function requestsFor(submission, rubricId) {
  return ((submission && submission.regrade_requests) || [])
    .filter((r) => r.rubric_id === rubricId)
    .sort((a, b) => (a.created_at < b.created_at ? -1 : a.created_at > b.created_at ? 1 : 0));
}

export function mayAsk(criterion, requests) {
  return (
    criterion.kind === "acceptance" &&
    criterion.status !== "PASS" &&
    criterion.basis !== "ci" &&
    !requests.some((r) => r.status === "open")
  );
}

// An id fit for element ids (rubric ids are short words, but need not be).
function slug(rubricId) {
  return encodeURIComponent(rubricId).replace(/[^A-Za-z0-9_-]/g, "_");
}

export function requestItem(request) {
  const decided = request.status !== "open";
  return h(
    "li",
    { class: `regrade-request regrade-${request.status}`, tabindex: "-1", dataset: { status: request.status } },
    h(
      "p",
      { class: "regrade-head" },
      h("span", { class: `badge regrade-badge-${request.status}` }, t(`regrade_status_${request.status}`)),
      " ",
      h(
        "span",
        { class: "meta" },
        t("regrade_asked", { time: formatTime(request.created_at, locale()) }),
        decided && request.decided_at ? ` · ${t("regrade_decided", { time: formatTime(request.decided_at, locale()) })}` : "",
      ),
    ),
    h(
      "dl",
      { class: "facts" },
      h("dt", {}, t("regrade_your_reason")),
      h("dd", { class: "regrade-reason" }, request.reason),
      decided && request.response
        ? [h("dt", {}, t("regrade_response")), h("dd", { class: "regrade-response" }, request.response)]
        : null,
    ),
  );
}

// What the server said, by the field it names (`attr`): the reason's
// problems under the textarea, anything else (the criterion, a 409, a 429)
// above the buttons.
function splitErrors(error) {
  const field = [];
  const general = [];
  if (!(error instanceof ApiError)) {
    general.push(t("generic_error", { detail: String(error && error.message ? error.message : error) }));
    return { field, general };
  }
  if (error.status === 429) return { field, general: [t("too_many")] };
  if (error.status === 401) return { field, general: [t("signed_out")] };
  for (const e of error.errors) {
    if (e.attr === "reason") field.push(e.detail);
    else if (error.status === 409) general.push(t("regrade_conflict", { detail: e.detail }));
    else general.push(e.detail);
  }
  if (!field.length && !general.length) general.push(t("generic_error", { detail: error.detail }));
  return { field, general };
}

function regradeForm({ submission, criterion, onSubmit, onClose }) {
  const id = `regrade-${slug(criterion.rubric_id)}`;
  const ids = {
    reason: `${id}-reason`,
    hint: `${id}-hint`,
    count: `${id}-count`,
    fieldError: `${id}-reason-error`,
    error: `${id}-error`,
  };
  const textarea = h("textarea", {
    id: ids.reason,
    name: "reason",
    rows: "4",
    "aria-describedby": `${ids.hint} ${ids.count}`,
  });
  const counter = h("p", { id: ids.count, class: "hint char-count" });
  // Announced once typing pauses, not at every key.
  const announcer = h("p", { class: "visually-hidden", role: "status", "aria-live": "polite" });
  const fieldError = h("p", { id: ids.fieldError, class: "error field-error", hidden: true });
  const formError = h("p", { id: ids.error, class: "error form-error", role: "alert", hidden: true });
  const submitButton = h("button", { type: "submit", class: "primary" }, t("regrade_send"));
  const cancelButton = h("button", { type: "button", class: "cancel" }, t("regrade_cancel"));
  let announceTimer = null;

  function countText() {
    const left = REASON_MAX_CHARS - reasonLength(textarea.value);
    return left >= 0 ? t("regrade_chars_left", { left }) : t("regrade_chars_over", { over: -left });
  }

  function updateCount() {
    const over = reasonLength(textarea.value) > REASON_MAX_CHARS;
    counter.textContent = countText();
    counter.classList.toggle("over", over);
    clearTimeout(announceTimer);
    announceTimer = setTimeout(() => {
      announcer.textContent = countText();
    }, ANNOUNCE_AFTER_MS);
  }

  function showFieldError(text) {
    show(fieldError, text);
    // role=alert only while there is something to say: screen readers
    // announce it as it appears.
    if (text) fieldError.setAttribute("role", "alert");
    else fieldError.removeAttribute("role");
    textarea.setAttribute("aria-invalid", text ? "true" : "false");
    const described = [ids.hint, ids.count, text ? ids.fieldError : null];
    textarea.setAttribute("aria-describedby", described.filter(Boolean).join(" "));
  }

  function clientProblem() {
    const length = reasonLength(textarea.value);
    if (length === 0) return t("regrade_reason_empty");
    if (length > REASON_MAX_CHARS) {
      return t("regrade_reason_too_long", { over: length - REASON_MAX_CHARS, max: REASON_MAX_CHARS });
    }
    return "";
  }

  function close() {
    clearTimeout(announceTimer);
    draft = null;
    onClose();
  }

  const form = h(
    "form",
    { id, class: "regrade-form stack", novalidate: true, dataset: { rubricId: criterion.rubric_id } },
    h("label", { for: ids.reason }, t("regrade_form_label", { id: criterion.rubric_id })),
    h("p", { id: ids.hint, class: "hint" }, t("regrade_hint", { max: REASON_MAX_CHARS })),
    textarea,
    counter,
    fieldError,
    announcer,
    formError,
    h("div", { class: "row" }, submitButton, cancelButton),
  );

  textarea.addEventListener("input", () => {
    draft = { submissionId: submission.id, rubricId: criterion.rubric_id, text: textarea.value };
    updateCount();
    if (textarea.getAttribute("aria-invalid") === "true" && !clientProblem()) showFieldError("");
  });
  form.addEventListener("keydown", (event) => {
    if (event.key === "Escape") {
      event.preventDefault();
      close();
    } else if (event.key === "Enter" && (event.ctrlKey || event.metaKey) && event.target === textarea) {
      // As in the chat: Ctrl+Enter sends.
      event.preventDefault();
      form.requestSubmit();
    }
  });
  cancelButton.addEventListener("click", close);
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    if (submitButton.disabled) return;
    show(formError, "");
    const problem = clientProblem();
    showFieldError(problem);
    if (problem) {
      textarea.focus();
      return;
    }
    submitButton.disabled = true;
    submitButton.textContent = t("regrade_sending");
    // Sent: the text no longer waits to be restored (the card is rebuilt
    // from the API on success, and this form goes with it).
    const kept = draft;
    draft = null;
    try {
      await onSubmit(criterion.rubric_id, textarea.value.trim());
    } catch (error) {
      draft = kept;
      submitButton.disabled = false;
      submitButton.textContent = t("regrade_send");
      const { field, general } = splitErrors(error);
      showFieldError(field.join(" "));
      show(formError, general.join(" "));
      if (field.length) textarea.focus();
      else formError.focus();
    }
  });
  formError.setAttribute("tabindex", "-1");

  if (draft && draft.submissionId === submission.id && draft.rubricId === criterion.rubric_id) {
    textarea.value = draft.text;
  } else {
    draft = { submissionId: submission.id, rubricId: criterion.rubric_id, text: "" };
  }
  counter.textContent = countText();
  counter.classList.toggle("over", reasonLength(textarea.value) > REASON_MAX_CHARS);
  return { form, textarea };
}

// The regrade part of one criterion of the review card: its requests, and
// the button (or the open form) when it may be asked about.
export function regradeBlock({ submission, criterion, allowed, onSubmit }) {
  const requests = requestsFor(submission, criterion.rubric_id);
  const canAsk = allowed && mayAsk(criterion, requests);
  if (!requests.length && !canAsk) {
    if (allowed && criterion.kind === "acceptance" && criterion.status !== "PASS" && criterion.basis === "ci") {
      return h("p", { class: "hint regrade-ci" }, t("regrade_ci_hint"));
    }
    return null;
  }
  const block = h("div", { class: "regrade" });
  if (requests.length) {
    block.append(
      h(
        "ul",
        { class: "regrade-requests", "aria-label": t("regrade_requests_label", { id: criterion.rubric_id }) },
        requests.map(requestItem),
      ),
    );
  }
  if (!canAsk) return block;

  const formId = `regrade-${slug(criterion.rubric_id)}`;
  const button = h(
    "button",
    { type: "button", class: "regrade-ask", "aria-expanded": "false", "aria-controls": formId },
    t("regrade_ask"),
    h("span", { class: "visually-hidden" }, ` (${criterion.rubric_id})`),
  );
  let opened = null;

  function open({ focus }) {
    const built = regradeForm({
      submission,
      criterion,
      onSubmit,
      onClose: () => {
        opened.form.remove();
        opened = null;
        button.hidden = false;
        button.setAttribute("aria-expanded", "false");
        button.focus();
      },
    });
    opened = built;
    button.hidden = true;
    button.setAttribute("aria-expanded", "true");
    block.append(built.form);
    if (focus) built.textarea.focus();
  }

  button.addEventListener("click", () => open({ focus: true }));
  block.append(button);
  if (draft && draft.submissionId === submission.id && draft.rubricId === criterion.rubric_id) {
    open({ focus: false });
  }
  return block;
}

// Requests whose criterion the shown review does not list (a rubric
// changed since): still the student's, still shown.
export function otherRequests(submission, shownIds) {
  const rest = ((submission && submission.regrade_requests) || []).filter((r) => !shownIds.has(r.rubric_id));
  if (!rest.length) return null;
  return [
    h("h3", {}, t("regrade_other")),
    h(
      "ul",
      { class: "regrade-requests regrade-other" },
      rest.map((r) => {
        const item = requestItem(r);
        item.prepend(h("strong", { class: "rubric-id" }, r.rubric_id));
        return item;
      }),
    ),
  ];
}
