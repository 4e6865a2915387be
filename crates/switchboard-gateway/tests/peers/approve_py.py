"""The Python SDK's client answering switchboard's approval questions, as approve_sdk1.mjs.

    python approve_py.py <answers> stdio <switchboard> <args...>
"""

import json
import os
import sys

import anyio
from mcp import ClientSession, StdioServerParameters, types
from mcp.client.stdio import stdio_client

answers_arg = sys.argv[1]
elicits = answers_arg != "none"
answers = answers_arg.split(",") if elicits else ["-"]
asked = []


async def on_elicit(context, params):
    decision = answers[len(asked)] if len(asked) < len(answers) else "deny"
    schema = params.requestedSchema if hasattr(params, "requestedSchema") else params.requested_schema
    choices = [f"{c['const']}={c['title']}" for c in schema["properties"]["decision"].get("oneOf", [])]
    asked.append({"message": params.message, "choices": choices, "decision": decision})
    return types.ElicitResult(action="accept", content={"decision": decision})


def text(r):
    is_error = getattr(r, "is_error", None) or getattr(r, "isError", None)
    return {"isError": bool(is_error), "text": r.content[0].text if r.content else None}


async def main():
    command, *args = sys.argv[3:]
    out = {"calls": []}
    params = StdioServerParameters(command=command, args=args, env=dict(os.environ))
    try:
        async with stdio_client(params) as (read, write):
            kwargs = {"elicitation_callback": on_elicit} if elicits else {}
            async with ClientSession(read, write, **kwargs) as session:
                await session.initialize()
                for i in range(len(answers)):
                    out["calls"].append(text(await session.call_tool("fx__echo", {"text": f"call {i}"})))
                out["denied"] = text(await session.call_tool("fx__crash", {}))
                out["invalid"] = text(await session.call_tool("fx__add", {"a": "two", "b": 3}))
    except Exception as e:  # noqa: BLE001
        out["error"] = repr(e)
    out["asked"] = asked
    print(json.dumps(out))
    sys.exit(1 if "error" in out else 0)


anyio.run(main)
