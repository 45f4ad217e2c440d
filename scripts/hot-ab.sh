#!/bin/bash
# hot-ab.sh [-c CASE] [-p PAIRS] [-r ROUNDS] [-m MESSAGES] [-j] A B
#
# Compares two builds of memindex on one case of the hot suite (`memindex
# bench --suite hot --hot-cases CASE`), the way BENCHMARKS.md's A/B figures
# are taken: the builds alternate process by process (A, B, A, B, ...), each
# process on a fresh data directory, and the first round of each process is
# dropped (it pays the page faults of a fresh heap; the cases one and many
# run once a process, and that round is kept). A and B are command
# prefixes run through env, so "GOGC=200 bin/memindex" works as well as
# "/tmp/old/memindex".
#
# Prints each process's kept rounds, then each build's median over all its
# kept rounds, how many pairs B's median won, and B's median over A's; with
# -j, that summary as one JSON object instead. The project's 2-core box moves
# by several per cent within an hour, and three pairs of one build have come
# out 3 % apart: trust five pairs or more.
#
#   -c CASE      hot suite case (default many-batched: 100 namespaces, events
#                of 10); see `memindex bench -h` for -hot-cases
#   -p PAIRS     processes of each build (default 5)
#   -r ROUNDS    rounds a process, the first dropped (default 3, at least 2)
#   -m MESSAGES  messages a round (default: the bench's, 100,000)
#   -j           print the summary as JSON
set -euo pipefail

usage() {
	sed -n '2,3p' "$0" | sed 's/^# \{0,1\}//' >&2
	exit 2
}

hotcase=many-batched pairs=5 rounds=3 messages="" json=0
while getopts c:p:r:m:jh o; do
	case $o in
	c) hotcase=$OPTARG ;;
	p) pairs=$OPTARG ;;
	r) rounds=$OPTARG ;;
	m) messages=$OPTARG ;;
	j) json=1 ;;
	*) usage ;;
	esac
done
shift $((OPTIND - 1))
[ $# -eq 2 ] || usage
[[ $pairs =~ ^[1-9][0-9]*$ ]] || { echo "hot-ab: -p $pairs: want a count of pairs, 1 or more" >&2; exit 2; }
[[ $rounds =~ ^[0-9]+$ ]] && [ "$rounds" -ge 2 ] || { echo "hot-ab: -r $rounds: want 2 or more rounds (the first is dropped)" >&2; exit 2; }
specs=("$1" "$2")

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
extra=()
[ -n "$messages" ] && extra=(--hot-messages "$messages")

# run SPEC prints the kept rounds (messages/s) of one process of SPEC.
run() {
	local spec=$1 log=$tmp/log
	rm -rf "$tmp/data" "$tmp/out"
	# shellcheck disable=SC2086 # spec is a command prefix: split on purpose
	if ! env $spec bench --suite hot --hot-cases "$hotcase" --hot-rounds "$rounds" "${extra[@]}" \
		--data "$tmp/data" --out "$tmp/out" >"$log" 2>&1; then
		echo "hot-ab: $spec bench failed; its output:" >&2
		tail -20 "$log" >&2
		exit 1
	fi
	# The bench prints each round as "  N messages/s (Ts), ..." and then
	# the median line, which does not match. The cases one and many run
	# once a process whatever -r says (on the bench's shared worker, not a
	# fresh one): that round is kept.
	awk '/^  [0-9]+ messages\/s \(/ {r[++n] = $1} END {for (i = (n > 1 ? 2 : 1); i <= n; i++) printf "%s ", r[i]}' "$log"
}

for i in $(seq "$pairs"); do
	for v in 0 1; do
		kept=$(run "${specs[$v]}")
		[ -n "$kept" ] || { echo "hot-ab: no rounds of case $hotcase in the output of ${specs[$v]}" >&2; exit 1; }
		echo "$v $i $kept" >>"$tmp/rounds"
		[ "$json" = 1 ] || echo "$([ $v = 0 ] && echo A || echo B) pair $i: $kept"
	done
done

# median reads numbers, one a line, and prints their median.
median() {
	sort -n | awk '{a[NR] = $1} END {if (NR % 2) print a[(NR + 1) / 2]; else print (a[NR / 2] + a[NR / 2 + 1]) / 2}'
}

ma=$(awk '$1 == 0 {for (i = 3; i <= NF; i++) print $i}' "$tmp/rounds" | median)
mb=$(awk '$1 == 1 {for (i = 3; i <= NF; i++) print $i}' "$tmp/rounds" | median)
ahead=0
for i in $(seq "$pairs"); do
	pa=$(awk -v p="$i" '$1 == 0 && $2 == p {for (i = 3; i <= NF; i++) print $i}' "$tmp/rounds" | median)
	pb=$(awk -v p="$i" '$1 == 1 && $2 == p {for (i = 3; i <= NF; i++) print $i}' "$tmp/rounds" | median)
	if awk -v a="$pa" -v b="$pb" 'BEGIN {exit !(b > a)}'; then
		ahead=$((ahead + 1))
	fi
done
ratio=$(awk -v a="$ma" -v b="$mb" 'BEGIN {printf "%.3f", b / a}')
kept=$(awk '$1 == 0 {n += NF - 2} END {print n}' "$tmp/rounds")

if [ "$json" = 1 ]; then
	rounds_of() {
		awk -v v="$1" '$1 == v {for (i = 3; i <= NF; i++) printf "%s%s", (n++ ? "," : ""), $i}' "$tmp/rounds"
	}
	esc() { printf '%s' "$1" | sed 's/\\/\\\\/g; s/"/\\"/g'; }
	printf '{"case":"%s","pairs":%d,"keptRoundsEach":%d,"a":{"command":"%s","median":%s,"rounds":[%s]},"b":{"command":"%s","median":%s,"rounds":[%s]},"pairsBAhead":%d,"bOverA":%s}\n' \
		"$(esc "$hotcase")" "$pairs" "$kept" "$(esc "${specs[0]}")" "$ma" "$(rounds_of 0)" "$(esc "${specs[1]}")" "$mb" "$(rounds_of 1)" "$ahead" "$ratio"
else
	echo "A median $ma msg/s, B median $mb msg/s over $kept kept rounds each; B ahead in $ahead of $pairs pairs; B/A $ratio"
fi
