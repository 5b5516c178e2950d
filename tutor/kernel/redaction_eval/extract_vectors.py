"""Build ``vectors.jsonl`` from checkouts of the three secret scanners.

    python tutor/kernel/redaction_eval/extract_vectors.py GITLEAKS TRUFFLEHOG DETECT_SECRETS

Run by hand when the vectors are refreshed. Details: docs/architecture.md, Redaction.
"""

from __future__ import annotations

import ast
import hashlib
import json
import random
import re
import warnings

with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    import sre_constants
    import sre_parse
import subprocess
import sys
import tomllib
from pathlib import Path

OUT = Path(__file__).with_name("vectors.jsonl")
SEED = 20240501
SAMPLES_PER_RULE = 3
PER_DETECTOR = 3
MIN_CHARS = 8

# gitleaks rules whose regex describes a context (a whole curl command, a
# YAML document, a file name), not a value: their literal vectors still count.
CONTEXT_RULES = {
    "generic-api-key", "curl-auth-header", "curl-auth-user", "kubernetes-secret-yaml", "pkcs12-file",
    "nuget-config-password", "private-key", "jwt-base64", "sidekiq-secret", "freemius-secret-key",
    "hashicorp-tf-password", "aws-amazon-bedrock-api-key-short-lived",
}  # fmt: skip


def git_show(repo: Path, path: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), "show", f"HEAD:{path}"], capture_output=True, text=True, check=True
    ).stdout


def git_files(repo: Path, under: str) -> list[str]:
    out = subprocess.run(
        ["git", "-C", str(repo), "ls-tree", "-r", "--name-only", "HEAD", under],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return out.split()


def head(repo: Path) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True, text=True
    ).stdout.strip()


# --- Go regular expressions as Python reads them ---------------------------------------------


def go_to_python(pattern: str) -> str:
    pattern = pattern.replace("[[:alnum:]]", "[A-Za-z0-9]").replace("\\z", "\\Z")
    pattern = re.sub(r"\(\?-i:([^()]*)\)", r"(?:\1)", pattern)
    pattern = re.sub(r"\(\?P<", "(?P<", pattern)
    if pattern.startswith("(?i)"):
        body, flag = pattern[4:], True
    else:
        body, flag = pattern, False
    if "(?i)" in body:  # a flag in the middle: case-insensitive from there on
        body, flag = body.replace("(?i)", ""), True
    return ("(?i)" if flag else "") + body


def sample(pattern: str, rng: random.Random) -> str:
    def emit(items) -> str:
        out = []
        for op, arg in items:
            if op is sre_constants.LITERAL:
                out.append(chr(arg))
            elif op is sre_constants.NOT_LITERAL:
                out.append("x" if arg != ord("x") else "y")
            elif op is sre_constants.ANY:
                out.append(".")  # an unescaped dot in a rule stands for one
            elif op is sre_constants.IN:
                out.append(rng.choice(charset(arg)))
            elif op in (sre_constants.MAX_REPEAT, sre_constants.MIN_REPEAT):
                low, high, sub = arg
                high = min(high, low + 8) if high == sre_constants.MAXREPEAT else high
                out.extend(emit(sub) for _ in range(rng.randint(low, high)))
            elif op is sre_constants.SUBPATTERN:
                out.append(emit(arg[-1]))
            elif op is sre_constants.BRANCH:
                out.append(emit(rng.choice(arg[1])))
            elif op in (sre_constants.AT, sre_constants.ASSERT, sre_constants.ASSERT_NOT):
                continue
            else:
                raise ValueError(f"cannot sample {op}")
        return "".join(out)

    def charset(items) -> str:
        chars: list[str] = []
        negate = False
        for op, arg in items:
            if op is sre_constants.NEGATE:
                negate = True
            elif op is sre_constants.LITERAL:
                chars.append(chr(arg))
            elif op is sre_constants.RANGE:
                chars.extend(chr(c) for c in range(arg[0], arg[1] + 1))
            elif op is sre_constants.CATEGORY:
                chars.extend(
                    {
                        sre_constants.CATEGORY_DIGIT: "0123456789",
                        sre_constants.CATEGORY_WORD: "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_",
                        sre_constants.CATEGORY_SPACE: " ",
                    }.get(arg, "a")
                )
        if negate:
            pool = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
            return "".join(c for c in pool if c not in chars) or "a"
        return "".join(chars) or "a"

    return emit(sre_parse.parse(pattern))


def secret_part(pattern: str) -> str:
    """The first capturing group of a rule's regex (its secret), else all of it."""
    parsed = sre_parse.parse(pattern)

    def find(items):
        for op, arg in items:
            if op is sre_constants.SUBPATTERN and arg[0] is not None:
                return True
            if op is sre_constants.SUBPATTERN and find(arg[-1]):
                return True
        return False

    if not find(parsed):
        return pattern
    # the text between the first "(" that opens a capturing group and its match
    depth, start = 0, None
    i = 0
    while i < len(pattern):
        c = pattern[i]
        if c == "\\":
            i += 2
            continue
        if c == "[":
            j = i + 1
            while j < len(pattern) and pattern[j] != "]" or j == i + 1:
                j += 2 if pattern[j] == "\\" else 1
            i = j + 1
            continue
        if c == "(":
            if start is None and not pattern.startswith("(?", i):
                start, depth = i, 0
            if start is not None:
                depth += 1
        elif c == ")" and start is not None:
            depth -= 1
            if depth == 0:
                return pattern[start + 1 : i]
        i += 1
    return pattern


def gitleaks(repo: Path, rng: random.Random) -> list[dict]:
    rules = tomllib.loads(git_show(repo, "config/gitleaks.toml"))["rules"]
    sources = {
        path: git_show(repo, path)
        for path in git_files(repo, "cmd/generate/config/rules")
        if path.endswith(".go")
    }
    literals = set()
    for text in sources.values():
        literals.update(m.group(1) for m in re.finditer(r"`([^`\n]{8,400})`", text))
        literals.update(go_literal(m) for m in GO_STRING.finditer(text) if 8 <= len(m.group(0)) <= 400)
    rows = []
    for rule in rules:
        rid, regex = rule["id"], rule.get("regex")
        if not regex:
            continue
        try:
            compiled = re.compile(go_to_python(regex))
        except re.error:
            continue
        found = set()
        for literal in sorted(literals):
            match = compiled.search(literal)
            if match:
                value = next((g for g in match.groups() if g), match.group(0))
                if len(value) >= MIN_CHARS and "XXXX" not in value:
                    found.add(value)
        for value in sorted(found)[:SAMPLES_PER_RULE]:
            rows.append(
                {
                    "source": "gitleaks",
                    "rule": rid,
                    "secret": value,
                    "origin": "cmd/generate/config/rules (literal)",
                }
            )
        if rid in CONTEXT_RULES:
            continue
        converted = go_to_python(regex)
        flags = converted.startswith("(?i)")
        part = secret_part(converted[4:] if flags else converted)
        for _ in range(SAMPLES_PER_RULE):
            try:
                value = sample(part, rng)
            except (ValueError, re.error, sre_constants.error):
                break
            if len(value) >= MIN_CHARS:
                rows.append(
                    {
                        "source": "gitleaks",
                        "rule": rid,
                        "secret": value,
                        "origin": "config/gitleaks.toml (sampled)",
                    }
                )
    return rows


GO_STRING = re.compile(r'`([^`]*)`|"((?:[^"\\\n]|\\.)*)"')


def go_literal(match: re.Match) -> str:
    if match.group(1) is not None:
        return match.group(1)
    try:
        return json.loads('"' + match.group(2) + '"')
    except json.JSONDecodeError:
        return match.group(2)


def trufflehog(repo: Path) -> list[dict]:
    rows = []
    files = [p for p in git_files(repo, "pkg/detectors") if p.endswith("_test.go") and "integration" not in p]
    for path in files:
        text = git_show(repo, path)
        constants = {}
        for m in re.finditer(r"(\w+)\s*:?=\s*(`[^`]*`|\"(?:[^\"\\\n]|\\.)*\")", text):
            constants[m.group(1)] = go_literal(GO_STRING.match(m.group(2)))
        strings = [go_literal(m) for m in GO_STRING.finditer(text)]
        taken = []
        for case in re.finditer(r"name:\s*\"([^\"]*)\"(.*?)want:\s*\[\]string\{([^}]*)\}", text, re.DOTALL):
            if "invalid" in case.group(1).lower() or "false" in case.group(1).lower():
                continue
            for item in re.finditer(r'`[^`]*`|"(?:[^"\\\n]|\\.)*"|\b[A-Za-z_]\w*\b', case.group(3)):
                token = item.group(0)
                value = go_literal(GO_STRING.match(token)) if token[0] in '`"' else constants.get(token)
                if not value or len(value) < MIN_CHARS or value in taken:
                    continue
                if any(value in s and s != value for s in strings) or value in constants.values():
                    taken.append(value)
        for value in taken[:PER_DETECTOR]:
            rule = path.split("/")[2]
            rows.append({"source": "trufflehog", "rule": rule, "secret": value, "origin": path})
    return rows


def detect_secrets(repo: Path) -> list[dict]:
    from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class

    plugins = [cls() for cls in get_mapping_from_secret_type_to_class().values()]
    rows = []
    for path in git_files(repo, "tests/plugins"):
        if not path.endswith("_test.py"):
            continue
        tree = ast.parse(git_show(repo, path))
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Tuple) and len(node.elts) >= 2):
                continue
            first, flag = node.elts[0], node.elts[-1]
            if not (isinstance(flag, ast.Constant) and flag.value is True):
                continue
            try:
                payload = ast.literal_eval(first)
            except ValueError:
                continue
            if not isinstance(payload, str):
                continue
            for plugin in plugins:
                for value in plugin.analyze_string(payload):
                    if isinstance(value, str) and len(value) >= MIN_CHARS:
                        rule = path.split("/")[-1].removesuffix("_test.py")
                        rows.append(
                            {"source": "detect-secrets", "rule": rule, "secret": value, "origin": path}
                        )
    return rows


_NOT_A_VALUE = re.compile(
    r"[\s\"'`<>|{}()$\\;]|(?i:x{4,})|\*{3}|%\w+%|^[a-z][a-z0-9+.\-]*://[\w.\-]+(?::\d+)?(?:/[A-Za-z_]*)?$"
    r"|^[a-z0-9.\-]+\.[a-z]{2,}(?::\d+)?$|^[A-Za-z.]+$"
)
_NAME_PREFIX = re.compile(r"^[A-Za-z_][A-Za-z_\-]*=(?=\S{8,}$)")
_USER_PREFIX = re.compile(r"^[A-Za-z][\w.\-]{0,30}:(?=\S{8,}$)(?!//)")


def cleaned(secret: str) -> str | None:
    """The vector as a value, or None: templated or garbled strings, bare
    endpoints and placeholders are no secret; ``user:password`` keeps the password."""
    secret = secret.strip()
    if "PRIVATE KEY" in secret:
        return secret
    secret = _USER_PREFIX.sub("", secret) if not secret.startswith(("http", "ftp")) else secret
    secret = _NAME_PREFIX.sub("", secret)
    userinfo = re.match(r"^\w+://[^:/@\s]*:([^@\s]+)@", secret)
    if userinfo:  # a URL's password is the secret; its user and host are not
        secret = userinfo.group(1)
    if _NOT_A_VALUE.search(secret) or len(secret) < MIN_CHARS:
        return None
    return secret


def main(argv: list[str]) -> int:
    if len(argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    gl, th, ds = (Path(a) for a in argv)
    rng = random.Random(SEED)
    rows = gitleaks(gl, rng) + trufflehog(th) + detect_secrets(ds)
    seen, out = set(), []
    for row in rows:
        secret = cleaned(row["secret"])
        if secret is None or secret in seen:
            continue
        seen.add(secret)
        row["secret"] = secret
        row["id"] = hashlib.sha256(f"{row['source']}:{row['rule']}:{secret}".encode()).hexdigest()[:12]
        out.append(row)
    commits = {"gitleaks": head(gl), "trufflehog": head(th), "detect-secrets": head(ds)}
    with OUT.open("w", encoding="utf-8") as fh:
        fh.write(json.dumps({"commits": commits}) + "\n")
        for row in out:
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")
    print(f"{len(out)} vectors -> {OUT}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
