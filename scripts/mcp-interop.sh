#!/usr/bin/env bash
# mcp-interop.sh [MEMINDEX_BINARY]: checks `memindex mcp` with an MCP client
# that is not ours, the official TypeScript SDK (@modelcontextprotocol/sdk
# from npm, installed into a temporary directory), over stdio and over
# streamable HTTP (issue 15: "an MCP client that is not yours lists the five
# tools, calls memory_search and gets the hits a NATS search returns;
# memory_add then memory_search finds the record"). It starts a worker with
# an embedded NATS server on free ports and its data in a temporary
# directory, publishes three messages, and fails when a check fails.
# Needs node and npm; the binary defaults to bin/memindex (make build).
set -euo pipefail
bin=$(realpath "${1:-bin/memindex}")
work=$(mktemp -d)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
nats_port=$(free_port)
http_port=$(free_port)
nats="nats://127.0.0.1:$nats_port"

(cd "$work" && npm init -y >/dev/null && npm install --silent @modelcontextprotocol/sdk@1.32.2 >/dev/null)

"$bin" serve --data "$work/data" --listen "127.0.0.1:$nats_port" --http off >"$work/serve.log" 2>&1 &
pids+=($!)
for _ in $(seq 100); do grep -q "worker ready" "$work/serve.log" && break; sleep 0.1; done
grep -q "worker ready" "$work/serve.log" || { cat "$work/serve.log"; echo "the worker did not start"; exit 1; }

"$bin" publish --server "$nats" --namespace demo - >/dev/null <<'EOF'
{"sessionKey":"chat","sessionId":"s1","seq":1,"speaker":"Ana","text":"We move to Lisbon in May, near the harbour."}
{"sessionKey":"chat","sessionId":"s1","seq":2,"speaker":"Ben","text":"I will visit the harbour market."}
{"sessionKey":"chat","sessionId":"s2","seq":1,"speaker":"Ana","text":"The cello concert is on Friday."}
EOF
for _ in $(seq 100); do
	[ "$("$bin" search --server "$nats" --namespace demo --json harbour | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["hits"]))')" -ge 2 ] && break
	sleep 0.1
done

"$bin" mcp --server "$nats" --namespace demo --http "127.0.0.1:$http_port" --log-level warn >"$work/mcp.log" 2>&1 &
pids+=($!)
for _ in $(seq 100); do (echo >"/dev/tcp/127.0.0.1/$http_port") 2>/dev/null && break; sleep 0.1; done

cat >"$work/check.mjs" <<'EOF'
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [bin, nats, url, want] = process.argv.slice(2);
const fail = (msg) => { console.error("FAIL " + msg); process.exit(1); };
async function check(name, transport, wantHits) {
  const c = new Client({ name: "mcp-interop", version: "1" });
  await c.connect(transport);
  const tools = (await c.listTools()).tools.map((t) => t.name).sort().join(",");
  if (tools !== "memory_add,memory_forget,memory_get,memory_search,memory_status") fail(`${name}: tools ${tools}`);
  const s = await c.callTool({ name: "memory_search", arguments: { query: "harbour", sources: ["sessions"] } });
  const got = JSON.stringify(s.structuredContent.hits.map((h) => h.id));
  if (s.isError || got !== wantHits) fail(`${name}: memory_search hits ${got}, the NATS search's ${wantHits}`);
  const a = await c.callTool({ name: "memory_add", arguments: { text: `The ${name} client keeps this fact.` } });
  if (a.isError || !a.structuredContent.applied) fail(`${name}: memory_add ${JSON.stringify(a.content)}`);
  const r = await c.callTool({ name: "memory_search", arguments: { query: `${name} client fact`, sources: ["records"] } });
  if (r.structuredContent.hits[0]?.recordId !== a.structuredContent.recordId) fail(`${name}: memory_search after memory_add: ${JSON.stringify(r.structuredContent.hits)}`);
  const e = await c.callTool({ name: "memory_search", arguments: { query: "x", namespace: "elsewhere" } });
  if (!e.isError || !e.content[0].text.includes("namespace not allowed")) fail(`${name}: another namespace: ${JSON.stringify(e.content)}`);
  console.log(`ok ${name}: 5 tools, memory_search = NATS search (${wantHits}), memory_add then memory_search finds ${a.structuredContent.recordId}, a refused namespace is a tool error`);
  await c.close();
}
await check("stdio", new StdioClientTransport({ command: bin, args: ["mcp", "--server", nats, "--namespace", "demo", "--log-level", "warn"] }), want);
await check("http", new StreamableHTTPClientTransport(new URL(url)), want);
EOF
# The hits of the same search over NATS, sessions only as the client asks,
# so the records the stdio run adds do not count.
want=$("$bin" search --server "$nats" --namespace demo --source sessions --json harbour |
	python3 -c 'import json,sys; print(json.dumps([h["id"] for h in json.load(sys.stdin)["hits"]], separators=(",", ":")))')
(cd "$work" && node check.mjs "$bin" "$nats" "http://127.0.0.1:$http_port/mcp" "$want")
