#!/bin/bash
# memory-bound.sh LABEL [serve flags...]: the RSS of a worker ingesting
# 30,000 LoCoMo messages (the first 3,000, published into 10 namespaces) and
# answering 300 searches, for BENCHMARKS.md "One memory bound". LoCoMo is
# read from ../shared/eval-data (evaluation only; never copied here).
# MEMINDEX (default ./bin/memindex) and OUT (default /tmp/memindex-memory).
set -u
label=$1; shift
mkdir -p "${OUT:-/tmp/memindex-memory}"
python3 - "${LOCOMO:-../shared/eval-data/locomo/locomo10.events.jsonl}" "${OUT:-/tmp/memindex-memory}/ev.jsonl" <<'PY'
import json, sys
with open(sys.argv[2], 'w') as out:
    for i, l in enumerate(open(sys.argv[1])):
        if i == 3000:
            break
        e = json.loads(l)
        e.pop('eventId', None)
        out.write(json.dumps(e) + '\n')
PY
rm -rf ${OUT:-/tmp/memindex-memory}/data-$label
${MEMINDEX:-./bin/memindex} serve --data ${OUT:-/tmp/memindex-memory}/data-$label --listen 127.0.0.1:14333 --http off "$@" > ${OUT:-/tmp/memindex-memory}/serve-$label.log 2>&1 &
pid=$!
for i in $(seq 50); do ${MEMINDEX:-./bin/memindex} status --server nats://127.0.0.1:14333 --json >/dev/null 2>&1 && break; sleep 0.2; done
rss() { awk '/VmRSS/{print $2/1024 " MiB"}' /proc/$pid/status; }
echo "$label start rss $(rss)"
for n in 0 1 2 3 4 5 6 7 8 9; do ${MEMINDEX:-./bin/memindex} publish --server nats://127.0.0.1:14333 --namespace tenant$n ${OUT:-/tmp/memindex-memory}/ev.jsonl >/dev/null 2>&1; done
for i in $(seq 300); do
  s=$(${MEMINDEX:-./bin/memindex} status --server nats://127.0.0.1:14333 --json 2>/dev/null)
  python3 -c "import json,sys; d=json.loads(sys.argv[1]); d=d[0] if isinstance(d,list) else d; t=sum(p['messages'] for p in d['partitions']); w=sum(p['vectorsWaiting']+p.get('pending',0) for p in d['partitions']); sys.exit(0 if t>=30000 and w==0 else 1)" "$s" 2>/dev/null && break
  sleep 1
done
echo "$label after ingest rss $(rss)"
for q in $(seq 300); do ${MEMINDEX:-./bin/memindex} search --server nats://127.0.0.1:14333 --namespace tenant$((q%10)) "what did Caroline say about the adoption agency" >/dev/null 2>&1; done
echo "$label after 300 searches rss $(rss)"
${MEMINDEX:-./bin/memindex} status --server nats://127.0.0.1:14333 --json | python3 -c "import json,sys; d=json.load(sys.stdin); d=d[0] if isinstance(d,list) else d; print(json.dumps(d.get('memory'))); print(sum(p['messages'] for p in d['partitions']), 'messages')"
kill $pid; wait $pid 2>/dev/null
