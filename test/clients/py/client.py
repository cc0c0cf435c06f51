"""A real MCP client of kiln: the official Python SDK (PyPI mcp, scripts/requirements-mcp.txt), driven by
test/mcp-revisions.test.mjs. One run connects once and goes through every check, printing one JSON report on
stdout; the test asserts on it (and on what the server did: files, audit lines).

  client.py stdio <mode> <kiln.toml> <marker dir>
  client.py http <mode> <url> <token> <marker dir>

<mode>: "legacy" (2025-11-25, initialize) or "2026-07-28" (no handshake, the envelope on every request).
"""

import json
import os
import sys

import anyio
import httpx2
import mcp_types as types
from mcp.client.client import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

KILN = os.path.join(os.path.dirname(__file__), "..", "..", "..", "bin", "kiln.js")


def text_of(result):
    return "".join(c.text for c in result.content if getattr(c, "type", None) == "text")


async def main():
    kind, mode = sys.argv[1], sys.argv[2]
    if kind == "stdio":
        config, markers = sys.argv[3], sys.argv[4]
        server = StdioServerParameters(command=os.environ.get("KILN_NODE", "node"), args=[KILN, "mcp", "--config", config])
        http = None
    else:
        url, token, markers = sys.argv[3], sys.argv[4], sys.argv[5]
        http = httpx2.AsyncClient(headers={"authorization": f"Bearer {token}"}, timeout=httpx2.Timeout(120.0))
        server = None

    questions = []
    answers = []

    async def elicit(_ctx, params):
        questions.append({"message": params.message, "schema": params.requested_schema})
        action = answers.pop(0)
        if action == "accept":
            return types.ElicitResult(action="accept", content={"allow": "once"})
        return types.ElicitResult(action=action)

    report = {}

    async def run(client):
        report["protocolVersion"] = client.protocol_version
        # list, page by page (the server's [mcp] pageSize is small)
        names, pages, cursor = [], 0, None
        while True:
            page = await client.list_tools(cursor=cursor)
            pages += 1
            names += [t.name for t in page.tools]
            cursor = page.next_cursor
            if cursor is None or pages > 50:
                break
        report["list"] = {"names": names, "pages": pages}

        r = await client.call_tool("rev.echo", {"x": 1, "y": "two"})
        report["call"] = {"isError": bool(r.is_error), "structured": r.structured_content, "text": text_of(r)}

        r = await client.call_tool("rev.fail", {})
        report["error"] = {"isError": bool(r.is_error), "text": text_of(r)}

        seen = []

        async def on_progress(progress, total, message):
            seen.append({"progress": progress, "total": total, "message": message})

        r = await client.call_tool("rev.progress", {"n": 3}, progress_callback=on_progress)
        report["progress"] = {"isError": bool(r.is_error), "structured": r.structured_content, "updates": seen}

        # cancel: the call reports once, then waits; the client cancels it after that report
        started = anyio.Event()

        async def on_wait_progress(progress, total, message):
            started.set()

        cancelled = {"by": None}
        async with anyio.create_task_group() as tg:

            async def waiter():
                with anyio.CancelScope() as scope:
                    cancelled["scope"] = scope
                    await client.call_tool("rev.wait", {}, progress_callback=on_wait_progress)
                    cancelled["by"] = "returned"

            tg.start_soon(waiter)
            with anyio.fail_after(60):
                await started.wait()
            cancelled["scope"].cancel()
        report["cancel"] = {"returned": cancelled["by"] == "returned"}

        # approvals: accept, then decline (the server's [approvals] preset is "strict")
        answers.extend(["accept", "decline"])
        accepted = await client.call_tool("rev.touch", {"path": os.path.join(markers, "accepted")})
        declined = await client.call_tool("rev.touch", {"path": os.path.join(markers, "declined")})
        report["approvals"] = {"accepted": text_of(accepted), "declined": text_of(declined), "questions": questions}

        # a session the client names carries state from call to call; one it does not name, as the transport has it
        named = [(await client.call_tool("rev.count", {}, meta={"session": "py-work"})).structured_content["n"] for _ in range(2)]
        unnamed = [(await client.call_tool("rev.count", {})).structured_content["n"] for _ in range(2)]
        report["sessions"] = {"named": named, "unnamed": unnamed}

    kwargs = dict(mode=mode, elicitation_callback=elicit, read_timeout_seconds=120)
    if kind == "stdio":
        async with Client(server, **kwargs) as client:
            await run(client)
    else:
        async with http:
            async with Client(streamable_http_client(url, http_client=http), **kwargs) as client:
                await run(client)
    print(json.dumps(report))


anyio.run(main)
