#!/bin/bash
# issue13-figures.sh OUT [BIN...]: the figures issue 13's targets are read
# from, for BENCHMARKS.md, each binary in turn (several binaries: A/B rounds,
# ROUNDS of them, default 1), every suite with its floors in the same run:
#   locomo   every LoCoMo question within its conversation over NATS, beside
#            plain FTS5 bm25 and a float32 scan (target: hybrid p99 <= 3 ms)
#   search   generated namespaces of SIZES chunks (default 10000,100000) over
#            NATS beside plain FTS5 bm25 and a float32 scan, and the start-up
#            of the shard (targets: p99 <= 10 ms at 100k, <= 30 ms at 1M)
#   hot      one namespace of 1,000 interleaved sessions, and 100 namespaces,
#            beside plain FTS5 inserts (targets: 20,000 and 40,000 msg/s)
# Each run writes OUT/<round>-<bin>-<suite>/ (report.json, tables.md,
# growth.png); the load average is printed before each run. LoCoMo is read
# from ../shared/eval-data (evaluation only; never copied here).
set -eu
out=$1; shift
bins=("$@"); [ ${#bins[@]} -eq 0 ] && bins=(./bin/memindex)
sizes=${SIZES:-10000,100000}
mkdir -p "$out"
for r in $(seq "${ROUNDS:-1}"); do
  for b in "${bins[@]}"; do
    tag=$r-$(basename "$b")
    for suite in locomo search hot; do
      echo "== round $r, $b, $suite, $(date -u +%H:%M:%S), load $(cut -d' ' -f1-3 /proc/loadavg)"
      args=(--suite "$suite" --out "$out/$tag-$suite")
      [ "$suite" = search ] && args+=(--search-chunks "$sizes")
      "$b" bench "${args[@]}" 2>&1 | grep -E "^  |p50|messages/s|start-up" || true
    done
  done
done
