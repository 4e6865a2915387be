"""The Python SDK's client (`mcp` from PyPI) through `switchboard gateway`, against a poisoned
upstream, over stdio or Streamable HTTP: prints one JSON line with what a model would be given
(as screen_client.mjs does), so the test can check that no hidden character reached it and that
a tool with a denied finding is neither listed nor called. Exits non-zero on error.

    python screen_py.py <text to echo> stdio <switchboard> <args...>
    python screen_py.py <text to echo> http <url> <token>
"""

import json
import sys

import anyio
from gateway_client import report
from mcp import ClientSession


def texts(result):
    return "".join(getattr(c, "text", "") for c in result.content)


async def run(read, write, text, out):
    async with ClientSession(read, write) as session:
        init = await session.initialize()
        out["protocol"] = str(getattr(init, "protocol_version", None) or getattr(init, "protocolVersion", None))
        out["instructions"] = init.instructions
        deadline = anyio.current_time() + 20
        while True:
            tools = (await session.list_tools()).tools
            if any(t.name == "fx__echo" for t in tools) or anyio.current_time() > deadline:
                break
            await anyio.sleep(0.2)
        out["definitions"] = [t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in tools]
        out["tools"] = [t.name for t in tools]
        try:
            r = await session.call_tool("fx__summarize", {})
            is_error = getattr(r, "is_error", None) or getattr(r, "isError", None)
            out["summarize"] = {"isError": bool(is_error), "text": texts(r)}
        except Exception as e:  # noqa: BLE001 - an unknown tool is a JSON-RPC error
            out["summarize"] = {"error": str(e)}
        r = await session.call_tool("fx__echo", {"text": text})
        out["result"] = texts(r)
        read_out = await session.read_resource("switchboard://servers")
        out["servers"] = "".join(getattr(c, "text", "") for c in read_out.contents)
        try:
            fx = [s for s in json.loads(out["servers"])["servers"] if s["name"] == "fx"]
            out["upstream"] = fx[0]["status"].get("protocol_version") if fx else None
        except (ValueError, KeyError):
            out["upstream"] = None


report(sys.argv[2], sys.argv[3:], lambda read, write, out: run(read, write, sys.argv[1], out))
