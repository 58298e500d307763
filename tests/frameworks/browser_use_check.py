"""browser-use 0.13.14 beside Unmodal, no language model: what tests/tests/browser_use.rs runs.

Each mode attaches a BrowserSession to a running browser's DevTools URL (as the recipe in
docs/frameworks.md does), acts the way browser-use's agent acts (NavigateToUrlEvent, then a
ClickElementEvent on an element from get_browser_state_summary), and prints what it found as
one JSON line on stdout.

  click CDP_URL PAGE_URL [--leave-dialogs-to-unmodal]
  download CDP_URL PAGE_URL [--leave-downloads-to-the-browser]
  mcp UNMODAL [ARG ...]
"""

import asyncio
import json
import sys
import time


def leave_dialogs_to_unmodal():
    """browser-use accepts every alert, confirm and beforeunload and dismisses every prompt
    (browser/watchdogs/popups_watchdog.py), with no setting to turn it off. This keeps its
    watchdog from registering its handler, so Unmodal's rules and holds decide instead.
    Call it before the BrowserSession starts."""
    from browser_use.browser.watchdogs.popups_watchdog import PopupsWatchdog

    async def on_TabCreatedEvent(self, event):  # noqa: N802 (browser-use's handler name)
        return None

    PopupsWatchdog.on_TabCreatedEvent = on_TabCreatedEvent


async def attach(cdp_url, **kwargs):
    from browser_use import BrowserSession

    session = BrowserSession(cdp_url=cdp_url, **kwargs)
    await session.start()
    return session


async def page_text(session, expression):
    cdp = await session.get_or_create_cdp_session()
    r = await cdp.cdp_client.send.Runtime.evaluate(
        params={"expression": expression, "returnByValue": True}, session_id=cdp.session_id
    )
    return r.get("result", {}).get("value")


async def click_text(session, text):
    """Clicks the interactive element whose text is `text`, as the agent picks one."""
    from browser_use.browser.events import ClickElementEvent

    state = await session.get_browser_state_summary(include_screenshot=False)
    for node in state.dom_state.selector_map.values():
        if node.get_all_children_text().strip() == text:
            event = session.event_bus.dispatch(ClickElementEvent(node=node))
            await event
            return state
    raise SystemExit(f"no element {text!r} among {len(state.dom_state.selector_map)}")


async def wait_for(session, expression, limit):
    """The value of `expression` once it is no longer 'none' (or 'none' after `limit` s)."""
    deadline = time.monotonic() + limit
    while True:
        value = await page_text(session, expression)
        if value != "none" or time.monotonic() > deadline:
            return value
        await asyncio.sleep(0.05)


async def click(cdp_url, page_url, *flags):
    from browser_use.browser.events import NavigateToUrlEvent

    if "--leave-dialogs-to-unmodal" in flags:
        leave_dialogs_to_unmodal()
    session = await attach(cdp_url)
    try:
        await session.event_bus.dispatch(NavigateToUrlEvent(url=page_url))
        await click_text(session, "Delete")
        print(json.dumps({"clicked": True}), flush=True)
        out = await wait_for(session, "document.querySelector('#out').textContent", 60)
        after = await session.get_browser_state_summary(include_screenshot=False)
        print(json.dumps({"out": out, "closed_popup_messages": after.closed_popup_messages}), flush=True)
    finally:
        await session.stop()


async def download(cdp_url, page_url, *flags):
    """`--leave-downloads-to-the-browser`: downloads_path='' (browser-use then leaves the
    browser's download behaviour alone; Unmodal's record and rules apply)."""
    from browser_use.browser.events import NavigateToUrlEvent

    leave = "--leave-downloads-to-the-browser" in flags
    session = await attach(cdp_url, **({"downloads_path": ""} if leave else {}))
    try:
        path = str(session.browser_profile.downloads_path or "")
        await session.event_bus.dispatch(NavigateToUrlEvent(url=page_url))
        await click_text(session, "Get the report")
        deadline = time.monotonic() + 30
        import os

        while path and not os.path.exists(os.path.join(path, "report.txt")) and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        files = sorted(os.listdir(path)) if os.path.isdir(path) else []
        print(json.dumps({"downloads_path": path, "files": files}), flush=True)
    finally:
        await session.stop()


async def mcp(command, *args):
    """browser-use's own MCPClient on `unmodal mcp`: lists the tools, registers them as the
    agent's actions (Agent(tools=...) takes them so), and runs one through the registry."""
    from browser_use import Tools
    from browser_use.mcp.client import MCPClient

    import os

    # The MCP SDK starts the server with a few safe variables only: pass Unmodal's own on.
    env = {k: v for k, v in os.environ.items() if k.startswith("UNMODAL_")}
    client = MCPClient(server_name="unmodal", command=command, args=list(args), env=env or None)
    await client.connect()
    try:
        tools = Tools()
        await client.register_to_tools(tools)
        listed = sorted(client._tools.keys())
        result = await tools.registry.execute_action("observe", {"what": "tabs"})
        rule = await tools.registry.execute_action("interact", {"action": "handle_dialog", "status": True})
        print(
            json.dumps(
                {
                    "tools": listed,
                    "observe": {"error": result.error, "content": result.extracted_content},
                    "interact": {"error": rule.error, "content": rule.extracted_content},
                }
            ),
            flush=True,
        )
    finally:
        await client.disconnect()


if __name__ == "__main__":
    mode, *rest = sys.argv[1:]
    asyncio.run({"click": click, "download": download, "mcp": mcp}[mode](*rest))
