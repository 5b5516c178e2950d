// "What the tutor remembers about me" (issue 36 item 5): the student's own
// memory as GET /api/memory/ lists it -- preferences and corrections kept for
// this conversation or for every one, and the course facts they stated --
// each session or user item with a Forget button (DELETE /api/memory/{id}/).
// Course facts are read-only here: course staff decide them. The list is read
// from the API each time the panel opens or an item is forgotten.

import { api, apiAll, ApiError } from "./api.js";
import { clear, formatTime, h, show } from "./dom.js";
import { locale, t } from "./i18n.js";

const $ = (id) => document.getElementById(id);

let items = null; // the last list read, kept for a language switch
let onForgotten = () => {};

function whereText(item) {
  if (item.tier === "system") return t("memory_where_system");
  if (item.tier === "session") {
    return item.expires_at
      ? t("memory_where_session_until", { time: formatTime(item.expires_at, locale()) })
      : t("memory_where_session");
  }
  return t("memory_where_user");
}

function itemNode(item) {
  const forget =
    item.tier === "system"
      ? h("p", { class: "hint" }, t("memory_staff_decide"))
      : h(
          "button",
          {
            type: "button",
            class: "forget-button",
            "aria-label": t("memory_forget_label", { text: item.content }),
            onclick: (event) => forgetItem(item, event.currentTarget),
          },
          t("memory_forget"),
        );
  return h(
    "li",
    { class: "memory-item", dataset: { id: item.id, tier: item.tier, kind: item.kind } },
    h("p", { class: "memory-content" }, item.content),
    h("p", { class: "meta" }, `${t(`memory_kind_${item.kind}`)} · ${whereText(item)}`),
    forget,
  );
}

function render() {
  const list = clear($("memory-list"));
  if (items === null) return;
  if (!items.length) {
    list.append(h("li", { class: "muted empty" }, t("memory_empty")));
    return;
  }
  list.append(...items.map(itemNode));
}

async function load() {
  const list = $("memory-list");
  list.setAttribute("aria-busy", "true");
  show($("memory-error"), "");
  try {
    items = await apiAll("/api/memory/?page_size=200");
    render();
  } catch (error) {
    show($("memory-error"), t("generic_error", { detail: error.detail || error.message }));
  } finally {
    list.setAttribute("aria-busy", "false");
  }
}

async function forgetItem(item, button) {
  button.disabled = true;
  try {
    await api("DELETE", `/api/memory/${item.id}/`);
  } catch (error) {
    // Already gone (forgotten elsewhere, or expired): the list is read again below.
    if (!(error instanceof ApiError && error.status === 404)) {
      button.disabled = false;
      show($("memory-error"), t("generic_error", { detail: error.detail || error.message }));
      return;
    }
  }
  $("memory-status").textContent = t("memory_forgotten", { text: item.content });
  await load();
  $("memory-heading").focus();
  onForgotten(item);
}

export async function openMemory() {
  const panel = $("memory");
  panel.hidden = false;
  $("memory-open").setAttribute("aria-expanded", "true");
  $("memory-status").textContent = "";
  await load();
  panel.scrollIntoView({ block: "start" });
  $("memory-heading").focus();
}

export function closeMemory() {
  $("memory").hidden = true;
  $("memory-open").setAttribute("aria-expanded", "false");
  $("memory-open").focus();
}

export function renderMemory() {
  if (!$("memory").hidden) render();
}

// `forgotten(item)`: called after an item is forgotten (the page reads
// "what the tutor knew" again: the forgotten text is gone from it).
export function setUpMemory(forgotten) {
  onForgotten = forgotten;
  $("memory-open").addEventListener("click", () => ($("memory").hidden ? openMemory() : closeMemory()));
  $("memory-close").addEventListener("click", closeMemory);
}
