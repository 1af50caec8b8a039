#!/usr/bin/env bash
# Measures the gradient exchange of BPR across two namespaced hosts (one rank each, torchrun
# variables): bytes each host's interface sends per epoch and the time in the exchange.
# Needs root (or CAP_NET_ADMIN) and iproute2. Removes its namespaces whatever happens.
#
#   tools/bench_multihost.sh DATASET DATA_PATH [gradient_exchange=auto|dense|sparse] [extra --key=value ...]
#
# Per epoch = (run with 1+E epochs - run with 1 epoch) / E, so start-up and the final test
# evaluation cancel out; E = ${BENCH_EPOCHS:-5}; validation is off (eval_step 0).
# BENCH_RATE=1gbit limits each host's link with a token bucket (tc tbf), as a real network would.
set -euo pipefail
dataset=$1 data_path=$2 mode=${3:-auto}
shift $(( $# >= 3 ? 3 : $# ))
run=${RECBOLE_RUN:-$(dirname "$0")/../build/tools/recbole_run}
E=${BENCH_EPOCHS:-5}
p="rbbench-$$"
cleanup() {
  for ns in $p-h0 $p-h1; do
    for pid in $(ip netns pids "$ns" 2>/dev/null); do kill -9 "$pid" 2>/dev/null || true; done
    ip netns del "$ns" 2>/dev/null || true
  done
}
trap cleanup EXIT
ip netns add $p-h0
ip netns add $p-h1
ip -n $p-h0 link add eth0 type veth peer name eth0 netns $p-h1
for i in 0 1; do
  ip -n $p-h$i addr add 10.77.0.$((i + 1))/24 dev eth0
  ip -n $p-h$i link set eth0 up
  ip -n $p-h$i link set lo up
  if [ -n "${BENCH_RATE:-}" ]; then
    ip netns exec $p-h$i tc qdisc add dev eth0 root tbf rate "$BENCH_RATE" burst 256kb latency 50ms
  fi
done
tx() { ip netns exec "$1" cat /sys/class/net/eth0/statistics/tx_bytes; }
work=$(mktemp -d)
one_run() {  # epochs → "tx_h0 tx_h1 exchange-log-line"
  local a0 a1 epochs=$1
  shift
  a0=$(tx $p-h0) a1=$(tx $p-h1)
  for r in 0 1; do
    env RANK=$r WORLD_SIZE=2 LOCAL_RANK=0 LOCAL_WORLD_SIZE=1 MASTER_ADDR=10.77.0.1 MASTER_PORT=29500 \
      ip netns exec $p-h$r "$run" --model=BPR --dataset="$dataset" --data_path="$data_path" \
      --epochs="$epochs" --eval_step=0 --show_progress=false --gradient_exchange="$mode" \
      --checkpoint_dir="$work/saved" --log_dir="$work/log" "$@" >"$work/rank$r.log" 2>&1 &
  done
  wait
  echo "$(( $(tx $p-h0) - a0 )) $(( $(tx $p-h1) - a1 )) $(grep -o 'gradient exchange per epoch.*' "$work/rank0.log" | head -1)"
}
read -r s0 s1 _ < <(one_run 1 "$@")
read -r l0 l1 line < <(one_run $((1 + E)) "$@")
echo "dataset=$dataset gradient_exchange=$mode epochs=$E link=${BENCH_RATE:-veth, unlimited}"
echo "wire bytes sent per epoch: host0 $(( (l0 - s0) / E )), host1 $(( (l1 - s1) / E ))"
echo "rank 0 (1+$E epochs): $line"
grep -o 'training \[time: [0-9.]*' "$work/rank0.log" | awk '{s += $3; n++} END {if (n) printf "training time per epoch (rank 0, mean of %d): %.3f s\n", n, s / n}'
grep -h "test result" "$work/rank0.log" | tail -1
rm -rf "$work"
