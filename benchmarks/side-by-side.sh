#!/usr/bin/env bash
# side-by-side.sh: pqsink beside a peer Kafka -> Parquet -> S3 pipeline, on
# the same records, broker and store, and the ratios between them.
#
# Usage:
#   benchmarks/side-by-side.sh                 # pqsink alone: `pqsink bench`
#   benchmarks/side-by-side.sh PEER_KIT        # pqsink and the peer, side by side
#   PEER_KIT=DIR benchmarks/side-by-side.sh    # the same
#
# The peer is optional. Without it, the script runs `pqsink bench` (its
# own broker and a directory store) and says so. With it, PEER_KIT is a
# benchmark kit for a Benthos pipeline that holds env.sh, scripts/
# (build.sh, start-broker.sh, start-s3.sh, load-data.sh, run-peer.sh,
# stop.sh), config/ and the sources of its tools (a seeded producer of
# clickstream JSON records, a consumer-lag tool, and an S3 tool that
# watches a prefix until the Parquet footers there hold N rows). The kit
# is copied into a cache (PEER_CACHE, default ~/.cache/pqsink/peer) and
# built there on first use (build.sh: many minutes on two cores); a CI run
# never builds it and skips the peer.
#
# Each system reads the whole topic once, from its start until the
# Parquet footers in the store hold every row, with the same measure of
# wall time (the kit's S3 watcher), CPU and peak RSS (GNU time -v):
#   peer:   the kit's run-peer.sh with PEER_CONFIG (default its per-
#           partition batching pipeline) and BATCH_PERIOD (default 1s)
#   pqsink: `pqsink run` with format json and benchmarks/peer/event.schema,
#           the envelope, zstd, rotate every 250,000 records or 1s, and
#           memory.limit MEMORY (default 384MiB)
#
# Knobs (environment): N (1000000 records), RUNS (1: runs of each system,
# alternating), MEMORY, PEER_CONFIG, BATCH_PERIOD, PEER_CACHE, PQSINK (a
# built pqsink binary; default: built from this checkout).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
kit=${1:-${PEER_KIT:-}}
N=${N:-1000000}
RUNS=${RUNS:-1}
MEMORY=${MEMORY:-384MiB}
BATCH_PERIOD=${BATCH_PERIOD:-1s}
if [ -n "$kit" ] && { [ ! -f "$kit/scripts/run-peer.sh" ] || [ ! -f "$kit/env.sh" ]; }; then
  echo "$kit does not look like a peer kit (no env.sh or scripts/run-peer.sh)" >&2
  exit 2
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/pqsink-side-by-side.XXXXXX")

# pqsink, built from this checkout unless given.
if [ -z "${PQSINK:-}" ]; then
  PQSINK=$work/pqsink
  echo "building pqsink into $PQSINK"
  (cd "$root" && go build -o "$PQSINK" ./cmd/pqsink)
fi

if [ -z "$kit" ]; then
  echo "no peer kit given (the peer is optional): running pqsink alone."
  echo "For the side-by-side ratios: $0 PEER_KIT (or PEER_KIT=DIR)."
  "$PQSINK" bench --records "$N" --memory "$MEMORY"
  rm -rf "$work"
  exit 0
fi

# The kit runs in its cache: its scripts keep binaries, data, logs and
# results beside themselves.
export PEER_WORK=${PEER_CACHE:-$HOME/.cache/pqsink/peer}
mkdir -p "$PEER_WORK"
cp -R "$kit/." "$PEER_WORK/"
if [ ! -x "$PEER_WORK/bin/benthos-min" ] || [ ! -x "$PEER_WORK/bin/s3tool" ]; then
  if [ "${CI:-}" = true ]; then
    echo "CI: the peer is not built in CI; skipping the side-by-side run."
    exit 0
  fi
  echo "building the peer kit into $PEER_WORK (once; many minutes on two cores)"
  (. "$PEER_WORK/env.sh" && "$PEER_WORK/scripts/build.sh") > "$work/peer-build.log" 2>&1 ||
    { tail -30 "$work/peer-build.log" >&2; exit 1; }
fi
# The kit's Go environment (module and build caches) for its scripts only:
# pqsink was built before.
. "$PEER_WORK/env.sh"
P=$PEER_WORK

cleanup() {
  [ -n "${pqsink_pid:-}" ] && kill "$pqsink_pid" 2>/dev/null || true
  "$P/scripts/stop.sh" > /dev/null 2>&1 || true
}
trap cleanup EXIT

"$P/scripts/stop.sh" > /dev/null 2>&1 || true
"$P/scripts/start-broker.sh" > /dev/null
"$P/scripts/start-s3.sh" > /dev/null
echo "loading $N records into the broker"
N=$N "$P/scripts/load-data.sh" > "$work/load.log" 2>&1

# run_pqsink ID: one pqsink run over the whole topic, measured as
# run-peer.sh measures the peer; writes $work/ID.summary.
run_pqsink() {
  local id=$1 out=$work/$1
  mkdir -p "$out"
  cat > "$out/pqsink.yaml" <<EOF
kafka:
  brokers: [127.0.0.1:19092]
  group: bench-$id
  topics: [events]
  start: earliest
store:
  url: s3://peer-bench/$id
  endpoint: http://127.0.0.1:19000
  region: us-east-1
  path_style: true
  access_key: peeradmin
  secret_key: peeradmin-secret
format:
  type: json
  schema_file: $here/peer/event.schema
envelope: true
rotate:
  records: 250000
  interval: 1s
parquet:
  codec: zstd
memory:
  limit: $MEMORY
EOF
  "$P/bin/s3tool" clear -prefix "$id/" -q > /dev/null
  local t0 t1
  t0=$(date +%s%3N)
  /usr/bin/time -v -o "$out/time-v.txt" "$PQSINK" run --config "$out/pqsink.yaml" > "$out/pqsink.log" 2>&1 &
  local tpid=$!
  sleep 0.2
  pqsink_pid=$(pgrep -P "$tpid" || true)
  "$P/bin/s3tool" watch -prefix "$id/" -target "$N" -interval 200ms -timeout 30m > "$out/watch.txt"
  t1=$(grep -o 'unix_ms=[0-9]*' "$out/watch.txt" | cut -d= -f2)
  "$P/bin/lag" -group "bench-$id" -expect "$N" -wait 60s > "$out/lag.txt" || true
  kill -TERM "$pqsink_pid"
  wait "$tpid" || true
  pqsink_pid=
  "$P/bin/s3tool" ls -prefix "$id/" > "$out/ls.txt"
  summarize "$N" $((t1 - t0)) "$out/time-v.txt" "$out/ls.txt" > "$work/$id.summary"
}

# summarize N WALL_MS TIME_V LS: the figures of one run, as key=value.
summarize() {
  local rss u s bytes
  rss=$(awk '/Maximum resident set size/{print $NF}' "$3")
  u=$(awk '/User time/{print $NF}' "$3")
  s=$(awk '/System time/{print $NF}' "$3")
  bytes=$(tail -1 "$4" | sed 's/.*total_bytes=\([0-9]*\).*/\1/')
  awk -v n="$1" -v ms="$2" -v rss="$rss" -v u="$u" -v s="$s" -v b="$bytes" 'BEGIN{
    printf "records_per_s=%.0f\ncpu_s=%.2f\npeak_rss_mib=%.1f\nbytes_per_record=%.2f\n", n/(ms/1000), u+s, rss/1024, b/n }'
}

# run_peer ID: one run of the peer with the kit's script.
run_peer() {
  local id=$1
  RUN_ID=$id N=$N BATCH_PERIOD=$BATCH_PERIOD CONFIG=${PEER_CONFIG:-$P/config/kafka-parquet-s3-pipeline.yaml} \
    "$P/scripts/run-peer.sh" > "$work/$id.log" 2>&1
  local sum=$P/results/$id/summary.txt
  awk -F= '
    /^records_per_s=/{print}
    /^peak_rss_mib=/{print}
    /^cpu_user_s=/{split($0, f, " "); for (i in f) if (f[i] ~ /^cpu_total_s=/) { sub("cpu_total_s=", "cpu_s=", f[i]); print f[i] } }
    /^objects=/{split($0, f, " "); for (i in f) if (f[i] ~ /^bytes_per_record=/) print f[i] }' "$sum" > "$work/$id.summary"
}

get() { sed -n "s/^$2=//p" "$work/$1.summary"; }

stamp=$(date +%Y%m%d-%H%M%S)
printf '\n%-8s %-4s %12s %8s %10s %9s\n' system run records/s CPU-s peak-MiB bytes/rec
for r in $(seq 1 "$RUNS"); do
  for sys in peer pqsink; do
    id=$sys-$stamp-$r
    "run_$sys" "$id"
    printf '%-8s %-4s %12s %8s %10s %9s\n' "$sys" "$r" "$(get "$id" records_per_s)" "$(get "$id" cpu_s)" "$(get "$id" peak_rss_mib)" "$(get "$id" bytes_per_record)"
  done
  awk -v ps="$(get "pqsink-$stamp-$r" records_per_s)" -v bs="$(get "peer-$stamp-$r" records_per_s)" \
      -v pc="$(get "pqsink-$stamp-$r" cpu_s)" -v bc="$(get "peer-$stamp-$r" cpu_s)" \
      'BEGIN{ printf "run %d: pqsink at %.2fx the peer'"'"'s wall speed, with %.2fx less CPU\n", '"$r"', ps/bs, bc/pc }'
done
echo "machine: $(nproc) cores, $(awk '/MemTotal/{printf "%.0f GiB", $2/1048576}' /proc/meminfo); load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "details in $work and $P/results"
