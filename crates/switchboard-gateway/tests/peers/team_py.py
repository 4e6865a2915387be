"""The Python SDK's client (`mcp` from PyPI) as a caller of a team's gateway whose own upstream
needs them to sign in: a call of it gets `-32042` (the SDK's MCPError with the elicitations in
its data), its list has the gateway's `sign_in`; the sign-in URL is opened by the browser
script (`signin_cli.mjs`, as <login> at the upstream's provider), then the call goes through.

    python team_py.py http <gateway /mcp URL> <token> <node> <signin_cli.mjs> <login> <tool>
"""

import json
import subprocess
import sys

import anyio
from gateway_client import report
from mcp import ClientSession
from mcp.shared.exceptions import MCPError


async def run(read, write, out):
    url, _token, node, script, login, tool = sys.argv[2:8]
    async with ClientSession(read, write) as session:
        init = await session.initialize()
        out["protocol"] = init.protocol_version if hasattr(init, "protocol_version") else init.protocolVersion
        out["tools_before"] = [t.name for t in (await session.list_tools()).tools]
        try:
            await session.call_tool(tool, {})
            out["first"] = "ok"
            return
        except MCPError as e:
            out["first"] = {"code": e.code, "message": e.message}
            elicitation = (e.data or {}).get("elicitations", [{}])[0]
        out["elicitation_mode"] = elicitation.get("mode")
        callback = url.rsplit("/mcp", 1)[0] + "/oauth/callback"
        done = subprocess.run([node, script, elicitation["url"], login, callback], capture_output=True, text=True)
        out["landed"] = json.loads(done.stdout.strip().splitlines()[-1]) if done.stdout.strip() else done.stderr[-400:]
        deadline = anyio.current_time() + 20
        while anyio.current_time() < deadline:
            tools = [t.name for t in (await session.list_tools()).tools]
            if tool in tools:
                break
            await anyio.sleep(0.2)
        out["tools_after"] = tools
        result = await session.call_tool(tool, {})
        out["then"] = json.loads(result.content[0].text)


report("http", sys.argv[2:4], run)
