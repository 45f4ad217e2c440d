#!/usr/bin/env bash
# first-cjk-search.sh: what the first Chinese search after a worker starts
# costs, beside the searches after it (issue 13 item 4). It fills a data
# directory with Chinese messages through `memindex serve`, stops the
# worker, starts it again, and as soon as it answers status sends one
# Chinese search, then 200 more; it prints the worker's own time of each
# (tookMs), the first one, and the median and p99 of the rest.
#
#   make build && scripts/first-cjk-search.sh [BIN]
#
# BIN defaults to ./bin/memindex; name another build to compare.
set -euo pipefail
bin=${1:-./bin/memindex}
port=${PORT:-14333}
dir=$(mktemp -d)
trap 'kill $pid 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$dir"' EXIT
url=nats://127.0.0.1:$port

serve() {
	"$bin" serve --data "$dir/data" --listen 127.0.0.1:$port --http off --log-level warn >>"$dir/serve.log" 2>&1 &
	pid=$!
	for _ in $(seq 1 300); do
		"$bin" status --server $url --json >/dev/null 2>&1 && return 0
		sleep 0.05
	done
	echo "worker did not answer status; log:" >&2
	cat "$dir/serve.log" >&2
	exit 1
}

python3 - "$dir/zh.jsonl" <<'EOF'
import json, random, sys
random.seed(7)
words = "我们 明天 火车 里斯本 搬家 工作 朋友 周末 音乐 电影 咖啡 天气 学校 医院 旅行 孩子 妈妈 爸爸 生日 礼物 公园 跑步 书店 晚饭 早上 下午 计划 问题 高兴 担心".split()
with open(sys.argv[1], "w") as f:
    for i in range(3000):
        text = "".join(random.choice(words) for _ in range(random.randint(6, 18))) + "。"
        f.write(json.dumps({"sessionKey": f"s{i % 30}", "sessionId": "a", "seq": i // 30 + 1, "role": "user", "text": text}, ensure_ascii=False) + "\n")
EOF

serve
"$bin" publish --server $url --namespace zh --json "$dir/zh.jsonl" >/dev/null
for _ in $(seq 1 600); do
	n=$("$bin" status --server $url --json | python3 -c 'import json,sys; d=json.load(sys.stdin); d=d if isinstance(d,list) else [d]; print(sum(p["messages"] for w in d for p in w["partitions"]))')
	[ "$n" = 3000 ] && break
	sleep 0.1
done
kill $pid; wait $pid || true

start=$(date +%s.%N)
serve
up=$(python3 -c "import time; print(round(time.time()-$start, 2))")
took() { "$bin" search --server $url --namespace zh --json "$1" | python3 -c 'import json,sys; print(json.load(sys.stdin)["tookMs"])'; }
first=$(took "明天坐火车去里斯本")
rest=$(for i in $(seq 1 200); do took "周末和朋友喝咖啡"; done)
python3 - "$first" "$up" $rest <<'EOF'
import statistics, sys
first, up, rest = float(sys.argv[1]), sys.argv[2], sorted(float(x) for x in sys.argv[3:])
p99 = rest[min(len(rest) - 1, int(0.99 * len(rest)))]
print(f"start to status answered: {up} s")
print(f"first Chinese search after start: {first:.2f} ms")
print(f"the next {len(rest)}: median {statistics.median(rest):.2f} ms, p99 {p99:.2f} ms")
EOF
