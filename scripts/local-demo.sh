# What scripts/run and scripts/cluster share (sourced, not run): the release
# build on PATH, the default database, the local chain (surfpool, offline),
# and the demo market seeded through the API with its price walk.

# Builds the release binary and puts `lendex` on PATH for the README's commands.
build_and_install_lendex() {
  cargo build --release --locked
  local bin_dir=/usr/local/bin
  if ! { [ -w "$bin_dir" ] || { [ ! -e "$bin_dir" ] && mkdir -p "$bin_dir" 2>/dev/null; }; }; then
    bin_dir="$HOME/.local/bin"
    mkdir -p "$bin_dir"
  fi
  install -m 0755 "${CARGO_TARGET_DIR:-target}"/release/lendex "$bin_dir/lendex"
  case ":$PATH:" in
    *":$bin_dir:"*) echo "installed lendex in $bin_dir" ;;
    *) echo "installed lendex in $bin_dir (not on your PATH: export PATH=\"$bin_dir:\$PATH\")" ;;
  esac
}

# The default database (config.toml) is created on first run.
ensure_default_database() {
  if [ -z "${DATABASE_URL:-}" ]; then
    if ! psql -h 127.0.0.1 -U postgres -d postgres -tAc "SELECT 1 FROM pg_database WHERE datname = 'lendex'" | grep -q 1; then
      psql -h 127.0.0.1 -U postgres -d postgres -qc "CREATE DATABASE lendex"
    fi
  fi
}

# Starts surfpool in the background: sets chain_pid, RPC_URL and WS_URL (exported).
start_local_chain() {
  mkdir -p .surfpool
  SURFPOOL_KEEP_ALIVE=1 node scripts/surfpool/start.js > .surfpool/start.out 2> .surfpool/start.err &
  chain_pid=$!
  for _ in $(seq 1 100); do
    grep -q '^RPC_URL=' .surfpool/start.out 2>/dev/null && break
    sleep 0.1
  done
  RPC_URL=$(sed -n 's/^RPC_URL=//p' .surfpool/start.out | head -1)
  [ -n "$RPC_URL" ] || { echo "error: surfpool did not start (see .surfpool/start.err)" >&2; exit 1; }
  for _ in $(seq 1 50); do grep -q '^WS_URL=' .surfpool/start.out && break; sleep 0.1; done
  WS_URL=$(sed -n 's/^WS_URL=//p' .surfpool/start.out | head -1)
  export RPC_URL WS_URL
  echo "local chain (surfpool) at $RPC_URL, websocket $WS_URL"
}

# Waits until $1 answers its health check (20 s at most).
wait_for_health() {
  for _ in $(seq 1 100); do
    curl -fs "$1/api/health" >/dev/null 2>&1 && return 0
    sleep 0.2
  done
  echo "warning: $1 did not answer its health check within 20 s" >&2
}

# Seeds and registers the demo market through the API at $1, starts the price
# walk (sets walker_pid) and writes .surfpool/env for other shells.
start_demo_market() {
  local api=$1
  # The demo authority's keypair, to register the demo's unregistered pool.
  "${CARGO_TARGET_DIR:-target}"/release/lendex demo --api "$api" --keypair-out .surfpool/demo-authority.json
  # Prices keep moving (accounts go under and recover), quietly in the background.
  "${CARGO_TARGET_DIR:-target}"/release/lendex demo --api "$api" --walk-only > .surfpool/walk.out 2>&1 &
  walker_pid=$!
  # What the CLI needs in another shell (lendex remote reads LENDEX_URL).
  cat > .surfpool/env <<ENV
export LENDEX_URL=$api
export RPC_URL=$RPC_URL
export WS_URL=$WS_URL
ENV
}
