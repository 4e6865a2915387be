"""The Python SDK's client (`mcp` from PyPI, the era it negotiates) as one agent at a gateway of
several replicas behind a load balancer: calls `fx__echo` with a counter for <seconds>, and every
7th call `fx__ask` (its upstream asks a question in the middle of the call; the answer is a name
the result must repeat), subscribed all along to a resource of server-everything (`ev`, whose
updates the test turns on). Writes `started` on stderr once connected; reports calls ok and
failed, each failure's message, how many questions came, when each update came.

    python replica_py.py http <gateway /mcp URL> <token> <seconds>
"""

import sys
import time

import mcp.types as types
from gateway_client import report
from mcp import ClientSession


async def run(read, write, out):
    seconds = float(sys.argv[4])
    out.update({"ok": 0, "failed": 0, "failures": [], "asked": 0, "updates": []})
    state = {"name": "", "n": 0, "uri": None}

    async def on_message(message):
        m = getattr(message, "root", message)
        params = getattr(m, "params", None)
        if getattr(m, "method", "") == "notifications/resources/updated" and str(getattr(params, "uri", "")) == state["uri"]:
            out["updates"].append(int(time.time() * 1000))

    async def on_elicit(_context, _params):
        out["asked"] += 1
        state["name"] = f"person-{state['n']}"
        return types.ElicitResult(action="accept", content={"name": state["name"]})

    info = types.Implementation(name="replica-py", version="1.0.0")
    async with ClientSession(
        read, write, elicitation_callback=on_elicit, message_handler=on_message, client_info=info
    ) as session:
        init = await session.initialize()
        out["protocol"] = getattr(init, "protocol_version", None) or getattr(init, "protocolVersion", None)
        listed = await session.list_resources()
        uris = [str(r.uri) for r in listed.resources if str(r.uri).startswith("demo://")]
        if not uris:
            raise RuntimeError(f"no resource of server-everything: {listed}")
        state["uri"] = out["uri"] = uris[0]
        await session.subscribe_resource(uris[0])
        sys.stderr.write("started\n")
        sys.stderr.flush()
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            state["n"] += 1
            n = state["n"]
            ask = n % 7 == 0
            try:
                if ask:
                    result = await session.call_tool("fx__ask", {})
                else:
                    result = await session.call_tool("fx__echo", {"text": f"call {n}"})
                text = "\n".join(c.text for c in result.content if getattr(c, "type", "") == "text")
                want = state["name"] if ask else f"call {n}"
                if getattr(result, "is_error", None) or getattr(result, "isError", None) or want not in text:
                    raise RuntimeError(f"unexpected result: {text[:300]}")
                out["ok"] += 1
            except Exception as e:  # noqa: BLE001 - counted and reported
                out["failed"] += 1
                if len(out["failures"]) < 20:
                    out["failures"].append(f"call {n}{' (ask)' if ask else ''}: {e!r}"[:400])


report("http", sys.argv[2:4], run)
