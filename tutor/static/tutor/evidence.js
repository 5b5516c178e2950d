// The evidence form: report text, files read from disk, and the CI result
// as the student reports it (SPEC §2 evidence; stored with ci_source
// "student", so the review's basis is self_report).

import { h, clear, show } from "./dom.js";
import { t } from "./i18n.js";

// The server's limits (SPEC §2), checked here first so a student learns of
// them before uploading; the server still decides (413).
const MAX_FILE_BYTES = 256 * 1024;
const MAX_FILES = 200;
const MAX_EVIDENCE_BYTES = 1024 * 1024;

export class EvidenceForm {
  constructor(root) {
    this.root = root;
    this.files = []; // [{path, text, name}]
    this.input = root.querySelector("#file-input");
    this.list = root.querySelector("#file-list");
    this.error = root.querySelector("#evidence-error");
    this.input.addEventListener("change", () => this.addFiles([...this.input.files]));
  }

  async addFiles(fileObjects) {
    show(this.error, "");
    const problems = [];
    for (const file of fileObjects) {
      if (this.files.length >= MAX_FILES) {
        problems.push(t("too_many_files"));
        break;
      }
      if (file.size > MAX_FILE_BYTES) {
        problems.push(t("file_too_big", { name: file.name }));
        continue;
      }
      let text;
      try {
        text = new TextDecoder("utf-8", { fatal: true }).decode(await file.arrayBuffer());
      } catch {
        problems.push(t("file_not_text", { name: file.name }));
        continue;
      }
      if (text.includes("\u0000")) {
        problems.push(t("file_not_text", { name: file.name }));
        continue;
      }
      const path = file.webkitRelativePath || file.name;
      const existing = this.files.find((f) => f.path === path);
      if (existing) existing.text = text;
      else this.files.push({ path, text, name: file.name });
    }
    // The same file may be added again after an edit on disk.
    this.input.value = "";
    this.renderFiles();
    if (problems.length) show(this.error, problems.join(" "));
  }

  renderFiles() {
    clear(this.list);
    this.files.forEach((file, i) => {
      const id = `file-path-${i}`;
      const pathInput = h("input", { id, value: file.path, class: "mono", spellcheck: "false" });
      pathInput.addEventListener("input", () => {
        file.path = pathInput.value;
      });
      this.list.append(
        h(
          "li",
          {},
          h("label", { for: id }, t("file_path_label", { name: file.name })),
          h(
            "div",
            { class: "row" },
            pathInput,
            h("span", { class: "hint" }, `${new Blob([file.text]).size} B`),
            h(
              "button",
              {
                type: "button",
                "aria-label": t("remove_file", { name: file.name }),
                onclick: () => {
                  this.files.splice(i, 1);
                  this.renderFiles();
                  this.input.focus();
                },
              },
              "×",
            ),
          ),
        ),
      );
    });
  }

  value() {
    const v = (id) => this.root.querySelector(id).value;
    const evidence = { report: v("#report"), files: {} };
    for (const file of this.files) if (file.path.trim()) evidence.files[file.path.trim()] = file.text;
    const status = v("#ci-status");
    if (status) {
      const code = v("#ci-exit-code");
      evidence.ci = { status, exit_code: code === "" ? null : Number(code), log_tail: v("#ci-log-tail") };
    }
    if (v("#head-sha").trim()) evidence.head_sha = v("#head-sha").trim();
    if (v("#repo-url").trim()) evidence.repo_url = v("#repo-url").trim();
    return evidence;
  }

  // The confirmation an empty submission needs (an i18n key), or null.
  emptiness() {
    const evidence = this.value();
    if (evidence.report.trim()) return null;
    if (!Object.keys(evidence.files).length && !evidence.ci) return "empty_submission_confirm";
    return "report_missing_confirm";
  }

  // The request body, or null (with the reason shown) when it is over a limit.
  body(taskId) {
    const body = JSON.stringify({ task: taskId, evidence: this.value() });
    if (new Blob([body]).size > MAX_EVIDENCE_BYTES) {
      show(this.error, t("evidence_too_big"));
      return null;
    }
    return body;
  }

  showError(text) {
    show(this.error, text);
  }
}
