"""The redaction evaluation (SPEC §14): each vector placed bare, keyed and
inside a report line, in English and Chinese; recall per family and
context, partial leaks, false positives on near misses; ours and
detect-secrets alone; the held-out fifth apart.

A secret is caught when no run of 8 of its characters is left in the
redacted text; left whole it is missed, in part it is partial.
"""

from __future__ import annotations

import hashlib
import json
import math
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).parent
PARTIAL_RUN = 8
HELD_OUT_SHARE = 5  # one vector in five is held out: never looked at while tuning

# Goals (SPEC §14).
RECALL_OVERALL = 0.97
RECALL_EACH = 0.95
FALSE_POSITIVES_MAX = 0.05

TEMPLATES = {
    ("keyed", "en"): [
        "OPENAI_API_KEY={s}", 'api_key: "{s}"', '{{"token": "{s}"}}', "export SERVICE_TOKEN={s}",
        "client_secret = '{s}'", "password={s}", "access_token: {s}", "DB_PASSWORD: {s}",
    ],
    ("keyed", "zh"): [
        "我的密钥是 {s}", "令牌：{s}", "配置里写的是 API_KEY={s}", "数据库密码：{s}", "token 是 {s}",
    ],
    ("bare", "en"): [
        "I pasted {s} into the settings page and it still fails.", "here it is: {s}", "{s}",
        "Can you check {s} for me?", "the value {s} was rejected by the server",
    ],
    ("bare", "zh"): [
        "我把 {s} 填进去了，还是报错。", "这个是{s}吗？", "帮我看看{s}", "老师，{s} 这个为什么不行",
    ],
    ("report", "en"): [
        'curl -H "X-Api-Key: {s}" https://api.example.com/v1/me',
        "2024-05-01T12:00:03Z [deploy] uploading with {s} ... failed (401)",
        'client = Client("{s}")', "Error: request failed for credential {s} (status 403)",
        "| staging | {s} | rotated last week |",
    ],
    ("report", "zh"): [
        "构建日志：第 42 行 使用 {s} 上传失败", '报告：运行 client = Client("{s}") 时出错',
        "部署记录｜凭据 {s}｜已失效", "错误信息：认证失败，凭据 {s} 无效",
    ],
}  # fmt: skip
CONTEXTS = ("bare", "keyed", "report")
LANGUAGES = ("en", "zh")


def _pick(key: tuple[str, str], secret: str) -> str:
    options = TEMPLATES[key]
    index = int(hashlib.sha256((secret + key[0] + key[1]).encode()).hexdigest(), 16) % len(options)
    return options[index].replace("{s}", secret).replace("{{", "{").replace("}}", "}")


def _entropy(text: str) -> float:
    return -sum(text.count(c) / len(text) * math.log2(text.count(c) / len(text)) for c in set(text))


def tellable_alone(secret: str) -> bool:
    """A value a reader could tell from ordinary text without its name: 16
    characters or more, not a number or a UUID, and not low in entropy. A
    16-digit Asana id or an 8-character password is placed keyed only."""
    core = secret.strip()
    if "PRIVATE KEY" in core:
        return True
    uuid_like = len(core) == 36 and core.count("-") == 4
    return len(core) >= 16 and not core.isdigit() and not uuid_like and _entropy(core) >= 3.0


@dataclass
class Placement:
    vector: dict
    context: str
    language: str
    text: str


@dataclass
class Tally:
    caught: int = 0
    partial: int = 0
    total: int = 0
    misses: list = field(default_factory=list)

    @property
    def recall(self) -> float:
        return self.caught / self.total if self.total else 1.0


def load_vectors() -> tuple[dict, list[dict]]:
    lines = (HERE / "vectors.jsonl").read_text(encoding="utf-8").splitlines()
    header = json.loads(lines[0])
    return header, [json.loads(line) for line in lines[1:]]


def load_near_misses() -> list[dict]:
    lines = (HERE / "near_misses.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines]


def held_out(vector: dict) -> bool:
    return int(vector["id"], 16) % HELD_OUT_SHARE == 0


def placements(vectors: list[dict]) -> list[Placement]:
    out = []
    for vector in vectors:
        contexts = CONTEXTS if tellable_alone(vector["secret"]) else ("keyed",)
        for context in contexts:
            for language in LANGUAGES:
                text = _pick((context, language), vector["secret"])
                out.append(Placement(vector, context, language, text))
    return out


def outcome(secret: str, redacted: str, around: str = "") -> str:
    """``around`` is the text the secret was placed in, without it: a run
    that stands there too ("https://" of a webhook in a curl line) is no leak."""
    if secret in redacted:
        return "missed"
    runs = (secret[i : i + PARTIAL_RUN] for i in range(max(1, len(secret) - PARTIAL_RUN + 1)))
    if any(run in redacted and run not in around for run in runs):
        return "partial"
    return "caught"


@dataclass
class Report:
    name: str
    by: dict = field(default_factory=lambda: defaultdict(Tally))
    false_positives: int = 0
    near_misses: int = 0
    fp_by_family: dict = field(default_factory=lambda: defaultdict(lambda: [0, 0]))
    fp_examples: list = field(default_factory=list)
    seconds: float = 0.0

    @property
    def overall(self) -> Tally:
        return self.by[("all", "all")]

    @property
    def fp_rate(self) -> float:
        return self.false_positives / self.near_misses if self.near_misses else 0.0


def evaluate(name: str, redact: Callable[[str], str], cases: list[Placement], near: list[dict]) -> Report:
    report = Report(name)
    started = time.perf_counter()
    for case in cases:
        around = case.text.replace(case.vector["secret"], " ")
        result = outcome(case.vector["secret"], redact(case.text), around)
        keys = [("all", "all"), ("source", case.vector["source"]), ("context", case.context),
                ("language", case.language), ("context", f"{case.context}/{case.language}")]  # fmt: skip
        for key in keys:
            tally = report.by[key]
            tally.total += 1
            tally.caught += result == "caught"
            tally.partial += result == "partial"
            if result != "caught" and key == ("all", "all"):
                tally.misses.append((result, case.vector["source"], case.vector["rule"], case.text))
    for row in near:
        changed = redact(row["text"]) != row["text"]
        report.near_misses += 1
        report.false_positives += changed
        report.fp_by_family[row["family"]][0] += changed
        report.fp_by_family[row["family"]][1] += 1
        if changed:
            report.fp_examples.append((row["family"], row["text"], redact(row["text"])))
    report.seconds = time.perf_counter() - started
    return report


def failures(report: Report) -> list[str]:
    """What keeps ``report`` below the goals, one line each."""
    out = []
    if report.overall.recall < RECALL_OVERALL:
        out.append(f"recall {report.overall.recall:.1%} < {RECALL_OVERALL:.0%} overall")
    for (axis, value), tally in sorted(report.by.items()):
        if axis in ("source", "context", "language") and tally.recall < RECALL_EACH:
            out.append(f"recall {tally.recall:.1%} < {RECALL_EACH:.0%} for {axis} {value}")
    if report.overall.partial:
        out.append(f"{report.overall.partial} secrets left partly")
    if report.fp_rate > FALSE_POSITIVES_MAX:
        out.append(f"false positives {report.fp_rate:.1%} > {FALSE_POSITIVES_MAX:.0%} on near misses")
    return out


def detect_secrets_alone() -> Callable[[str], str]:
    """detect-secrets 1.5 alone, as a scan of a text file runs it: every
    plugin's ``analyze_line`` under the default settings (no eager search,
    no verification); each value it reports is removed from the text."""
    from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class

    plugins = [cls() for cls in get_mapping_from_secret_type_to_class().values()]

    def redact(text: str) -> str:
        values = set()
        for number, line in enumerate(text.split("\n"), 1):
            for plugin in plugins:
                for secret in plugin.analyze_line(filename="message.txt", line=line, line_number=number):
                    if secret.secret_value:
                        values.add(secret.secret_value)
        for value in sorted(values, key=len, reverse=True):
            text = text.replace(value, "[REDACTED]")
        return text

    return redact
