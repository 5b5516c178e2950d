#!/usr/bin/env bash
# Schema-driven fuzzing (SPEC §7, §10): no endpoint answers a 5xx, and every
# answer, error or not, matches the OpenAPI document -- so the schema and the
# code cannot drift apart.
#
# Starts `manage.py serve` (gunicorn, as `make run` does) on the embedded default
# (SQLite in a temporary directory, eager Celery, offline model) on a free port of
# 127.0.0.1, loads the demo course and users, and runs schemathesis' CLI against
# /api/schema/ once per demo role: student (alice), staff (staff) and service
# (ci-bot). Each run generates valid and invalid data (--mode all), walks the
# schema's links from created submissions and sessions (the stateful phase), and
# checks every response: not_a_server_error, response_schema_conformance (the body
# matches the documented schema of its status), status_code_conformance (the
# status is documented) and content_type_conformance. A run that finds a failure
# (or that schemathesis cannot complete) fails the script, which then prints the
# server's tracebacks; the summary gives the number of test cases per role. The
# server is always stopped and the temporary directory removed.
#
# schemathesis lives in a virtualenv of its own (.venv-fuzz, from the `fuzz` extra
# of pyproject.toml): the pytest and hypothesis it brings stay out of the test
# virtualenv, whose dev extra pins pytest<9.2.
#
# Environment:
#   FUZZ_MAX_EXAMPLES  test cases per operation and phase (default 15: the three
#                      roles take about two minutes on two cores)
#   FUZZ_CHECKS        schemathesis checks (default: the four above)
#   FUZZ_WORKERS       schemathesis workers (default 1: with 2, its threads can
#                      hit CPython 3.11's "AST constructor recursion depth
#                      mismatch" when hypothesis parses source concurrently)
#   FUZZ_SEED          fixed seed, to reproduce a run (default: random, printed)
#   FUZZ_RUN_TIMEOUT   seconds allowed for one role's run (default 600)
#   FUZZ_LOG_DIR       if set, the server log and each role's output are kept there
#   VENV, FUZZ_VENV    the project's virtualenv (.venv) and schemathesis' (.venv-fuzz)
#   PYTHON             interpreter that creates .venv-fuzz (python3)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

VENV="${VENV:-.venv}"
FUZZ_VENV="${FUZZ_VENV:-.venv-fuzz}"
PYTHON="${PYTHON:-python3}"
MAX_EXAMPLES="${FUZZ_MAX_EXAMPLES:-15}"
CHECKS="${FUZZ_CHECKS:-not_a_server_error,response_schema_conformance,status_code_conformance,content_type_conformance}"
WORKERS="${FUZZ_WORKERS:-1}"
RUN_TIMEOUT="${FUZZ_RUN_TIMEOUT:-600}"
SEED="${FUZZ_SEED:-}"
LOG_DIR="${FUZZ_LOG_DIR:-}"
ROLES=("student:alice" "staff:staff" "service:ci-bot")

T0=$SECONDS
say() { printf 'fuzz [+%3ds] %s\n' "$((SECONDS - T0))" "$*"; }
die() { say "ERROR: $*" >&2; exit 1; }

for var in MAX_EXAMPLES WORKERS RUN_TIMEOUT; do
    [[ ${!var} =~ ^[1-9][0-9]*$ ]] || die "FUZZ_${var} must be a positive integer; got '${!var}'"
done
[[ -z $SEED || $SEED =~ ^[0-9]+$ ]] || die "FUZZ_SEED must be a non-negative integer; got '$SEED'"
case $VENV in /*) ;; *) VENV="$ROOT/$VENV" ;; esac
case $FUZZ_VENV in /*) ;; *) FUZZ_VENV="$ROOT/$FUZZ_VENV" ;; esac
PY="$VENV/bin/python"
[[ -x $PY ]] || die "$PY not found: install the project first (make install)"

WORK="$(mktemp -d "${TMPDIR:-/tmp}/tutor-fuzz.XXXXXX")"
SERVER_LOG="$WORK/server.log"
SERVER_PID=""
RUN_PID=""   # the subshell of the running schemathesis pipeline

# stop_pid PID: SIGTERM, five seconds' grace, then SIGKILL.
stop_pid() {
    local pid=$1 i
    kill -0 "$pid" 2>/dev/null || return 0
    kill "$pid" 2>/dev/null || true
    for i in $(seq 1 50); do
        kill -0 "$pid" 2>/dev/null || return 0
        sleep 0.1
    done
    kill -KILL "$pid" 2>/dev/null || true
}

stop_server() {
    [[ -n $SERVER_PID ]] || return 0
    stop_pid "$SERVER_PID"
    wait "$SERVER_PID" 2>/dev/null || true
    SERVER_PID=""
}

# On an interrupt: timeout (which holds schemathesis in a process group of its
# own) passes the signal on to schemathesis.
stop_run() {
    [[ -n $RUN_PID ]] || return 0
    [[ ! -s $WORK/run.pid ]] || stop_pid "$(cat "$WORK/run.pid")"
    wait "$RUN_PID" 2>/dev/null || true
    RUN_PID=""
}

cleanup() {
    local rc=$?
    set +e
    stop_run
    stop_server
    if [[ -n $LOG_DIR ]]; then
        mkdir -p "$LOG_DIR" && cp "$WORK"/*.log "$LOG_DIR"/ 2>/dev/null
    fi
    rm -rf "$WORK"
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Each server error's log record (one JSON object per line) with its
# traceback, the same traceback once.
print_tracebacks() {
    "$PY" - "$SERVER_LOG" <<'PYEOF'
import json
import sys

errors, seen = [], set()
for line in open(sys.argv[1], encoding="utf-8", errors="replace"):
    try:
        record = json.loads(line)
    except ValueError:
        continue  # a line that is not a log record (gunicorn's own start-up output)
    if record.get("level") in ("ERROR", "CRITICAL"):
        errors.append(record)
print(f"server log: {len(errors)} ERROR record(s); distinct tracebacks follow")
for record in errors:
    trace = record.get("exc_info") or ""
    if trace in seen:
        continue
    seen.add(trace)
    if len(seen) > 10:
        print("... and more distinct tracebacks")
        break
    print(f"[{record.get('correlation_id')}] {record.get('logger')}: {record.get('message')}\n{trace}")
PYEOF
}

# "Test cases: N generated, ..." of a role's run, as the number of cases.
cases_of() {
    awk '/^Test cases:/ { getline; print $1; exit }' "$1"
}

# --- schemathesis -------------------------------------------------------------
# The requirement comes from the `fuzz` extra, so pyproject.toml is its only home.
SPEC="$("$PYTHON" -c 'import sys, tomllib
extras = tomllib.load(open("pyproject.toml", "rb"))["project"]["optional-dependencies"]
sys.stdout.write("\n".join(extras["fuzz"]))')" || die "no [project.optional-dependencies] fuzz in pyproject.toml"
mapfile -t REQUIREMENTS <<<"$SPEC"
if [[ ! -x $FUZZ_VENV/bin/python ]]; then
    say "creating $FUZZ_VENV"
    "$PYTHON" -m venv "$FUZZ_VENV"
fi
say "installing ${REQUIREMENTS[*]} into $FUZZ_VENV"
if ! "$FUZZ_VENV/bin/python" -m pip install --quiet "${REQUIREMENTS[@]}" >"$WORK/pip.log" 2>&1; then
    tail -n 30 "$WORK/pip.log" >&2
    die "pip could not install ${REQUIREMENTS[*]}"
fi
say "$("$FUZZ_VENV/bin/schemathesis" --version)"

# --- the server -----------------------------------------------------------------
# The embedded default, whatever the caller's environment points at; throttling
# high enough that 429s do not hide the paths behind them.
SERVER_ENV=(
    env -u REDIS_URL -u TUTOR_LLM_BASE_URL -u TUTOR_LLM_MODEL -u TUTOR_LLM_API_KEY
    DEBUG=1 ALLOWED_HOSTS=127.0.0.1 LOG_LEVEL=INFO
    DATABASE_URL="sqlite:///$WORK/fuzz.sqlite3"
    TUTOR_THROTTLE_SUBMISSIONS=100000/min TUTOR_THROTTLE_MESSAGES=100000/min
)
"${SERVER_ENV[@]}" "$PY" manage.py migrate --noinput >"$WORK/migrate.log" 2>&1 ||
    { cat "$WORK/migrate.log" >&2; die "migrate failed"; }
"${SERVER_ENV[@]}" "$PY" manage.py demo >"$WORK/demo.log" 2>&1 ||
    { cat "$WORK/demo.log" >&2; die "demo failed"; }

declare -A TOKENS
for entry in "${ROLES[@]}"; do
    role=${entry%%:*} user=${entry#*:}
    TOKENS[$role]="$(awk -v u="$user" -v r="$role" '$1 == u && $2 == r { print $3; exit }' "$WORK/demo.log")"
    [[ -n ${TOKENS[$role]} ]] || { cat "$WORK/demo.log" >&2; die "no $role token for $user in the demo output"; }
done

PORT="$("$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
BASE="http://127.0.0.1:$PORT"
say "starting the server on $BASE${LOG_DIR:+ (its log is kept in $LOG_DIR/server.log)}"
"${SERVER_ENV[@]}" "$PY" manage.py serve "127.0.0.1:$PORT" >"$SERVER_LOG" 2>&1 &
SERVER_PID=$!
for _ in $(seq 1 150); do
    kill -0 "$SERVER_PID" 2>/dev/null || { cat "$SERVER_LOG" >&2; die "the server exited on start"; }
    if "$PY" -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=2)' \
        "$BASE/api/schema/" 2>/dev/null; then
        break
    fi
    sleep 0.2
done
"$PY" -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=5)' "$BASE/api/schema/" ||
    { tail -n 50 "$SERVER_LOG" >&2; die "$BASE/api/schema/ did not answer within 30 s"; }
say "server ready"

# --- real ids ----------------------------------------------------------------------
# Random UUIDs stop at the 404 of the object lookup. A submission (with its
# attempt) and a tutor session made through the API give the fuzzer ids that
# exist, bound with a probability, so that most cases reach the views' logic and
# the rest still probe unknown ids.
"$PY" - "$BASE" "${TOKENS[student]}" >"$WORK/ids.env" <<'PYEOF' || die "could not create the objects the fuzzer starts from"
import json
import shlex
import sys
import urllib.request

base, token = sys.argv[1], sys.argv[2]


def call(method, path, body=None):
    request = urllib.request.Request(
        base + path,
        method=method,
        data=None if body is None else json.dumps(body).encode(),
        headers={"Authorization": f"Token {token}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.load(response)


tasks = [t["id"] for t in call("GET", "/api/tasks/")["results"]]
evidence = {"report": "first() returns undefined", "ci": {"status": "failed", "exit_code": 1}}
submission = call("POST", "/api/submissions/", {"task": tasks[0], "evidence": evidence})
session = call("POST", "/api/tutor/sessions/", {"task": tasks[0]})
call("POST", f"/api/tutor/sessions/{session['id']}/messages/", {"content": "what now?"})
object_ids = [submission["id"]] + [a["id"] for a in submission["attempts"]]
for name, ids in (("TASK_IDS", tasks), ("OBJECT_IDS", object_ids), ("SESSION_IDS", [session["id"]])):
    print(f"{name}={shlex.quote(json.dumps(ids))}")
PYEOF
# shellcheck disable=SC1091
source "$WORK/ids.env"
cat >"$WORK/schemathesis.toml" <<TOML
[dictionaries.task_ids]
values = $TASK_IDS
[dictionaries.object_ids]
values = $OBJECT_IDS
[dictionaries.session_ids]
values = $SESSION_IDS

[parameters]
"path.id" = { dictionary = "object_ids", probability = 0.8 }
"path.session_id" = { dictionary = "session_ids", probability = 0.8 }
"query.task" = { dictionary = "task_ids", probability = 0.8 }
"body.task" = { dictionary = "task_ids", probability = 0.8 }
TOML
say "fuzzing from real ids: tasks $TASK_IDS, objects $OBJECT_IDS, sessions $SESSION_IDS"

# --- one run per role -------------------------------------------------------------
FAILED=()
SUMMARY=()
CASES=0
for entry in "${ROLES[@]}"; do
    role=${entry%%:*} user=${entry#*:}
    args=(
        --config-file "$WORK/schemathesis.toml"
        run "$BASE/api/schema/"
        -H "Authorization: Token ${TOKENS[$role]}"
        --checks "$CHECKS"
        --mode all
        --phases=coverage,fuzzing,stateful
        --max-examples "$MAX_EXAMPLES"
        --workers "$WORKERS"
        --generation-database none
        --no-color
    )
    [[ -z $SEED ]] || args+=(--seed "$SEED")
    started=$SECONDS
    say "=== $role ($user): schemathesis --max-examples $MAX_EXAMPLES --workers $WORKERS${SEED:+ --seed $SEED}"
    # In the background, so that a signal reaches the trap at once; from the work
    # directory, so that nothing schemathesis writes lands in the repository.
    rm -f "$WORK/run.pid"
    (
        cd "$WORK"
        sh -c 'echo $$ >"$0" && exec "$@"' "$WORK/run.pid" \
            timeout --kill-after=10 "$RUN_TIMEOUT" "$FUZZ_VENV/bin/schemathesis" "${args[@]}" 2>&1 |
            tee "$WORK/schemathesis-$role.log" || exit "${PIPESTATUS[0]}"
    ) &
    RUN_PID=$!
    rc=0
    wait "$RUN_PID" || rc=$?
    RUN_PID=""
    cases="$(cases_of "$WORK/schemathesis-$role.log")"
    CASES=$((CASES + ${cases:-0}))
    if ((rc == 0)); then
        SUMMARY+=("ok        $((SECONDS - started))s  $role ($user): ${cases:-?} cases")
    else
        case $rc in 124 | 137) status="TIMEOUT" ;; *) status="FAILED ($rc)" ;; esac
        SUMMARY+=("$status  $((SECONDS - started))s  $role ($user): ${cases:-?} cases")
        FAILED+=("$role")
    fi
    say "=== $role: ${SUMMARY[-1]%% *} in $((SECONDS - started))s"
done

if ! kill -0 "$SERVER_PID" 2>/dev/null; then
    FAILED+=("server exited during the runs")
fi
stop_server

say "summary (max examples $MAX_EXAMPLES, workers $WORKERS, checks $CHECKS): $CASES cases in all"
printf '  %s\n' "${SUMMARY[@]}"
if ((${#FAILED[@]})); then
    print_tracebacks
    say "FAILED: ${FAILED[*]}"
    exit 1
fi
say "no server error in $((SECONDS - T0))s"
