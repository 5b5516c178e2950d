// The review card: the newest attempt of the student's latest submission,
// read from the submissions API (SPEC §2, §3). Only that attempt is shown as
// current: an older verdict is never promoted to a newer submission.

import { h, clear, formatTime } from "./dom.js";
import { locale, t } from "./i18n.js";
import { otherRequests, regradeBlock } from "./regrade.js";

export const TERMINAL = new Set(["completed", "unavailable", "invalid"]);
const STEPS = ["queued", "running"];

export function newestAttempt(submission) {
  const attempts = (submission && submission.attempts) || [];
  return attempts.reduce((best, a) => (!best || a.attempt_seq > best.attempt_seq ? a : best), null);
}

function verdictBadge(status) {
  const key = status ? `verdict_${status}` : "verdict_null";
  return h("span", { class: `badge verdict-${status || "none"}` }, t(key));
}

// Who decided, in the student's words (never the stored code).
function basisText(basis) {
  const key = `basis_${basis}`;
  const label = t(key);
  return label === key ? t("basis_unknown") : label;
}

// The student's numbers (SPEC §7, turn 3): their own Nth submission of the
// task, and the Nth review of that submission -- never the system-wide
// sequences, which count everyone's work.
export function submissionNumber(submission) {
  return submission.number ?? 1;
}

function attemptNumber(submission, attempt) {
  return (submission.attempts || []).filter((a) => a.attempt_seq <= attempt.attempt_seq).length;
}

// The task's hidden checks (SPEC §9), by criterion id: their rows show
// status and text only.
export function hiddenIds(task) {
  return new Set(((task && task.criteria) || []).filter((c) => c.visibility === "hidden").map((c) => c.id));
}

function criterionFacts(c, hidden, waiting) {
  if (hidden) {
    return [
      waiting ? h("p", { class: "awaiting-staff" }, t("awaiting_staff")) : null,
      h("p", { class: "hint hidden-check" }, t("hidden_check")),
    ];
  }
  // Nothing automatic could judge it: the stored reason is the system's,
  // not advice; the student is told a teacher will decide.
  const reason = waiting && c.basis === "none" ? t("awaiting_staff_reason") : c.reason;
  return h(
    "dl",
    { class: "facts" },
    waiting ? [h("dt", {}, t("criterion_status")), h("dd", { class: "awaiting-staff" }, t("awaiting_staff"))] : null,
    h("dt", {}, t("criterion_basis")),
    h("dd", { class: "basis" }, basisText(c.basis)),
    reason ? [h("dt", {}, t("criterion_reason")), h("dd", { class: "reason" }, reason)] : null,
    c.evidence ? [h("dt", {}, t("criterion_evidence")), h("dd", { class: "evidence" }, c.evidence)] : null,
  );
}

function criterionItem(c, { submission, hidden, waiting, regradable, onRegrade }) {
  const isHidden = hidden.has(c.rubric_id);
  const isWaiting = waiting.has(c.rubric_id);
  return h(
    "li",
    {
      class: `criterion status-${c.status}`,
      dataset: {
        rubricId: c.rubric_id,
        hidden: isHidden ? "true" : "false",
        awaitingStaff: isWaiting ? "true" : "false",
      },
    },
    h(
      "div",
      { class: "criterion-head" },
      h("strong", { class: "rubric-id" }, c.rubric_id),
      " ",
      verdictBadge(c.status),
      " ",
      h("span", { class: "kind" }, t(`kind_${c.kind}`)),
    ),
    h("p", { class: "criterion-text" }, c.criterion),
    criterionFacts(c, isHidden, isWaiting),
    regradeBlock({ submission, criterion: c, allowed: regradable, onSubmit: onRegrade }),
  );
}

// The queued → running → terminal steps, the current one marked.
export function renderProgress(list, status) {
  clear(list);
  list.hidden = !status;
  if (!status) return;
  const terminal = TERMINAL.has(status) ? status : "completed";
  const order = [...STEPS, terminal];
  const reached = TERMINAL.has(status) ? order.length - 1 : order.indexOf(status);
  order.forEach((step, i) => {
    const li = h(
      "li",
      {
        class: `step ${i < reached ? "done" : ""} ${i === reached ? "current" : ""} step-${step}`,
        "aria-current": i === reached ? "step" : null,
        dataset: { step },
      },
      t(`status_${step}`),
    );
    list.append(li);
  });
}

// `task` names the hidden checks; `onRegrade(rubricId, reason)` sends a
// regrade request and rebuilds the card (it rejects with the API's error).
export function renderReview(container, { submission, task, onRetry, onRegrade }) {
  clear(container);
  if (!submission) {
    container.append(h("p", { class: "muted" }, t("no_submission")));
    return;
  }
  const attempt = newestAttempt(submission);
  container.append(
    h(
      "p",
      { class: "meta" },
      t("submission_line", { n: submissionNumber(submission), time: formatTime(submission.created_at, locale()) }),
      attempt ? ` · ${t("attempt_line", { n: attemptNumber(submission, attempt) })}` : "",
    ),
  );
  if (!attempt || !TERMINAL.has(attempt.status)) {
    container.append(h("p", { class: "notice" }, t("review_pending")));
    return;
  }
  const result = attempt.result || { overall: null, criteria: [], next_step: "" };
  if (attempt.status === "unavailable") container.append(h("p", { class: "notice" }, t("review_unavailable")));
  if (attempt.status === "invalid") container.append(h("p", { class: "notice" }, t("review_invalid")));
  if (attempt.status === "completed") {
    container.append(h("p", { class: "overall" }, `${t("overall")}: `, verdictBadge(result.overall)));
    if (attempt.reused_from) container.append(h("p", { class: "hint" }, t("reused")));
  }
  const criteria = result.criteria || [];
  // Regrade requests are for the newest completed review only: while a
  // newer attempt is unavailable or invalid, none is offered.
  const context = {
    submission,
    hidden: hiddenIds(task),
    waiting: new Set(attempt.awaiting_staff || []),
    regradable: attempt.status === "completed",
    onRegrade,
  };
  if (criteria.length) {
    if (attempt.status !== "completed") container.append(h("p", {}, t("machine_checks_kept")));
    container.append(h("ul", { class: "criteria-results" }, criteria.map((c) => criterionItem(c, context))));
  }
  const others = otherRequests(submission, new Set(criteria.map((c) => c.rubric_id)));
  if (others) container.append(...others);
  if (result.next_step) {
    container.append(h("h3", {}, t("next_step")), h("p", { class: "next-step prose" }, result.next_step));
  }
  if (attempt.status !== "completed") {
    container.append(h("button", { type: "button", class: "retry", onclick: onRetry }, t("retry_review")));
  }
}

// The feedback state the tutor's next turn carries, as the server selects it
// (the context preview's block): the items it includes, and for a review
// made under older rules, the way to a new one.
export function renderTutorView(container, feedback, { onRetry }) {
  clear(container);
  if (!feedback) return;
  const state = feedback.state;
  const ids = (feedback.items || []).map((item) => item.rubric_id);
  container.dataset.state = state;
  container.append(
    h("span", {}, `${t("tutor_view")}: `),
    h("span", { class: "state-words" }, t(`state_${state}`)),
    ids.length ? ` (${ids.join(", ")})` : "",
  );
  if (state === "stale_rules") {
    container.append(
      h("p", { class: "notice" }, t("review_stale")),
      h("button", { type: "button", class: "retry", onclick: onRetry }, t("retry_review")),
    );
  }
}
