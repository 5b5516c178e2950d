// The AI notice (SPEC §13): shown once per course -- until the student
// acknowledges the current version -- and again on demand ("About the AI
// tutor"). What it says comes from GET /api/courses/{id}/ai-notice/; the
// acknowledgement is a POST of the version read.

import { api, ApiError } from "./api.js";
import { clear, h, show } from "./dom.js";
import { has, t } from "./i18n.js";

const $ = (id) => document.getElementById(id);

let current = null; // { me, courseId, notice }

function enrollment(me, courseId) {
  return me.enrollments.find((e) => e.course === courseId) || null;
}

export function noticeAcknowledged(me, courseId) {
  const mine = enrollment(me, courseId);
  return Boolean(mine && mine.ai_notice_acknowledged === me.ai_notice_version);
}

function retentionLine(item) {
  const kind = t(`retention_${item.kind}`);
  return item.days ? t("notice_kept_days", { kind, days: item.days }) : t("notice_kept_always", { kind });
}

function render(notice, acknowledged, focus) {
  const panel = $("ai-notice");
  const body = clear($("ai-notice-body"));
  if (notice.model_configured) {
    body.append(
      h("p", {}, t("notice_ai_system")),
      h("p", {}, t("notice_provider", { provider: notice.provider, model: notice.model })),
      h("h3", {}, t("notice_sent_title")),
      h("ul", {}, ...notice.sent.map((line, i) => h("li", {}, has(`notice_sent_${i}`) ? t(`notice_sent_${i}`) : line))),
      h("p", {}, t("notice_redaction")),
      h("p", {}, t("notice_not_sent")),
    );
  } else {
    body.append(h("p", {}, t("notice_ai_system")), h("p", {}, t("notice_offline")));
  }
  body.append(
    h("h3", {}, t("notice_kept_title")),
    h("ul", {}, ...notice.retention.map((item) => h("li", {}, retentionLine(item)))),
  );
  $("ai-notice-version").textContent = t("notice_version", { version: notice.version });
  $("ai-notice-ack").hidden = acknowledged;
  $("ai-notice-close").hidden = !acknowledged;
  show($("ai-notice-error"), "");
  panel.hidden = false;
  // Shown by itself on opening a course it does not take the focus; asked for, it does.
  if (focus) $("ai-notice-heading").focus();
}

export async function openNotice(me, courseId, { force = false } = {}) {
  if (!force && noticeAcknowledged(me, courseId)) return;
  const notice = await api("GET", `/api/courses/${courseId}/ai-notice/`);
  current = { me, courseId, notice };
  render(notice, noticeAcknowledged(me, courseId) && notice.acknowledged_version === notice.version, force);
}

export function closeNotice() {
  $("ai-notice").hidden = true;
  current = null;
}

// A 409 ai_notice_required from the tutor: the course asks for the notice first.
export function isNoticeRequired(error) {
  return error instanceof ApiError && error.status === 409 && error.errors.some((e) => e.code === "ai_notice_required");
}

export function setUpNotice(onAcknowledged) {
  $("ai-notice-ack").addEventListener("click", async () => {
    if (!current) return;
    const { me, courseId, notice } = current;
    try {
      await api("POST", `/api/courses/${courseId}/ai-notice/`, { version: notice.version });
    } catch (error) {
      show($("ai-notice-error"), error instanceof ApiError ? error.detail : String(error));
      return;
    }
    const mine = enrollment(me, courseId);
    if (mine) mine.ai_notice_acknowledged = notice.version;
    closeNotice();
    if (onAcknowledged) onAcknowledged();
  });
  $("ai-notice-close").addEventListener("click", closeNotice);
}
