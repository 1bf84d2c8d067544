"""A scripted email agent for the fake chat server: it lists the inbox, reads Dana's email, replies to
it, then says it is done, by real tool calls. Deterministic, so task runs can be asserted exactly."""

from __future__ import annotations

import json
from typing import Any


def tool_call(name: str, arguments: dict[str, Any], number: int) -> dict[str, Any]:
    return {
        "tool_calls": [
            {
                "id": f"call_{number}",
                "type": "function",
                "function": {"name": name, "arguments": json.dumps(arguments)},
            }
        ]
    }


def email_agent(body: dict[str, Any], reply_text: str = "Yes, the launch is still on Thursday.") -> dict:
    messages = body["messages"]
    if body.get("response_format"):  # a rubrics judge
        return {
            "content": json.dumps(
                {
                    "results": [
                        {"index": 1, "passed": True, "reason": "ok"},
                        {"index": 2, "passed": True, "reason": "ok"},
                    ]
                }
            )
        }
    tool_results = [m for m in messages if m["role"] == "tool"]
    step = len(tool_results)
    if "Do not send" in messages[1]["content"]:  # the summary prompt: read-only
        if step == 0:
            return tool_call("list_emails", {"folder": "inbox"}, 1)
        return {"content": "Dana asked about the launch date; a newsletter sent gardening tips."}
    if step == 0:
        return tool_call("list_emails", {"folder": "inbox"}, 1)
    if step == 1:
        inbox = json.loads(tool_results[0]["content"])
        dana = next(e for e in inbox if e["from"] == "dana@example.com")
        return tool_call("read_email", {"email_id": dana["id"]}, 2)
    if step == 2:
        email = json.loads(tool_results[1]["content"])
        return tool_call("reply_email", {"email_id": email["id"], "body": reply_text}, 3)
    return {"content": f"I replied to Dana: {reply_text}"}
