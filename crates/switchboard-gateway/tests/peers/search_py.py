"""The Python SDK's client (`mcp` from PyPI) using `switchboard gateway --tool-search on` as a
model would: list, search, describe, call through `call_tool`. Prints one JSON line.

    python search_py.py <switchboard> <args...>
"""

import json
import sys

import anyio
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client


def text(result):
    return "".join(getattr(c, "text", "") for c in result.content)


def structured(result):
    return getattr(result, "structured_content", None) or getattr(result, "structuredContent", None) or {}


def is_error(result):
    return bool(getattr(result, "is_error", None) or getattr(result, "isError", None))


async def main():
    params = StdioServerParameters(command=sys.argv[1], args=sys.argv[2:])
    out = {}
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            out["listed"] = [t.name for t in (await session.list_tools()).tools]
            found = await session.call_tool("search_tools", {"query": "add two numbers", "limit": 3})
            out["found"] = [t["name"] for t in structured(found).get("tools", [])]
            out["total"] = structured(found).get("total")
            described = await session.call_tool("describe_tools", {"names": out["found"][:1]})
            out["described"] = structured(described).get("tools", [])
            called = await session.call_tool("call_tool", {"name": "fx__add", "arguments": {"a": 2, "b": 40}})
            out["called"] = {"isError": is_error(called), "structured": structured(called)}
            denied = await session.call_tool("call_tool", {"name": "fx__crash", "arguments": {}})
            out["denied"] = {"isError": is_error(denied), "text": text(denied)}
    print(json.dumps(out))


anyio.run(main)
