# Shared by scripts/load-test-cluster and load-test-failover (sourced after
# load-common.sh): a release replica on a port, and HAProxy with the shipped
# configuration in front of some.
replica() {
  BIND_ADDR="127.0.0.1:$1" $bin/lendex serve &
  pids+=($!)
  for _ in $(seq 1 600); do
    curl -fs "http://127.0.0.1:$1/api/health" 2>/dev/null | grep -q '"cache":{"ok":true' && return
    sleep 0.2
  done
  echo "replica on $1 did not load its cache" >&2; exit 1
}
balancer() {  # balancer <front port> <replica ports...>
  local front=$1; shift
  local servers="" i=0
  for port in "$@"; do i=$((i + 1)); servers+="    server r$i 127.0.0.1:$port check\n"; done
  sed "s|^    # Servers: appended by scripts/cluster.|$servers|" ops/haproxy/haproxy.cfg > "/tmp/lendex-lb-$front.cfg"
  LENDEX_LB_BIND="127.0.0.1:$front" LENDEX_LB_STATS="127.0.0.1:$((front + 100))" \
    haproxy -db -f "/tmp/lendex-lb-$front.cfg" 2>/dev/null &
  pids+=($!)
  for _ in $(seq 1 100); do
    curl -fs "http://127.0.0.1:$front/api/liquidations?limit=50" -o /dev/null 2>/dev/null && return
    sleep 0.1
  done
  echo "balancer on $front does not answer" >&2; exit 1
}
