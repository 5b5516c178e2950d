# Helpers of .ci/run: logging, packages, throwaway PostgreSQL and Redis, steps.
# Sourced, not executed; expects `set -euo pipefail` and CI_DATA from the caller.

CI_T0=$SECONDS
CI_RESULTS=()   # "status|seconds|name|detail" per step
CI_FAILED=0
CI_TESTS_PASSED=0  # summed over the pytest runs, for the closing line
CI_TESTS_FAILED=0
PG_STARTED=0
REDIS_STARTED=0

log() { printf '[%s +%4ds] %s\n' "$(date -u +%H:%M:%S)" "$((SECONDS - CI_T0))" "$*"; }
die() { log "ERROR: $*" >&2; exit 1; }

port_in_use() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

pg_bindir() {
    local dir
    dir="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)"
    [[ -n "$dir" && -x "$dir/initdb" ]] && echo "$dir"
    return 0
}

# --- packages ---------------------------------------------------------------
ensure_packages() {
    local missing=()
    [[ -n "$(pg_bindir)" ]] || missing+=(postgresql)
    # The cluster runs as the postgres user, which the package creates.
    id postgres >/dev/null 2>&1 || missing+=(postgresql)
    command -v redis-server >/dev/null 2>&1 || missing+=(redis-server)
    # The browser tests (tests/browser) drive Debian's Chromium through its driver.
    [[ -x /usr/bin/chromium ]] || missing+=(chromium)
    [[ -x /usr/bin/chromedriver ]] || missing+=(chromium-driver)
    if ((${#missing[@]})); then
        [[ $EUID -eq 0 ]] || die "missing Debian packages: ${missing[*]} (run as root, or install them)"
        log "installing ${missing[*]} with apt-get"
        export DEBIAN_FRONTEND=noninteractive
        if ! apt-get update -q >"$CI_DATA/logs/apt.log" 2>&1 ||
            ! apt-get install -y -q "${missing[@]}" >>"$CI_DATA/logs/apt.log" 2>&1; then
            tail -n 30 "$CI_DATA/logs/apt.log" >&2
            die "apt-get could not install ${missing[*]}"
        fi
    else
        log "postgresql, redis-server, chromium and chromium-driver are installed"
    fi
    PG_BIN="$(pg_bindir)"
    [[ -n "$PG_BIN" ]] || die "PostgreSQL server binaries not found under /usr/lib/postgresql"
    REDIS_SERVER_BIN="$(command -v redis-server)"
    REDIS_CLI_BIN="$(command -v redis-cli)"
    export REDIS_SERVER_BIN
    log "using $("$PG_BIN/postgres" --version) and $("$REDIS_SERVER_BIN" --version | cut -d' ' -f1-3)"
}

# --- PostgreSQL -----------------------------------------------------------------
# initdb refuses to run as root: as root, the cluster belongs to the postgres user.
as_pg() {
    if [[ $EUID -eq 0 ]]; then
        (cd / && runuser -u postgres -- "$@")
    else
        "$@"
    fi
}

start_postgres() {
    local data_root=$1 port=$2
    PG_DIR="$data_root/pg"
    PG_PORT_USED=$port
    if [[ -f "$PG_DIR/data/postmaster.pid" ]]; then
        log "stopping a PostgreSQL left over from an interrupted run"
        as_pg "$PG_BIN/pg_ctl" -D "$PG_DIR/data" stop -m immediate -w >/dev/null 2>&1 || true
    fi
    ! port_in_use "$port" || die "127.0.0.1:$port is in use by another process; set PG_CI_PORT to a free port"
    rm -rf "$PG_DIR"
    mkdir -p "$PG_DIR"
    if [[ $EUID -eq 0 ]]; then
        chown postgres: "$PG_DIR"
        if ! runuser -u postgres -- test -w "$PG_DIR" 2>/dev/null; then
            # The clone sits where the postgres user cannot reach (e.g. under /root).
            rmdir "$PG_DIR"
            PG_DIR="$(mktemp -d /tmp/tutor-ci-pg.XXXXXX)"
            chown postgres: "$PG_DIR"
            log "the postgres user cannot write under $data_root; cluster goes to $PG_DIR"
        fi
    fi
    log "initdb into $PG_DIR/data"
    as_pg "$PG_BIN/initdb" -D "$PG_DIR/data" -U postgres -E UTF8 --no-locale --no-sync \
        --auth-local=trust --auth-host=scram-sha-256 >"$CI_DATA/logs/initdb.log" 2>&1 ||
        { cat "$CI_DATA/logs/initdb.log" >&2; die "initdb failed"; }
    as_pg mkdir -p "$PG_DIR/run"
    # A throwaway test cluster: durability settings off for speed.
    local opts="-c listen_addresses=127.0.0.1 -c port=$port -c unix_socket_directories='$PG_DIR/run'"
    opts+=" -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=200"
    log "starting PostgreSQL on 127.0.0.1:$port"
    as_pg "$PG_BIN/pg_ctl" -D "$PG_DIR/data" -l "$PG_DIR/postgres.log" -o "$opts" -w -t 60 start \
        >/dev/null || { tail -n 30 "$PG_DIR/postgres.log" >&2; die "PostgreSQL did not start"; }
    PG_STARTED=1
    # CREATEDB: pytest-django creates and drops the test_tutor database.
    as_pg "$PG_BIN/psql" -h "$PG_DIR/run" -p "$port" -U postgres -d postgres -v ON_ERROR_STOP=1 -q \
        -c "CREATE ROLE tutor LOGIN CREATEDB PASSWORD 'tutor'" \
        -c "CREATE DATABASE tutor OWNER tutor" || die "could not create role and database tutor"
    log "PostgreSQL ready: role and database tutor"
}

stop_postgres() {
    ((PG_STARTED)) || return 0
    log "stopping PostgreSQL"
    as_pg "$PG_BIN/pg_ctl" -D "$PG_DIR/data" stop -m fast -w -t 30 >/dev/null 2>&1 ||
        as_pg "$PG_BIN/pg_ctl" -D "$PG_DIR/data" stop -m immediate -w >/dev/null 2>&1 || true
    cp "$PG_DIR/postgres.log" "$CI_DATA/logs/postgres.log" 2>/dev/null || true
    rm -rf "$PG_DIR"
    PG_STARTED=0
}

# --- Redis ---------------------------------------------------------------------
start_redis() {
    local data_root=$1 port=$2
    local dir="$data_root/redis"
    mkdir -p "$dir"
    export REDIS_CI_PORT=$port
    export REDIS_CI_CONF="$dir/redis.conf"
    export REDIS_CI_PIDFILE="$dir/redis.pid"
    if [[ -f "$REDIS_CI_PIDFILE" ]] && kill -0 "$(cat "$REDIS_CI_PIDFILE")" 2>/dev/null; then
        log "stopping a redis-server left over from an interrupted run"
        kill "$(cat "$REDIS_CI_PIDFILE")" 2>/dev/null || true
        sleep 1
    fi
    ! port_in_use "$port" || die "127.0.0.1:$port is in use by another process; set REDIS_CI_PORT to a free port"
    # The worker tests restart this server from the same file (REDIS_CI_CONF).
    cat >"$REDIS_CI_CONF" <<CONF
bind 127.0.0.1
port $port
protected-mode yes
daemonize yes
pidfile "$REDIS_CI_PIDFILE"
logfile "$dir/redis.log"
dir "$dir"
save ""
appendonly no
CONF
    log "starting redis-server on 127.0.0.1:$port"
    "$REDIS_SERVER_BIN" "$REDIS_CI_CONF" || die "redis-server did not start"
    REDIS_STARTED=1
    local i
    for i in $(seq 1 50); do
        [[ "$("$REDIS_CLI_BIN" -p "$port" ping 2>/dev/null)" == PONG ]] && { log "Redis ready"; return 0; }
        sleep 0.2
    done
    tail -n 20 "$dir/redis.log" >&2 || true
    die "redis-server did not answer PING within 10 s"
}

stop_redis() {
    ((REDIS_STARTED)) || return 0
    log "stopping redis-server"
    # The tests may have restarted it: stop whatever owns the pidfile now.
    "$REDIS_CLI_BIN" -p "$REDIS_CI_PORT" shutdown nosave >/dev/null 2>&1 ||
        { [[ -f "$REDIS_CI_PIDFILE" ]] && kill "$(cat "$REDIS_CI_PIDFILE")" 2>/dev/null; } || true
    REDIS_STARTED=0
}

# Celery workers the tests started and could not stop (pytest killed by the
# step timeout): each file holds the pid of a worker that leads its own process group.
stop_leftover_workers() {
    local f pid
    for f in "$TUTOR_CI_RUNDIR"/worker-*.pid; do
        [[ -e "$f" ]] || continue
        pid="$(cat "$f")"
        if kill -0 "$pid" 2>/dev/null; then
            log "killing leftover Celery worker group $pid"
            kill -KILL -- "-$pid" 2>/dev/null || true
        fi
        rm -f "$f"
    done
}

ci_cleanup() {
    local rc=$?
    set +e
    stop_background_runs
    stop_leftover_workers
    stop_redis
    stop_postgres
    log "finished with exit code $rc"
    # The plain closing line: tests passed and failed over all pytest runs.
    echo "${CI_TESTS_PASSED} passed, ${CI_TESTS_FAILED} failed"
    exit "$rc"
}

# --- steps -----------------------------------------------------------------------
_record() { CI_RESULTS+=("$1|$2|$3|$4"); [[ $1 == ok* ]] || CI_FAILED=1; }

step_logfile() { echo "$CI_DATA/logs/$(echo "$1" | tr -c 'A-Za-z0-9\n' '-' | tr -s '-').log"; }

# _finish_pytest NAME LOGFILE RC STARTED LIMIT: count the run's tests and record
# its result. Make turns pytest's exit code into its own 2, so "no tests
# collected" (pytest 5) is read off make's message.
_finish_pytest() {
    local name=$1 logfile=$2 rc=$3 started=$4 limit=$5 closing count word
    closing="$(grep -E '^=+ .*( in [0-9.]+s)( \([0-9:]+\))? =+$' "$logfile" | tail -n 1 | tr -d '=' | xargs || true)"
    while read -r count word; do
        case "$word" in
            passed) CI_TESTS_PASSED=$((CI_TESTS_PASSED + count)) ;;
            failed | error | errors) CI_TESTS_FAILED=$((CI_TESTS_FAILED + count)) ;;
        esac
    done < <(grep -oE '[0-9]+ (passed|failed|errors?)' <<<"$closing" || true)
    if ((rc != 0)) && { grep -qE '^make: \*\*\* \[.*test\] Error 5$' "$logfile" || ((rc == 5)); }; then
        log "NOTE: pytest collected no tests in '$name' (exit code 5); counted as success"
        _record "ok (no tests collected)" $((SECONDS - started)) "$name" "$closing"
        log "=== $name: ${CI_RESULTS[-1]%%|*} in $((SECONDS - started))s"
        return 0
    fi
    _finish_step "$name" "$rc" "$started" "$limit" "$closing"
}

# Steps in the background, side by side (2 cores: one pytest process each,
# the database servers and browsers share them). Their output goes to their
# logs, shown whole when each ends; meanwhile a progress line every minute.
BG_PIDS=()
BG_NAMES=()
BG_KINDS=()  # pytest | step: how the end is recorded
BG_STARTED=()
BG_LIMITS=()

# _start_background KIND LIMIT NAME CMD...
_start_background() {
    local kind=$1 limit=$2 name=$3
    shift 3
    local logfile
    logfile="$(step_logfile "$name")"
    rm -f "$logfile" "$logfile.rc"
    log "=== $name (in the background, output in $logfile): $*"
    (
        set +e
        timeout --kill-after=20 "$limit" "$@" >"$logfile" 2>&1
        echo $? >"$logfile.rc"
    ) &
    BG_PIDS+=($!)
    BG_NAMES+=("$name")
    BG_KINDS+=("$kind")
    BG_STARTED+=("$SECONDS")
    BG_LIMITS+=("$limit")
}

# start_pytest NAME CMD...: start the run (limit STEP_TIMEOUT) and return once
# its pytest header reaches the log -- pytest has collected and runs its first
# test -- so that the next run's `make test` does not reinstall the package
# under this one's install step.
start_pytest() {
    local logfile i
    logfile="$(step_logfile "$1")"
    _start_background pytest "$STEP_TIMEOUT" "$@"
    for i in $(seq 1 600); do
        grep -q 'test session starts' "$logfile" 2>/dev/null && return 0
        [[ -e "$logfile.rc" ]] && return 0
        sleep 0.5
    done
    log "WARNING: '$1' has not started pytest after 300 s"
}

# start_step LIMIT NAME CMD...: a step of its own (not pytest) in the background.
start_step() { _start_background step "$@"; }

_progress() { grep -oE '\[ *[0-9]+%\]' "$1" 2>/dev/null | tail -n 1 | tr -d '[] ' || true; }

# wait_background [--any]: wait for every background step (with --any, for the
# first to end); each is shown and recorded as it ends.
wait_background() {
    local any=0 i pending ended last=$SECONDS line logfile rc progress
    [[ ${1:-} == --any ]] && any=1
    while :; do
        pending=0
        ended=0
        for i in "${!BG_PIDS[@]}"; do
            [[ -n "${BG_PIDS[$i]}" ]] || continue
            logfile="$(step_logfile "${BG_NAMES[$i]}")"
            if kill -0 "${BG_PIDS[$i]}" 2>/dev/null; then
                pending=1
                continue
            fi
            wait "${BG_PIDS[$i]}" 2>/dev/null || true
            rc="$(cat "$logfile.rc" 2>/dev/null || echo 1)"
            log "=== output of ${BG_NAMES[$i]}"
            cat "$logfile"
            if [[ ${BG_KINDS[$i]} == pytest ]]; then
                _finish_pytest "${BG_NAMES[$i]}" "$logfile" "$rc" "${BG_STARTED[$i]}" "${BG_LIMITS[$i]}"
            else
                _finish_step "${BG_NAMES[$i]}" "$rc" "${BG_STARTED[$i]}" "${BG_LIMITS[$i]}"
            fi
            BG_PIDS[i]=""
            ended=1
        done
        ((pending)) || return 0
        ((any && ended)) && return 0
        if ((SECONDS - last >= 60)); then
            line=""
            for i in "${!BG_PIDS[@]}"; do
                [[ -n "${BG_PIDS[$i]}" ]] || continue
                progress="$(_progress "$(step_logfile "${BG_NAMES[$i]}")")"
                line+="  ${BG_NAMES[$i]}: ${progress:-$((SECONDS - BG_STARTED[i]))s}"
            done
            log "running:$line"
            last=$SECONDS
        fi
        sleep 2
    done
}

# Background runs left behind by an interrupted CI: stop them and their children.
stop_background_runs() {
    local pid
    for pid in "${BG_PIDS[@]}"; do
        [[ -n "$pid" ]] || continue
        kill -0 "$pid" 2>/dev/null || continue
        log "stopping background test run $pid"
        pkill -TERM -P "$pid" 2>/dev/null || true
        kill "$pid" 2>/dev/null || true
    done
}

# _finish_step NAME RC STARTED [LIMIT [DETAIL]]: record a step's result (a
# LIMIT: it ran under timeout; DETAIL: what the summary adds, e.g. test counts).
_finish_step() {
    local name=$1 rc=$2 started=$3 limit=${4:-} detail=${5:-}
    if ((rc == 0)); then
        _record ok $((SECONDS - started)) "$name" "$detail"
    elif [[ -n $limit ]] && ((rc == 124 || rc == 137)); then
        _record "TIMEOUT" $((SECONDS - started)) "$name" "killed after ${limit}s${detail:+; $detail}"
    else
        _record "FAILED (exit $rc)" $((SECONDS - started)) "$name" "$detail"
    fi
    log "=== $name: ${CI_RESULTS[-1]%%|*} in $((SECONDS - started))s"
}

run_step() {
    local name=$1
    shift
    local started=$SECONDS rc=0
    log "=== $name"
    "$@" || rc=$?
    _finish_step "$name" "$rc" "$started"
}

print_summary() {
    local row status secs name detail
    log "=================== summary ==================="
    for row in "${CI_RESULTS[@]}"; do
        IFS='|' read -r status secs name detail <<<"$row"
        printf '  %-24s %5ss  %s%s\n' "$status" "$secs" "$name" "${detail:+  -- $detail}"
    done
    log "total $((SECONDS - CI_T0))s; logs in $CI_DATA/logs/"
    if ((CI_FAILED)); then
        log "CI FAILED"
        return 1
    fi
    log "CI passed"
}
