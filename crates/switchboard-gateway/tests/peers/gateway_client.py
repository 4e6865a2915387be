"""What the Python client scripts share: the transport to `switchboard gateway` (`stdio
<switchboard> <args...>` or `http <url> <token>`), and one JSON line of what the client saw
(with `error` and a non-zero exit when something failed).
"""

import json
import os
import sys
import traceback

import anyio
from mcp import StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client


async def _connect(mode, rest, run, out):
    if mode == "stdio":
        params = StdioServerParameters(command=rest[0], args=rest[1:], env=dict(os.environ))
        async with stdio_client(params) as (read, write):
            await run(read, write, out)
    else:
        url, token = rest
        client = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
        async with client, streamable_http_client(url, http_client=client) as streams:
            await run(streams[0], streams[1], out)


def report(mode, rest, run):
    """Runs `run(read, write, out)` over the transport; prints `out` as one JSON line."""
    out = {}

    async def main():
        await _connect(mode, rest, run, out)

    try:
        anyio.run(main)
    except BaseException as e:  # noqa: BLE001 - the test reads what failed
        out["error"] = repr(e)
        traceback.print_exception(e, file=sys.stderr)
        print(json.dumps(out, default=str))
        sys.exit(1)
    print(json.dumps(out, default=str))
