#!/usr/bin/env bash
# Load benchmark of recbole_serve with wrk (Debian's wrk) against 127.0.0.1: requests/s, latency
# percentiles and the server's memory, for BPR and EASE trained on ml-100k (docs/benchmarks.md).
#
#   tools/bench_serve.sh [BUILD_DIR] [DATA_PATH]       (defaults: build, ../shared/datasets)
#   MODELS="BPR EASE" DATASET=ml-100k CONNECTIONS=64 DURATION=15 THREADS=128 K=10 \
#     TRAIN_ARGS="--epochs=1" SERVE_ARGS="--index=ivf --nprobe=16" tools/bench_serve.sh
# DATASET may be a gen_synthetic set under DATA_PATH (e.g. syn20m); TRAIN_ARGS go to recbole_run,
# SERVE_ARGS to recbole_serve; with --index in SERVE_ARGS, recbole_recommend --recall_users=1000
# reports the index's recall@K against the exact answer. CHECKPOINT=PATH serves that checkpoint
# instead of training (one model).
#
# Each model is trained once with recbole_run (default config), served with its access log
# written to a file, and loaded by wrk (2 threads, CONNECTIONS keep-alive connections) with
# GET /recommend?user=U&k=K for users drawn at random from the checkpoint's users.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
data=${2:-../shared/datasets}
models=${MODELS:-BPR EASE}
dataset=${DATASET:-ml-100k}
train_args=${TRAIN_ARGS:-}
serve_args=${SERVE_ARGS:-}
connections=${CONNECTIONS:-64}
duration=${DURATION:-15}
threads=${THREADS:-128}
k=${K:-10}
command -v wrk >/dev/null || { echo "bench_serve: wrk not found (tools/install_deps.sh installs it)"; exit 2; }

work=$(mktemp -d)
trap 'kill "$server" 2>/dev/null || true; rm -rf "$work"' EXIT
server=

cat >"$work/users.lua" <<'LUA'
local users = {}
init = function(args)
  for line in io.lines(args[1]) do users[#users + 1] = line end
end
request = function()
  return wrk.format("GET", "/recommend?user=" .. users[math.random(#users)] .. "&k=" .. K)
end
LUA

echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), load average $(cut -d' ' -f1-3 /proc/loadavg)"
for model in $models; do
  if [ -n "${CHECKPOINT:-}" ]; then
    checkpoint=$CHECKPOINT
  else
    # shellcheck disable=SC2086  # TRAIN_ARGS is a list of options
    "$build/tools/recbole_run" --model="$model" --dataset="$dataset" --data_path="$data" $train_args \
      --checkpoint_dir="$work/saved" --log_dir="$work/log" --show_progress=false --state=WARNING \
      --result_file="$work/$model.json" >/dev/null
    checkpoint=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['checkpoint'])" "$work/$model.json")
  fi
  recall=
  if [[ "$serve_args" == *--index=* ]]; then
    # shellcheck disable=SC2086
    recall=$("$build/tools/recbole_recommend" --checkpoint="$checkpoint" $serve_args --topk="$k" \
      --recall_users=1000 2>/dev/null)
  fi
  # The users to ask for: every user token of the dataset's interactions.
  cut -f1 "$data/$dataset/$dataset.inter" | tail -n +2 | sort -u >"$work/users.txt"
  rm -f "$work/access.log"
  # shellcheck disable=SC2086  # SERVE_ARGS is a list of options
  "$build/tools/recbole_serve" --checkpoint="$checkpoint" $serve_args --port=0 --port_file="$work/port" \
    --threads="$threads" --access_log="$work/access.log" 2>"$work/server.log" &
  server=$!
  for _ in $(seq 100); do [ -s "$work/port" ] && break; sleep 0.1; done
  port=$(cat "$work/port")
  rss_loaded=$(awk '/VmRSS/ {print $2}' "/proc/$server/status")
  sed "s/\" \.\. K)/\" .. $k)/" "$work/users.lua" >"$work/run.lua"
  wrk -t2 -c"$connections" -d"${duration}s" --latency -s "$work/run.lua" \
    "http://127.0.0.1:$port" -- "$work/users.txt" >"$work/wrk.txt"
  rss=$(awk '/VmRSS/ {print $2}' "/proc/$server/status")
  hwm=$(awk '/VmHWM/ {print $2}' "/proc/$server/status")
  lines=$(wc -l <"$work/access.log")
  kill -TERM "$server"
  wait "$server" || true
  server=
  rm -f "$work/port"
  rps=$(awk '/Requests\/sec/ {print $2}' "$work/wrk.txt")
  p50=$(awk '$1 == "50%" {print $2}' "$work/wrk.txt")
  p90=$(awk '$1 == "90%" {print $2}' "$work/wrk.txt")
  p99=$(awk '$1 == "99%" {print $2}' "$work/wrk.txt")
  errors=$(grep -E "Non-2xx|Socket errors" "$work/wrk.txt" | tr '\n' ' ' || true)
  echo "$model $dataset k=$k, $connections connections, ${duration}s: $rps req/s, p50 $p50, p90 $p90, p99 $p99; server RSS $((rss_loaded / 1024)) MiB loaded, $((rss / 1024)) MiB after (peak $((hwm / 1024)) MiB); $lines access-log lines ${errors:+; $errors}${recall:+; $recall}"
done
