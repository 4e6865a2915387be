"""The Python SDK's client (`mcp` from PyPI) through `switchboard gateway`, over stdio or
Streamable HTTP. Prints one JSON line of what it saw; exits non-zero on error.

    python py_client.py stdio <switchboard> <args...>
    python py_client.py http <url> <token>
"""

import sys

import anyio
from gateway_client import report
from mcp import ClientSession, types

seen = {"logs": [], "progress": [], "tools_changed": 0}


async def on_elicit(context, params):
    return types.ElicitResult(action="accept", content={"name": "Ada"})


async def on_log(params):
    seen["logs"].append({"logger": params.logger, "level": params.level})


async def on_message(message):
    if isinstance(message, types.ServerNotification) and isinstance(message, types.ToolListChangedNotification):
        seen["tools_changed"] += 1
    elif getattr(message, "method", None) == "notifications/tools/list_changed":
        seen["tools_changed"] += 1
    elif getattr(getattr(message, "root", None), "method", None) == "notifications/tools/list_changed":
        seen["tools_changed"] += 1


async def run(read, write, out):
    async with ClientSession(
        read, write, elicitation_callback=on_elicit, logging_callback=on_log, message_handler=on_message
    ) as session:
        init = await session.initialize()
        out["server"] = init.server_info.name if hasattr(init, "server_info") else init.serverInfo.name
        await session.set_logging_level("debug")
        # The gateway's first list waits 5 s at most for servers still starting (a loaded
        # machine can start the fixture later): list again until its tools are there, within 20 s.
        wanted = ["fx__add", "fx__slow", "fx__ask"]
        deadline = anyio.current_time() + 20
        while True:
            tools = [t.name for t in (await session.list_tools()).tools]
            if all(n in tools for n in wanted) or anyio.current_time() > deadline:
                break
            await anyio.sleep(0.2)
        out["tools"] = len(tools)
        out["has"] = all(n in tools for n in wanted)
        r = await session.call_tool("fx__add", {"a": 2, "b": 3})
        sc = getattr(r, "structured_content", None) or getattr(r, "structuredContent", None) or {}
        out["sum"] = sc.get("sum")

        async def progress(p, total, message):
            seen["progress"].append(p)

        r = await session.call_tool("fx__slow", {"ms": 20, "steps": 3}, progress_callback=progress)
        out["slow"] = r.content[0].text
        r = await session.call_tool("fx__ask", {})
        out["ask"] = r.content[0].text
        before = seen["tools_changed"]
        await session.call_tool("fx__mutate", {})
        with anyio.move_on_after(10):
            while seen["tools_changed"] == before:
                await anyio.sleep(0.05)
        out["added"] = any(t.name == "fx__added_0" for t in (await session.list_tools()).tools)
        out["seen"] = seen


report(sys.argv[1], sys.argv[2:], run)
