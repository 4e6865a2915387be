"""An MCP server on the official Python SDK (the `mcp` package), for switchboard's tests.

`python py_server.py` serves stdio; `python py_server.py streamable-http PORT` and
`python py_server.py sse PORT` serve HTTP on 127.0.0.1 (paths /mcp and /sse).
"""
import sys
from typing import Annotated

from pydantic import BaseModel

from mcp.server.mcpserver import Context, Elicit, ElicitationResult, ListRoots, MCPServer, Resolve, Sample
from mcp.types import SamplingMessage, TextContent

mcp = MCPServer("python-peer", instructions="A Python server used by switchboard's tests.")


@mcp.tool()
def multiply(a: float, b: float) -> float:
    """Multiplies two numbers."""
    return a * b


@mcp.tool()
def shout(text: str) -> str:
    """Upper-cases the text."""
    return text.upper()


@mcp.tool()
def label(labels: dict[str, str], note: str | None = None) -> str:
    """Sets labels (a map of any names to values): the schema the SDK makes for a dict."""
    return ", ".join(f"{k}={v}" for k, v in sorted(labels.items()))


@mcp.resource("py://greeting")
def greeting() -> str:
    """A fixed greeting."""
    return "hello from python"


@mcp.prompt()
def review(code: str) -> str:
    """Asks for a code review."""
    return f"Please review:\n{code}"


class Colour(BaseModel):
    colour: str = "teal"


def ask_colour():
    return Elicit("Which colour?", Colour)


@mcp.tool()
def favourite_colour(answer: Annotated[ElicitationResult[Colour], Resolve(ask_colour)]) -> str:
    """Asks the person for a colour (elicitation: a request of its own, or input_required on 2026-07-28)."""
    if answer.action == "accept":
        return f"colour: {answer.data.colour}"
    return f"no colour ({answer.action})"


def ask_roots():
    return ListRoots()


@mcp.tool()
def client_roots(roots: Annotated[object, Resolve(ask_roots)]) -> str:
    """Lists the client's roots."""
    return " ".join(str(r.uri) for r in roots.roots)


def ask_model(text: str):
    return Sample([SamplingMessage(role="user", content=TextContent(type="text", text=text))], max_tokens=50)


@mcp.tool()
def summarise(text: str, completion: Annotated[object, Resolve(ask_model)]) -> str:
    """Asks the client's model (sampling)."""
    return f"model said: {completion.content.text}"


@mcp.tool()
async def add_tool(name: str, ctx: Context) -> str:
    """Adds a tool called `name` and says the tool list changed."""
    def extra() -> str:
        return "extra"

    mcp.add_tool(extra, name=name, description="Added at run time.")
    await ctx.notify_tools_changed()
    try:
        await ctx.session.send_tool_list_changed()
    except Exception:
        pass  # 2026-07-28: no session; the listen stream carries it
    return "added"


@mcp.tool()
async def touch(uri: str, ctx: Context) -> str:
    """Says the resource `uri` changed."""
    await ctx.notify_resource_updated(uri)
    try:
        await ctx.session.send_resource_updated(uri)
    except Exception:
        pass
    return "touched"


if __name__ == "__main__":
    if len(sys.argv) >= 3 and sys.argv[1] in ("streamable-http", "sse"):
        mcp.run(sys.argv[1], host="127.0.0.1", port=int(sys.argv[2]))
    else:
        mcp.run("stdio")
