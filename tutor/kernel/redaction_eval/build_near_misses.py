"""Build ``near_misses.jsonl``: text a software course must be able to
discuss that holds no secret -- hashes in the contexts that explain them,
base64 of readable test data, long identifiers, placeholders and questions
about keys -- in English and Chinese.

    python tutor/kernel/redaction_eval/build_near_misses.py

Deterministic (hashes are computed from fixed words); rerun after editing.
"""

from __future__ import annotations

import base64
import hashlib
import json
import random
from pathlib import Path

OUT = Path(__file__).with_name("near_misses.jsonl")
WORDS = [
    "first", "array", "undefined", "hello", "world", "report", "lesson", "rubric", "tutor", "commit",
    "branch", "merge", "docker", "python", "student", "review", "course", "redis", "postgres", "celery",
]  # fmt: skip


def digests(rng: random.Random) -> dict[str, str]:
    word = " ".join(rng.sample(WORDS, 3)).encode()
    return {
        "md5": hashlib.md5(word).hexdigest(),
        "sha1": hashlib.sha1(word).hexdigest(),
        "sha256": hashlib.sha256(word).hexdigest(),
        "sha512": hashlib.sha512(word).hexdigest(),
        "b64sha512": base64.b64encode(hashlib.sha512(word).digest()).decode(),
        "b64sha256": base64.b64encode(hashlib.sha256(word).digest()).decode(),
    }


def commit_shas(d: dict, short: str) -> list[tuple[str, str]]:
    sha = d["sha1"]
    return [
        ("commit_sha", f"commit {sha}\nAuthor: Li Wei\nDate:   Mon May 6 10:12:03 2024 +0800"),
        ("commit_sha", f"git checkout {sha} and the tests pass again"),
        ("commit_sha", f"HEAD is now at {sha[:7]} fix first() on empty arrays"),
        ("commit_sha", f"{sha} (HEAD -> main, origin/main) Fix first() on empty arrays"),
        ("commit_sha", f"{sha} refs/heads/main"),
        ("commit_sha", f"The CI ran on sha {sha} but my fix is in the next commit."),
        ("commit_sha", f"git revert {sha}"),
        ("commit_sha", f"See https://github.com/org/repo/commit/{sha} for the change."),
        ("commit_sha", f"head_sha: {sha}"),
        ("commit_sha", f"我在提交 {sha} 里修好了这个问题。"),
        ("commit_sha", f"CI 用的是 commit {sha}，但我的修改在后面。"),
        ("commit_sha", f"$ git rev-parse HEAD\n{sha}"),
        ("commit_sha", f"Merge: {sha[:7]} {short[:7]}\ncommit {short}"),
        ("commit_sha", f"cherry-pick {sha} onto the release branch failed"),
    ]


def lockfiles(d: dict) -> list[tuple[str, str]]:
    return [
        ("lockfile", f'"integrity": "sha512-{d["b64sha512"]}",'),
        ("lockfile", f"  integrity sha512-{d['b64sha512']}"),
        ("lockfile", f'  resolved "https://registry.yarnpkg.com/first/-/first-1.0.0.tgz#{d["sha1"]}"'),
        ("lockfile", f'{{file = "first-1.0.0-py3-none-any.whl", hash = "sha256:{d["sha256"]}"}},'),
        ("lockfile", f'checksum = "{d["sha256"]}"'),
        ("lockfile", f"first==1.0.0 --hash=sha256:{d['sha256']}"),
        ("lockfile", f"    --hash=sha256:{d['sha256']} \\"),
        ("go_sum", f"github.com/stretchr/testify v1.8.4 h1:{d['b64sha256']}"),
        ("go_sum", f"golang.org/x/text v0.14.0/go.mod h1:{d['b64sha256']}"),
        ("lockfile", f'"shasum": "{d["sha1"]}",'),
        ("lockfile", f'      "sha256": "{d["sha256"]}"'),
        ("lockfile", f"package-lock.json 里 first 的 integrity 是 sha512-{d['b64sha512']}"),
    ]


def images(d: dict) -> list[tuple[str, str]]:
    return [
        ("image_digest", f"FROM python:3.11-slim@sha256:{d['sha256']}"),
        ("image_digest", f"docker pull nginx@sha256:{d['sha256']}"),
        ("image_digest", f"Digest: sha256:{d['sha256']}"),
        ("image_digest", f"image: ghcr.io/org/tutor@sha256:{d['sha256']}"),
        ("image_digest", f'"Id": "sha256:{d["sha256"]}",'),
        ("image_digest", f"镜像摘要 sha256:{d['sha256']}"),
    ]


def hashing(d: dict, word: str) -> list[tuple[str, str]]:
    return [
        ("hash_output", f"md5('{word}') = {d['md5']}"),
        ("hash_output", f"The SHA-256 of my file is {d['sha256']}."),
        ("hash_output", f">>> hashlib.sha256(b\"{word}\").hexdigest()\n'{d['sha256']}'"),
        ("hash_output", f"$ sha256sum report.md\n{d['sha256']}  report.md"),
        ("hash_output", f"$ echo -n {word} | md5sum\n{d['md5']}  -"),
        ("hash_output", f"MD5 (report.md) = {d['md5']}"),
        ("hash_output", f"我算出来的 md5 是 {d['md5']}，和老师给的不一样。"),
        ("hash_output", f"sha1 哈希值：{d['sha1']}"),
        ("hash_output", f"expected checksum {d['sha256']} but got {d['sha1']}"),
        ("hash_output", f"SHA512: {d['sha512']}"),
    ]


def base64_data(text: str) -> list[tuple[str, str]]:
    encoded = base64.b64encode(text.encode()).decode()
    return [
        ("base64_data", f'assert base64.b64encode(b"{text}") == b"{encoded}"'),
        ("base64_data", f"echo {encoded} | base64 -d"),
        ("base64_data", f'test_data = "{encoded}"'),
        ("base64_data", f"解码 {encoded} 得到的是一句话。"),
    ]


IDENTIFIERS = [
    "AbstractSingletonProxyFactoryBean", "test_submission_create_stores_redacted_evidence",
    "com.example.project.service.impl.UserServiceImplementation", "ERR_OSSL_EVP_UNSUPPORTED",
    "TestRedactionKeepsCommitShaInGitLog", "node_modules/@babel/plugin-transform-runtime",
    "550e8400-e29b-41d4-a716-446655440000", "src/components/UserProfileSettingsPanel.tsx",
    "python3.11-dev libpq-dev build-essential", "handleSubmissionCreatedWithCachedReview",
    "tutor-web-7d9f8c6b5-x2k4p", "DATA_UPLOAD_MAX_MEMORY_SIZE", "getElementsByClassName",
    "io.github.resilience4j.circuitbreaker", "feedback/migrations/0003_sweep_and_cache_indexes.py",
    "kotlinx-coroutines-core-jvm-1.7.3", "MAX_TOKENS_PER_REQUEST_2048", "useInfiniteScrollPagination",
    "spring-boot-starter-data-jpa-3.2.0", "jdbc:postgresql://localhost:5432/tutor_test",
    "Illuminate\\Foundation\\Http\\Middleware", "x86_64-unknown-linux-gnu", "i18n_zh_CN_messages",
    "test_late_old_attempt_does_not_override_newer", "S3ObjectStorageBackendConfiguration",
]  # fmt: skip

QUESTIONS = [
    "Is my API key still valid? The server keeps answering 401.",
    "my api key 是不是过期了？",
    "我的 api key 是什么格式的？",
    "How do I rotate my GitHub token after I pushed it by mistake?",
    "What does 'invalid api key' mean?",
    "密码是什么意思？为什么要加密？",
    "The token is expired, what should I do?",
    "Where do I put OPENAI_API_KEY so the tests can read it?",
    "password: required (the form says so, but I typed one)",
    "my password is too short? it has 6 characters",
    "Should the secret key be in settings.py or in an environment variable?",
    "为什么我的密钥无效？",
    "我的密码是对的吗？",
    "Does the access token expire after an hour?",
    "API_KEY=${API_KEY} in the compose file is not expanded",
    "token: ${{ secrets.GITHUB_TOKEN }}",
    "password=<your-password>",
    "OPENAI_API_KEY=your-api-key-here",
    "SECRET_KEY = os.environ['SECRET_KEY']",
    "api_key = os.getenv('OPENAI_API_KEY')",
    "const key = process.env.STRIPE_KEY;",
    "密钥是空的，怎么办？",
    "How long should a password be? Is 12 characters enough?",
    "the api key is invalid, and the passphrase is wrong",
    "Can the tutor see my password if I paste it here?",
    "我把 token 放在 .env 里了，这样安全吗？",
    "Why does pass: 12/12 show in the CI log but the job fails?",
    "--- PASS: TestFirstReturnsUndefined (0.00s)",
    "Which key do I use, the publishable one or the secret one?",
    "登录口令 错误，请重试",
]


def main() -> int:
    rng = random.Random(20240501)
    rows: list[tuple[str, str]] = []
    for i in range(12):
        d, other = digests(rng), digests(rng)
        rows += commit_shas(d, other["sha1"]) + lockfiles(d) + images(d) + hashing(d, WORDS[i])
    for text in ["hello world", "The quick brown fox jumps over the lazy dog", "first() returns undefined on []",
                 "student report for task one", "你好，世界", "Redis and Postgres are running"]:  # fmt: skip
        rows += base64_data(text)
    rows += [("identifier", f"The failing test is {name}, see the log.") for name in IDENTIFIERS]
    rows += [("identifier", f"报错出现在 {name} 里面。") for name in IDENTIFIERS[:12]]
    rows += [("question", text) for text in QUESTIONS]
    with OUT.open("w", encoding="utf-8") as fh:
        for family, text in rows:
            fh.write(json.dumps({"family": family, "text": text}, ensure_ascii=False) + "\n")
    print(f"{len(rows)} near misses -> {OUT}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
