#!/bin/bash
# e2e-ingest.sh [-b BIN] [-p PORT] [-m MESSAGES] [-c CASES] [-w] [-j]
#
# Ingest as a user runs it: a fresh `memindex serve` (embedded NATS, fresh
# data directory), and each hot-suite load (`memindex bench --hot-events`)
# published by `memindex publish`, a process of its own, as a user's
# publisher is. `memindex bench --suite hot` instead publishes from inside
# the worker's process, with messages it built beforehand, into workers
# started in a process whose heap earlier rounds have grown: BENCHMARKS.md
# (twenty-third session) measured the two side by side.
#
# Nothing polls the worker while it works (Linux: it reads /proc, and GNU
# stat for the WAL times). The serve process's CPU is
# sampled every 50 ms; once the publisher has exited and
# the worker has been idle for half a second, `memindex status` checks that
# every message of the load is indexed (no figure when one is missing).
# The load is timed from its publisher's start to its last commit: the
# newest write to a shard's WAL, which only commits write (the checkpoints
# are PASSIVE, so they only read it); that is the clock of `memindex bench`,
# which stops at the last commit. Prints a line a load: that time and
# messages/s, the time until the worker was idle (its last checkpoints
# done), the serve process's CPU a message over the whole (its embedded
# NATS server included, the publisher not) and its minor page faults a
# message, and the publisher's own time and CPU; at the end the serve
# process's peak RSS.
#
#   -b BIN       memindex binary (default bin/memindex)
#   -p PORT      port of the embedded NATS server (default 14299)
#   -m MESSAGES  messages a load (default 100000)
#   -c CASES     hot loads, comma-separated, published one after the other
#                into the same worker: one, many, batched, many-batched
#                (default many-batched)
#   -w           publish each load twice, the second time into fresh
#                namespaces: the second is a worker already holding the first
#   -j           print one JSON object a load instead (and one with the peak
#                RSS at the end)
#
# serve runs with its defaults but what the environment sets: e.g.
# MEMINDEX_MEMORY_LIMIT=0 (no bound) or GOGC=100 (BENCHMARKS.md, twenty-fourth
# session, compares both with the defaults this way).
set -euo pipefail

bin=bin/memindex port=14299 messages=100000 cases=many-batched twice=0 json=0
while getopts b:p:m:c:wjh o; do
	case $o in
	b) bin=$OPTARG ;;
	p) port=$OPTARG ;;
	m) messages=$OPTARG ;;
	c) cases=$OPTARG ;;
	w) twice=1 ;;
	j) json=1 ;;
	*) sed -n '2,3p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
	esac
done
[ -r /proc/self/stat ] || { echo "e2e-ingest.sh: needs /proc (Linux)" >&2; exit 2; }

tmp=$(mktemp -d)
spid=""
cleanup() {
	[ -n "$spid" ] && kill "$spid" 2>/dev/null && wait "$spid" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT

"$bin" bench --hot-events "$tmp/events" --hot-messages "$messages" >/dev/null
url=nats://127.0.0.1:$port
"$bin" serve --data "$tmp/data" --listen "127.0.0.1:$port" --http off >"$tmp/serve.log" 2>&1 &
spid=$!
for _ in $(seq 300); do
	"$bin" status --server "$url" --json 2>/dev/null | grep -q '"ready": true' && break
	kill -0 "$spid" 2>/dev/null || { cat "$tmp/serve.log" >&2; exit 1; }
	sleep 0.2
done
sleep 1 # its start-up work done

cpu() { awk '{print $14+$15}' "/proc/$spid/stat"; }    # utime+stime, ticks
faults() { awk '{print $10}' "/proc/$spid/stat"; }     # minor faults
indexed() { # messages and commits, of every partition
	"$bin" status --server "$url" --json |
		awk '/"messages": [0-9]/ {m += $2} /"commits": [0-9]/ {c += $2} END {printf "%d %d\n", m, c}'
}
hz=$(getconf CLK_TCK)

want=0 commits=0
publish() { # file label
	local f=$1 label=$2
	want=$((want + messages))
	local c0 f0 t0 last lc idle now c pub
	c0=$(cpu) f0=$(faults) t0=$(date +%s.%N)
	( TIMEFORMAT='%R %U %S'; { time "$bin" publish --server "$url" --namespace e2e "$f" >/dev/null 2>"$tmp/pub.err"; } 2>"$tmp/pub.time" ) &
	pub=$!
	last=$t0 lc=$c0 idle=0
	while :; do
		sleep 0.05
		now=$(date +%s.%N) c=$(cpu)
		if [ $((c - lc)) -gt 1 ]; then last=$now idle=0; else idle=$((idle + 1)); fi
		lc=$c
		if ! kill -0 "$pub" 2>/dev/null && [ "$idle" -ge 10 ]; then break; fi
	done
	wait "$pub" || { cat "$tmp/pub.err" >&2; exit 1; }
	local c1 f1 n k
	c1=$(cpu) f1=$(faults)
	read -r n k < <(indexed)
	if [ "$n" -lt "$want" ]; then
		echo "$label: $n of $want messages indexed when the worker went idle; no figure" >&2
		exit 1
	fi
	read -r pw pu ps <"$tmp/pub.time"
	local commit
	commit=$(stat -c '%.9Y' "$tmp"/data/shards/*-wal | sort -n | tail -1)
	awk -v label="$label" -v n="$messages" -v t0="$t0" -v commit="$commit" -v last="$last" \
		-v cpu="$(((c1 - c0)))" -v hz="$hz" -v faults="$((f1 - f0))" -v commits="$((k - commits))" \
		-v pw="$pw" -v pcpu="$(awk -v u="$pu" -v s="$ps" 'BEGIN {print u + s}')" -v json="$json" 'BEGIN {
		t = commit - t0; idle = last - t0; us = cpu / hz * 1e6 / n
		if (json) printf "{\"load\": \"%s\", \"messages\": %d, \"seconds\": %.3f, \"perSecond\": %.0f, \"idleSeconds\": %.3f, \"serveCPUMicrosPerMessage\": %.1f, \"faultsPerMessage\": %.2f, \"commits\": %d, \"publisherSeconds\": %.3f, \"publisherCPUMicrosPerMessage\": %.1f}\n", label, n, t, n / t, idle, us, faults / n, commits, pw, pcpu * 1e6 / n
		else printf "%s: %.2f s to the last commit, %.0f msg/s; idle after %.2f s; serve %.0f µs of CPU a message, %.2f faults a message, %d commits; publisher %.2f s, %.0f µs of CPU a message\n", label, t, n / t, idle, us, faults / n, commits, pw, pcpu * 1e6 / n
	}'
	commits=$k
}

for c in ${cases//,/ }; do
	f=$tmp/events/hot-$c-$messages.jsonl
	[ -r "$f" ] || { echo "e2e-ingest.sh: no load $c (one, many, batched, many-batched)" >&2; exit 2; }
	publish "$f" "$c"
	if [ "$twice" = 1 ]; then
		sed 's/"namespace":"bench-/"namespace":"again-/' "$f" >"$f.again"
		publish "$f.again" "$c, again"
	fi
done
rss=$(awk '/VmHWM/{print $2}' "/proc/$spid/status")
if [ "$json" = 1 ]; then
	echo "{\"servePeakRSSKiB\": $rss}"
else
	echo "serve peak RSS $rss kB"
fi
