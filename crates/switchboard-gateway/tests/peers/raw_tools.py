"""Lists a stdio MCP server's tools by speaking JSON-RPC itself (no SDK: SDK clients parse
schemas into their own types, which may reorder or drop keys) and prints one JSON line:
{"<tool name>": <its inputSchema exactly as it came on the wire, keys in order>}.

    python raw_tools.py <command> <args...>
"""
import json
import subprocess
import sys

proc = subprocess.Popen(sys.argv[1:], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)


def send(message):
    proc.stdin.write((json.dumps(message) + "\n").encode())
    proc.stdin.flush()


def answer(id_):
    for line in proc.stdout:
        message = json.loads(line)
        if message.get("id") == id_ and "method" not in message:
            return message
    raise SystemExit(f"no answer to request {id_}")


send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}})
answer(1)
send({"jsonrpc": "2.0", "method": "notifications/initialized"})
tools, cursor, n = [], None, 2
while True:
    send({"jsonrpc": "2.0", "id": n, "method": "tools/list", "params": {"cursor": cursor} if cursor else {}})
    result = answer(n)["result"]
    tools += result["tools"]
    cursor, n = result.get("nextCursor"), n + 1
    if not cursor:
        break
print(json.dumps({t["name"]: t["inputSchema"] for t in tools}))
proc.stdin.close()
proc.wait(timeout=10)
