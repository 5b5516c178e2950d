// The conversation: rebuilt from GET /api/tutor/sessions/{id}/messages/ on
// every load, never from a copy kept in the page. Each assistant message
// shows "what the tutor knew": the context_meta of the request that produced
// it (feedback state, the rubric ids included, and the ids of whatever
// facts, preferences, memories, process rules and lessons it was given).

import { h } from "./dom.js";
import { has, t } from "./i18n.js";

const RUBRIC_IDS_KEY = "feedback_rubric_ids";

function idList(ids) {
  if (!ids.length) return h("span", { class: "muted" }, t("knew_none"));
  return h(
    "span",
    { class: "id-list" },
    ids.map((id) => h("code", {}, String(id))),
  );
}

function idsLabel(key) {
  const known = `knew_${key}`;
  if (has(known)) return t(known);
  return key.replace(/_ids$/, "").replaceAll("_", " ");
}

function omittedText(omitted) {
  return Object.entries(omitted || {})
    .filter(([, count]) => typeof count === "number" && count > 0)
    .map(([name, count]) => `${name.replaceAll("_", " ")}: ${count}`)
    .join(", ");
}

export function knewPanel(meta) {
  if (!meta) {
    return h("p", { class: "knew muted" }, `${t("knew_summary")}: ${t("knew_not_recorded")}`);
  }
  const state = meta.feedback_state || "none";
  const rubricIds = Array.isArray(meta[RUBRIC_IDS_KEY]) ? meta[RUBRIC_IDS_KEY] : [];
  const rows = [
    h("dt", {}, t("knew_state")),
    h("dd", { class: "knew-state", dataset: { state } }, t(`state_${state}`)),
    h("dt", {}, t("knew_items")),
    h("dd", { class: "knew-rubric-ids" }, idList(rubricIds)),
  ];
  // Every other list of ids, whatever section put it there: the apps that
  // add sections add keys, and the page shows them without knowing them.
  for (const [key, value] of Object.entries(meta)) {
    if (key === RUBRIC_IDS_KEY || !key.endsWith("_ids") || !Array.isArray(value)) continue;
    rows.push(
      h("dt", {}, `${idsLabel(key)} (${value.length})`),
      h("dd", { class: "knew-ids", dataset: { key, count: value.length } }, idList(value)),
    );
  }
  const left = omittedText(meta.omitted);
  if (left) rows.push(h("dt", {}, t("knew_omitted")), h("dd", { class: "knew-omitted" }, left));
  const summaryIds = rubricIds.length ? ` (${rubricIds.join(", ")})` : "";
  return h(
    "details",
    { class: "knew" },
    h("summary", {}, `${t("knew_summary")}: ${t(`state_${state}`)}${summaryIds}`),
    h("dl", { class: "facts" }, rows),
  );
}

export function messageNode(message) {
  const mine = message.role === "user";
  return h(
    "article",
    {
      class: `message ${mine ? "from-user" : "from-tutor"}`,
      dataset: { role: message.role, id: message.id },
    },
    h("p", { class: "who" }, mine ? t("you") : t("tutor")),
    h("div", { class: "content" }, message.content),
    mine ? null : knewPanel(message.context_meta),
  );
}

export function renderMessages(log, messages) {
  log.replaceChildren(...messages.map(messageNode));
  if (!messages.length) log.append(h("p", { class: "muted empty" }, t("chat_empty")));
  log.scrollTop = log.scrollHeight;
}
