# Shared by scripts/load-test and scripts/load-test-wire (sourced, not run):
# a throw-away database, the release server on :18080, wrk runs and
# Lendex/hello-world pairs. Expects `db`, `secs` and `pairs` set by the caller.
bin="${CARGO_TARGET_DIR:-target}"/release
api=http://127.0.0.1:18080

scripts/ensure-postgres
if ! command -v wrk >/dev/null 2>&1; then
  echo "installing wrk from Debian's packages..." >&2
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq wrk >/dev/null
fi
cargo build --release --locked --features loadgen --bin lendex --bin lendex-loadgen

psql -h 127.0.0.1 -U postgres -d postgres -qc "DROP DATABASE IF EXISTS $db WITH (FORCE)"
psql -h 127.0.0.1 -U postgres -d postgres -qc "CREATE DATABASE $db"
export DATABASE_URL="postgres://postgres@127.0.0.1:5432/$db"
export RPC_URL=http://127.0.0.1:9 LENDEX_SYNC__INTERVAL_SECONDS=0 LENDEX_LIMITS__PUBLIC_WRITE_PER_SECOND=0
export RUST_LOG=error
$bin/lendex migrate >/dev/null

pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; }
trap cleanup EXIT

start_server() {
  BIND_ADDR=127.0.0.1:18080 $bin/lendex serve &
  server=$!
  pids+=("$server")
  for _ in $(seq 1 600); do
    if curl -fs "$api/api/health" 2>/dev/null | grep -q '"cache":{"ok":true'; then return; fi
    sleep 0.2
  done
  echo "server did not load its cache" >&2; exit 1
}
# Waits until no query of the load database is running (write-backs, leftovers),
# so each measurement starts on a quiet PostgreSQL.
pg_idle() {
  for _ in $(seq 1 300); do
    n=$(psql -h 127.0.0.1 -U postgres -d postgres -Atc "SELECT count(*) FROM pg_stat_activity WHERE datname = '$db' AND state = 'active'")
    [ "$n" = "0" ] && return
    sleep 0.2
  done
}
rss_mb() { awk '/VmRSS/ { printf "%.0f", $2 / 1024 }' "/proc/$1/status"; }
bytes() { wc -c < "$1" | tr -d ' '; }
# Answers per second that were 2xx/3xx (an overloaded SQL baseline answers 503),
# and the p99 latency; extra arguments go to wrk (headers). wrk's report goes to
# stderr through awk, which writes to the inherited descriptor (tee /dev/stderr
# reopens a redirected log at offset 0 and overwrote it).
run_wrk() {
  local url="$1"; shift
  wrk -t2 -c64 -d"${secs}s" --latency "$@" "$url" | awk '
    { print > "/dev/stderr" }
    /requests in/ { n = $1; t = $4 } /Non-2xx/ { bad = $5 } / 99%/ { p99 = $2 }
    END { s = t + 0; if (t ~ /m$/) s *= 60; printf "%.2f %s\n", (n - bad) / s, p99 }'
}

# Lendex and its hello-world baseline, alternated $pairs times: this machine's
# throughput swings 10-20% from one run to the next, so a single pair can land
# on either side of a target. The order within a pair alternates (Lendex first,
# then hello-world first, ...): the machine's speed also drifts over minutes,
# and a fixed order would hand that drift to one side. Extra arguments go to
# wrk for the Lendex side. Prints the pair with the median ratio:
# rps p99 hello_rps hello_p99 ratio.
run_pair() {
  local lendex="$1" hello="$2"; shift 2
  for i in $(seq 1 "$pairs"); do
    if [ $((i % 2)) -eq 1 ]; then
      read -r a ap < <(run_wrk "$lendex" "$@")
      read -r b bp < <(run_wrk "$hello")
    else
      read -r b bp < <(run_wrk "$hello")
      read -r a ap < <(run_wrk "$lendex" "$@")
    fi
    echo "$a $ap $b $bp $(awk -v a="$a" -v b="$b" 'BEGIN { printf "%.2f", a / b }')"
  done | sort -k5 -n | awk -v median=$(( (pairs + 1) / 2 )) '{ print > "/dev/stderr" } NR == median'
}
