"""Realistic elizaOS-shaped trajectories from a seed: the bundled sample days and benchmark inputs.

Each trajectory is one agent turn as elizaOS records it: a should-respond decision (sometimes with
context routing), a planner call with `<actions>` XML, a reply, and now and then a media description.
Some carry credentials or `@handles` the way real chat logs do, so the privacy filter has work to do.

Every label follows from the conversation, so a prompt can learn it and a scorer can tell a decision
from a guess (a random label can only be matched by always giving the commonest one):

- should_respond: RESPOND when the last message speaks to Eliza by name, STOP when it asks her to stop,
  IGNORE when it is for someone else or for nobody (the commonest answer is RESPOND, about half).
- context_routing: the primary context is the topic's (billing for a refund, engineering for a failed
  deploy, …; social for chit-chat); the evidence is the last message's turn number.
- action_planner: the action is the request's intent: "create a task" → CREATE_TASK, "what do the docs
  say" → SEARCH_KNOWLEDGE, "tell @bob" → SEND_MESSAGE, "follow this room" → FOLLOW_ROOM, a question →
  REPLY.
- response: says what was done about what was asked (the topic, the person messaged, the fact found).
- media_description: describes the image its caption names.

The elizaOS export contract is untouched: the same call shapes, purposes and tags pick the tasks.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

from training_pipeline import jscompat

_USERS = ("alice", "bob", "carol", "dana", "erin", "frank", "grace", "heidi")
#: (topic, its context, what the docs say about it)
_TOPICS = (
    ("the deployment failing on staging", "engineering", "a failed deploy is retried with `make redeploy`"),
    ("a bug in the Telegram bridge", "engineering", "bridge bugs go to the #bridge channel with logs"),
    ("rotating the API credentials", "engineering", "credentials are rotated every 90 days from the vault"),
    ("a refund for order 4411", "billing", "refunds are approved within five working days"),
    ("the new pricing page", "billing", "the pricing page is edited in the marketing repository"),
    ("the March invoice", "billing", "invoices can be re-issued from the billing portal"),
    ("tomorrow's standup", "general", "the standup is at 9:30 in the main room"),
    ("moving the meeting to Friday", "general", "meetings are moved by editing the team calendar"),
    ("the quarterly report", "general", "the quarterly report is due on the 10th"),
    ("onboarding a new contributor", "support", "new contributors start with the CONTRIBUTING guide"),
    ("resetting my password", "support", "passwords are reset from the login page's link"),
)
_ACTIONS = ("REPLY", "IGNORE", "SEND_MESSAGE", "SEARCH_KNOWLEDGE", "CREATE_TASK", "FOLLOW_ROOM")
#: what a request addressed to Eliza asks for, per action: the wordings a user writes it in
_REQUESTS = {
    "REPLY": (
        "Eliza, what's the status of {topic}?",
        "hey Eliza, can you explain {topic}?",
        "@eliza any news on {topic}?",
    ),
    "CREATE_TASK": (
        "Eliza, please create a task for {topic}",
        "@eliza add a ticket so someone follows up on {topic}",
        "Eliza, open a task about {topic} and assign it to the team",
    ),
    "SEARCH_KNOWLEDGE": (
        "Eliza, what do the docs say about {topic}?",
        "@eliza search the knowledge base for {topic}",
        "Eliza, look up our notes on {topic}",
    ),
    "SEND_MESSAGE": (
        "Eliza, tell @{other} about {topic}",
        "@eliza message @{other} that {topic} needs a look",
        "Eliza, please let @{other} know about {topic}",
    ),
    "FOLLOW_ROOM": (
        "Eliza, follow this room for updates on {topic}",
        "@eliza please keep watching this channel for {topic}",
    ),
}
_STOPS = (
    "Eliza, stop replying here please",
    "@eliza that's enough, please be quiet",
    "Eliza, stop, we've got it from here",
)
#: messages for someone else, or for nobody
_ASIDES = (
    "@{other} did you see the thread about {topic}?",
    "{other}, can you look at {topic} after lunch?",
    "I tried again and {topic} is still a problem",
    "thanks all, that fixed it",
    "lol same",
    "brb, grabbing coffee",
)
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
#: (caption, what the image shows)
_IMAGES = (
    ("staging is down again", "A screenshot of the staging dashboard with a red error banner at the top."),
    ("new pricing mockup", "A pricing page mockup with three plan columns and the middle one highlighted."),
    ("our team at the meetup", "A photo of about a dozen people smiling in front of a projector screen."),
    ("the invoice that looks wrong", "A scanned invoice with one line item circled in red."),
    ("this stack trace", "A terminal window showing a Python stack trace that ends in a KeyError."),
    ("whiteboard from the standup", "A whiteboard covered in sticky notes sorted into three columns."),
    ("my cat approves the release", "A grey cat sitting on a laptop keyboard next to a coffee mug."),
    ("revenue chart for the report", "A bar chart of monthly revenue rising from left to right."),
)
_CHANNELS = ("general", "support", "dev", "random")


def _token(rng: random.Random, n: int = 28) -> str:
    return "".join(rng.choice("abcdefghijkmnopqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ23456789") for _ in range(n))


def _secret(rng: random.Random) -> str:
    template = rng.choice(_SECRETS)
    return template.format(
        r=_token(rng), R16="".join(rng.choice("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567") for _ in range(16))
    )


def _with_key(rng: random.Random, text: str) -> str:
    return text + (f" (here is my key {_secret(rng)} if you need it)" if rng.random() < 0.12 else "")


def _other(rng: random.Random, user: str) -> str:
    return rng.choice([name for name in _USERS if name != user])


def _chatter(rng: random.Random, user: str) -> str:
    """An earlier line of the room: never addressed to Eliza, so only the last line decides."""
    topic = rng.choice(_TOPICS)[0]
    return f"{user}: " + _with_key(rng, rng.choice(_ASIDES).format(other=_other(rng, user), topic=topic))


def _turn(rng: random.Random, user: str) -> dict[str, Any]:
    """The last message and every label that follows from it."""
    topic, context, fact = rng.choice(_TOPICS)
    other = _other(rng, user)
    roll = rng.random()
    if roll < 0.5:
        action = rng.choice(tuple(_REQUESTS))
        decision, text = "RESPOND", rng.choice(_REQUESTS[action])
        reasoning = f"{user} asked Eliza directly"
    elif roll < 0.58:
        action, decision, text, context = None, "STOP", rng.choice(_STOPS), "social"
        reasoning = f"{user} asked Eliza to stop"
    else:
        action, decision, text = None, "IGNORE", rng.choice(_ASIDES)
        reasoning = f"{user} was not talking to Eliza"
        if "{topic}" not in text:
            context = "social"
    return {
        "topic": topic,
        "context": context,
        "fact": fact,
        "other": other,
        "action": action,
        "decision": decision,
        "reasoning": reasoning,
        "text": _with_key(rng, text.format(topic=topic, other=other)),
    }


def _reply(user: str, turn: dict[str, Any]) -> str:
    topic, other = turn["topic"], turn["other"]
    return {
        "REPLY": f"Hi {user}! On {topic}: {turn['fact']}.",
        "CREATE_TASK": f"Done, {user}: I created a task for {topic} and assigned it to the team.",
        "SEARCH_KNOWLEDGE": f"{user}, the docs say {turn['fact']}.",
        "SEND_MESSAGE": f"Sure {user}, I sent @{other} a message about {topic}.",
        "FOLLOW_ROOM": f"OK {user}, I'm following this room and will post updates on {topic}.",
    }[turn["action"]]


def trajectory(rng: random.Random, start_ms: int, index: int, agent: str = "agent-eliza") -> dict[str, Any]:
    user = rng.choice(_USERS)
    earlier = rng.randint(1, 5) * (20 if rng.random() < 0.03 else 1)
    lines = [_chatter(rng, rng.choice(_USERS)) for _ in range(earlier)]
    turn = _turn(rng, user)
    lines.append(f"{user}: {turn['text']}")
    history = "\n".join(lines)
    t = start_ms
    calls: list[dict[str, Any]] = []
    routed = rng.random() < 0.4
    decision = turn["decision"]
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
        "response": f"<response><name>Eliza</name><reasoning>{turn['reasoning']}</reasoning>"
        f"<action>{decision}</action></response>"
        + (
            f"\nprimaryContext: {turn['context']}\nsecondaryContexts: []\nevidenceTurnIds: [{len(lines)}]"
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
        action = turn["action"]
        calls.append(
            {
                "callId": f"call-{index}-1",
                "timestamp": t + 900,
                "model": "gpt-4o",
                "systemPrompt": f"You are Eliza. Available actions: {', '.join(_ACTIONS)}.",
                "userPrompt": f"{history}\n\nPlan the next step.",
                "response": f"<thought>{user} wants {action.lower().replace('_', ' ')} on {turn['topic']}"
                f"</thought><actions>{action}</actions><providers>RECENT_MESSAGES</providers>",
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
                "response": _reply(user, turn),
                "purpose": "response",
                "metadata": {"modelType": "TEXT_LARGE"},
            }
        )
    if rng.random() < 0.25:
        caption, description = rng.choice(_IMAGES)
        channel = rng.choice(_CHANNELS)
        calls.append(
            {
                "callId": f"call-{index}-3",
                "timestamp": t + 2500,
                "model": "gpt-4o",
                "systemPrompt": "Describe the attached image for someone who cannot see it.",
                "userPrompt": f'Image posted by {user} in #{channel} with the caption "{caption}".',
                "response": description,
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
