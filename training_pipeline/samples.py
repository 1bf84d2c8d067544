"""Realistic elizaOS-shaped trajectories from a seed: the bundled sample days and benchmark inputs.

Each trajectory is one agent turn as elizaOS records it: a should-respond decision (sometimes with
context routing), a planner call with `<actions>` XML, a reply, and now and then a media description.
Some carry credentials or `@handles` the way real chat logs do, so the privacy filter has work to do.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

from training_pipeline import jscompat

_USERS = ("alice", "bob", "carol", "dana", "erin", "frank", "grace", "heidi")
_TOPICS = (
    "the deployment failing on staging",
    "tomorrow's standup",
    "a refund for order 4411",
    "the new pricing page",
    "rotating the API credentials",
    "a bug in the Telegram bridge",
    "the quarterly report",
    "moving the meeting to Friday",
    "onboarding a new contributor",
)
_ACTIONS = ("REPLY", "IGNORE", "SEND_MESSAGE", "SEARCH_KNOWLEDGE", "CREATE_TASK", "FOLLOW_ROOM")
_SECRETS = (
    "sk-proj-{r}",
    "ghp_{r}",
    "AKIA{R16}",
    "Bearer {r}",
    "sk-ant-api03-{r}",
    "xoxb-123456789012-{r}",
    "glpat-{r}",
    "postgres://app:{r}@db.internal:5432/app",
)
_CONTEXTS = ("general", "support", "engineering", "billing", "social")


def _token(rng: random.Random, n: int = 28) -> str:
    return "".join(rng.choice("abcdefghijkmnopqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ23456789") for _ in range(n))


def _secret(rng: random.Random) -> str:
    template = rng.choice(_SECRETS)
    return template.format(
        r=_token(rng), R16="".join(rng.choice("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567") for _ in range(16))
    )


def _message(rng: random.Random, user: str) -> str:
    topic = rng.choice(_TOPICS)
    text = rng.choice(
        (
            f"hey, can someone help with {topic}?",
            f"@{rng.choice(_USERS)} do you know anything about {topic}",
            f"I tried again and {topic} is still a problem",
            f"quick question about {topic} — any update?",
        )
    )
    if rng.random() < 0.12:
        text += f" (here is my key {_secret(rng)} if you need it)"
    return f"{user}: {text}"


def _history(rng: random.Random, user: str, turns: int) -> str:
    lines = [_message(rng, rng.choice(_USERS)) for _ in range(turns - 1)]
    lines.append(_message(rng, user))
    return "\n".join(lines)


def trajectory(rng: random.Random, start_ms: int, index: int, agent: str = "agent-eliza") -> dict[str, Any]:
    user = rng.choice(_USERS)
    history = _history(rng, user, rng.randint(2, 6) * (20 if rng.random() < 0.03 else 1))
    t = start_ms
    calls: list[dict[str, Any]] = []
    routed = rng.random() < 0.4
    context = rng.choice(_CONTEXTS)
    decision = rng.choice(("RESPOND", "RESPOND", "IGNORE"))
    should_respond = {
        "callId": f"call-{index}-0",
        "timestamp": t,
        "model": "gpt-4o-mini",
        "systemPrompt": "You are Eliza, a helpful community agent. Decide whether to respond."
        + (
            "\ncontext_routing:\n- primaryContext: pick one context\ndecision_note: be brief"
            if routed
            else ""
        ),
        "userPrompt": f"# Conversation\n{history}\n\nShould Eliza respond to {user}?",
        "response": f"<response><name>Eliza</name><reasoning>{user} asked directly</reasoning>"
        f"<action>{decision}</action></response>"
        + (
            f"\nprimaryContext: {context}\nsecondaryContexts: []\nevidenceTurnIds: [{index}]"
            if routed
            else ""
        ),
        "purpose": rng.choice(("should_respond", "shouldRespond", "response_handler")),
        "stepType": "decision",
        "temperature": 0.0,
        "maxTokens": 256,
        "promptTokens": rng.randint(200, 900),
        "completionTokens": rng.randint(10, 60),
        "latencyMs": rng.randint(120, 900),
    }
    calls.append(should_respond)
    if decision == "RESPOND":
        action = rng.choice(_ACTIONS[:1] + _ACTIONS[2:])
        calls.append(
            {
                "callId": f"call-{index}-1",
                "timestamp": t + 900,
                "model": "gpt-4o",
                "systemPrompt": f"You are Eliza. Available actions: {', '.join(_ACTIONS)}.",
                "userPrompt": f"{history}\n\nPlan the next step.",
                "response": f"<thought>{user} needs help; I will {action.lower()}</thought>"
                f"<actions>{action}</actions><providers>RECENT_MESSAGES</providers>",
                "purpose": "action",
                "actionType": rng.choice(("actionPlanner", "planner")),
                "tags": ["runtime", "planner"],
                "promptTokens": rng.randint(400, 1500),
                "completionTokens": rng.randint(20, 120),
            }
        )
        calls.append(
            {
                "callId": f"call-{index}-2",
                "timestamp": t + 1900,
                "model": "gpt-4o",
                "systemPrompt": "You are Eliza, a concise and friendly assistant.",
                "userPrompt": f"{history}\n\nWrite Eliza's reply to {user}.",
                "response": rng.choice(
                    (
                        f"Hi {user}! I looked into it — can you share the error message?",
                        f"Thanks {user}, I've created a task so the team can follow up.",
                        f"Good question, {user}. The short answer is yes; details in the thread.",
                    )
                ),
                "purpose": "response",
                "metadata": {"modelType": "TEXT_LARGE"},
            }
        )
    if rng.random() < 0.1:
        calls.append(
            {
                "callId": f"call-{index}-3",
                "timestamp": t + 2500,
                "model": "gpt-4o",
                "systemPrompt": "Describe the attached image for someone who cannot see it.",
                "userPrompt": f"Image posted by {user} in #general.",
                "response": "A screenshot of a dashboard with a red error banner at the top.",
                "metadata": {"modelType": "IMAGE_DESCRIPTION"},
                "tags": ["describeImage"],
            }
        )
    return {
        "trajectoryId": f"traj-{start_ms}-{index:06d}",
        "agentId": agent,
        "source": rng.choice(("discord", "telegram", "slack")),
        "startTime": t,
        "endTime": t + 3000,
        "steps": [
            {"stepId": f"step-{index}-{n}", "timestamp": call["timestamp"], "kind": "llm", "llmCalls": [call]}
            for n, call in enumerate(calls)
        ],
        "metadata": {"roomId": f"room-{rng.randint(1, 12)}", "user": user},
    }


def day_of_trajectories(day: date, count: int, seed: int = 0) -> Iterator[dict[str, Any]]:
    """`count` trajectories spread over the UTC day `day`, in start-time order."""
    rng = random.Random(f"{seed}:{day.isoformat()}")
    base = int(datetime(day.year, day.month, day.day, tzinfo=UTC).timestamp() * 1000)
    starts = sorted(rng.randrange(0, 86_400_000 - 5_000) for _ in range(count))
    for index, offset in enumerate(starts):
        yield trajectory(rng, base + offset, index)


def write_long_sample(
    path: Path,
    count: int,
    secret: str = "tok-live-0f9e8d7c6b5a",
    target_bytes: int = 10_000,
    day: date = date(2026, 11, 1),
) -> None:
    """`count` trajectories of about `target_bytes` each, started on `day`, for benchmarks: the sample
    trajectories with each prompt's conversation history grown to a realistic length (credentials and
    handles included)."""
    rng = random.Random(7)
    filler = [
        f"{name}: {text}"
        for name in ("alice", "bob", "carol", "dana")
        for text in (
            "the staging deploy failed again, see the logs in #ops",
            "can we move the review to Thursday?",
            "I pushed a fix, tests are green now",
            f"my token is {secret} if needed",
            "ping @erin about the invoice",
            "lunch at 12?",
        )
    ]
    with path.open("w", encoding="utf-8") as out:
        for trajectory in day_of_trajectories(day, count, seed=11):
            calls = [c for s in trajectory["steps"] for c in s["llmCalls"]]
            while len(jscompat.dumps(trajectory)) < target_bytes:
                for call in calls:
                    call["userPrompt"] = rng.choice(filler) + "\n" + call["userPrompt"]
            out.write(jscompat.dumps(trajectory) + "\n")
