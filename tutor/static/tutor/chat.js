// The conversation: rebuilt from GET /api/tutor/sessions/{id}/messages/ on
// every load, never from a copy kept in the page. Each assistant message
// shows "what the tutor knew": the context_meta of the request that produced
// it (feedback state, the rubric ids included, and whatever facts,
// preferences, memories, process rules and lessons it was given -- as their
// texts where the API gives them, `context_texts`, else as ids). A user
// message read as a correction says what became of it (`correction`).

import { h } from "./dom.js";
import { has, t } from "./i18n.js";

const RUBRIC_IDS_KEY = "feedback_rubric_ids";
// Keys whose items the student may read as text; without one the item was
// forgotten (or has expired) since. Lessons stay ids.
const TEXT_KEYS = new Set(["fact_ids", "preference_ids", "memory_ids", "process_rule_ids"]);

function idList(ids) {
  if (!ids.length) return h("span", { class: "muted" }, t("knew_none"));
  return h(
    "span",
    { class: "id-list" },
    ids.map((id) => h("code", {}, String(id))),
  );
}

function textList(ids, texts) {
  if (!ids.length) return h("span", { class: "muted" }, t("knew_none"));
  return h(
    "ul",
    { class: "knew-texts" },
    ids.map((id) =>
      id in texts
        ? h("li", { dataset: { id } }, texts[id])
        : h("li", { class: "muted", dataset: { id, gone: "" } }, t("knew_gone")),
    ),
  );
}

// What the page says of a correction's outcome (corrections.selectors.Outcome).
export function correctionText(outcome) {
  if (!outcome) return "";
  const { status, type, tier, tiers = [] } = outcome;
  if (status === "saved") {
    if (type === "preference") return t("ack_saved_preference");
    return tier === "session" ? t("ack_saved_session") : t("ack_saved_user");
  }
  if (status === "sent_to_staff") {
    if (type === "process") return t("ack_sent_to_staff_process");
    return tiers.includes("user") ? `${t("ack_sent_to_staff")} ${t("ack_meanwhile")}` : t("ack_sent_to_staff");
  }
  const key = `ack_${status}`;
  return has(key) ? t(key) : "";
}

function correctionNode(outcome) {
  const text = correctionText(outcome);
  if (!text) return null;
  return h("p", { class: "correction-ack", dataset: { status: outcome.status, type: outcome.type || "" } }, text);
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

export function knewPanel(meta, texts) {
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
      h(
        "dd",
        { class: "knew-ids", dataset: { key, count: value.length } },
        texts && TEXT_KEYS.has(key) ? textList(value.map(String), texts) : idList(value),
      ),
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
    mine ? correctionNode(message.correction) : knewPanel(message.context_meta, message.context_texts),
  );
}

export function renderMessages(log, messages) {
  log.replaceChildren(...messages.map(messageNode));
  if (!messages.length) log.append(h("p", { class: "muted empty" }, t("chat_empty")));
  log.scrollTop = log.scrollHeight;
}
