#!/usr/bin/env bash
# gen_synthetic's feature files feed a context model: a small synthetic set with its .user and
# .item files trains DeepFM for one epoch with every feature field (the 20M benchmark's setup).
#   gen_synthetic_context.sh GEN_SYNTHETIC RECBOLE_RUN
set -euo pipefail
gen=$1 run=$2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
"$gen" --out="$dir" --name=syn --users=200 --items=150 --inters=5000 --seed=7 >/dev/null
head -1 "$dir/syn/syn.user" | grep -q $'^user_id:token\tage:token\tgender:token\toccupation:token$'
head -1 "$dir/syn/syn.item" | grep -q $'^item_id:token\trelease_year:token\tclass:token_seq$'
[ "$(wc -l <"$dir/syn/syn.user")" -eq 201 ] && [ "$(wc -l <"$dir/syn/syn.item")" -eq 151 ]
cd "$dir"
out=$("$run" --model=DeepFM --dataset=syn --data_path="$dir" --epochs=1 --threshold='{rating: 4}' \
  --load_col='{inter: [user_id, item_id, rating], user: [user_id, age, gender, occupation], item: [item_id, release_year, class]}' 2>&1)
echo "$out" | grep -q "test result: auc"
# Seven fields: user_id, item_id, age, gender, occupation, release_year, class.
echo "$out" | grep -q "embedding.token_seq_class.weight"
echo ok
