"""Inputs that pin the export contract to elizaOS, written to `cases/<name>/`.

Run `python tests/reference/generate_cases.py` then `bash tests/reference/update_expected.sh` (needs
node) to refresh `expected/` from the real elizaOS code; both inputs and expected outputs are committed
so the suite runs without node. Every case is deterministic (fixed seed).
"""

from __future__ import annotations

import json
import random
from pathlib import Path

HERE = Path(__file__).parent / "cases"
T0 = 1_795_000_000_000

HINT_VALUES = [
    "should_respond",
    "shouldRespond",
    "ShouldRespond",
    " SHOULD-RESPOND ",
    "shouldrespond",
    "response_handler",
    "responseHandler",
    "RESPONSE_HANDLER",
    "action_planner",
    "actionPlanner",
    "planner",
    "Planner",
    "action",
    "ACTION",
    "runtime_use_model",
    "runtimeUseModel",
    "media_description",
    "mediaDescription",
    "image_description",
    "imageDescription",
    "IMAGE_DESCRIPTION",
    "describe_image",
    "describeImage",
    "describe_audio",
    "describeAudio",
    "describe_video",
    "DESCRIBE_VIDEO",
    "response",
    "reply",
    "Reply",
    "message_response",
    "messageResponse",
    "TEXT_LARGE",
    "gpt-4o",
    "\ufeffreply\ufeff",
    "reply\u00a0",
    "\u2028planner",
    "\x1creply",
    "reply\x85",
    "re ply",
    "re-ply",
    "__reply__",
    "\u212aey",
    "\u0130reply",
    "action:planner",
    "plannerX",
    "xPlanner",
    "respond",
    "",
    "   ",
    "\u00e9reply",
    "shouldRespond2",
    "SHOULDrespond",
    "should__respond",
    "should respond",
]
TEXTS = [
    "You are Eliza.",
    "  padded with spaces  ",
    "\ufeffBOM wrapped\ufeff",
    "\u00a0nbsp\u00a0",
    "\x1c",
    "\x85",
    "\x1cfile separator\x1f",
    "tab\tand\nnewline",
    "line\u2028separator",
    "emoji 😀 text",
    "control \x00\x01\x07\x7f chars",
    'quote " and backslash \\',
    "lone \ud800 surrogate",
    "\u3000ideographic\u3000",
    "",
    "   ",
    "\ufeff",
    "\u180e",
    "\u200b zero width",
    "Thought: I will reply with text.",
    "Available Actions: REPLY, IGNORE",
    "use actionNames wisely",
    "avaılable actıons",
    "<ACTIONS>REPLY</ACTIONS>",
    "x\nactions: REPLY",
    "x\ractions: REPLY",
    "x\u2028actions: REPLY",
    "  actions: REPLY",
    "THOUGHT and TEXT",
    "\u017ftext thought",
    "texT THOUGHT",
]
ROUTING_RESPONSES = [
    "primaryContext: general",
    "ok\nprimaryContext: general\nsecondaryContexts: [a]\nevidenceTurnIds: [1, 2]\n\n\n\ndone",
    "ok\rprimaryContext: general",
    "ok\u2028secondaryContexts: x",
    "ok\u2029evidenceTurnIds: [3]",
    "<response><primaryContext>billing</primaryContext><secondaryContexts>a,b</secondaryContexts>"
    "<evidenceTurnIds>7</evidenceTurnIds><text>hi</text></response>",
    "<PRIMARYCONTEXT>x</primarycontext> tail",
    "<primaryContext>never closed",
    "<evidenceTurnIds>1</evidenceTurnIds>\n\n\n\n<evidenceTurnIds>2\n3</evidenceTurnIds>",
    " primaryContext: not at line start",
    "\n\n\nprimaryContext: a\n\n\n\n",
    "<primaryContext>a</primaryContext><primaryContext>b</primaryContext>",
]
ROUTING_PROMPTS = [
    "System\ncontext_routing: block\n- primaryContext: x\ndecision_note: keep",
    "System\ncontext_routing: a\ncontext_routing: b\ndecision_note: one\ndecision_note: two",
    "System\ncontext_routing: no end marker\n- primaryContext: stays?",
    "System\n- primaryContext: x\n- secondaryContexts: y\n- evidenceTurnIds: z\nend",
    "decision_note: before\ncontext_routing: after",
    "System\r\n- primaryContext: crlf\r\nend",
]
SECRETS = [
    "sk-abcdefghijklmnop",
    "sk-abcdefghijklmno",
    "sk-abcdefghijklmnopqrstuvwxyz123456-",
    "xsk-abcdefghijklmnopqr",
    "sk-ant-api03-abcdefghijklmnopqrst",
    "sk-ant-short",
    "Bearer abcdefghijklmnop",
    "Bearer\tabc.def-ghi_jklmnop",
    "Bearer\u00a0abcdefghijklmnopq",
    "Bearer \ufeffabcdefghijklmnopq",
    "bearer abcdefghijklmnopqrs",
    "Bearer abcdefghijklmno",
    "ghp_abcdefghijklmnopqrst",
    "ghp_abcdefghijklmnopqrs",
    "ghp_ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789",
    "AKIAABCDEFGHIJKLMNOP",
    "AKIAABCDEFGHIJKLMNOPQ",
    "AKIAabcdefghijklmnop",
    "xAKIAABCDEFGHIJKLMNOP",
    "Bearer sk-abcdefghijklmnopqrstu",
    "token=hunter2hunter2",
    "p@ss.w*rd+(x)[y]{z}$^|",
    "short12",
    "REDACTED:openai-key",
    "émoji-secret-😀😀",
    "sk-😀abcdefghijklmnopq",
]
HANDLES = [
    "@alice",
    "@alice.",
    "@bob_",
    "@a",
    "@ab",
    "@carol-x",
    "@dana",
    "@erin",
    "@ghost",
    "@heidi",
    "mail alice@example.com",
    "@@alice",
    "@ALICE",
    "@alice@bob",
    "@élan",
    "@frank.private",
]
ENV = {
    "REFERENCE_SECRET_DB_PASSWORD": "hunter2hunter2",
    "REFERENCE_SECRET_SPECIAL": "p@ss.w*rd+(x)[y]{z}$^|",
    "REFERENCE_SECRET_SHORT": "short12",
    "REFERENCE_SECRET_PLACEHOLDER": "REDACTED:openai-key",
    "REFERENCE_SECRET_ASTRAL": "émoji-secret-😀😀",
}
ANON = {
    "handles": {
        "discord:alice": "e-alice",
        "telegram:alice": "e-alice-tg",
        "slack:bob_": "e-bob",
        "discord:ab": "e-ab",
        "matrix:carol-x": "e-carol",
        "email:dana": "e-dana",
        "whatsapp:erin": "",
        "instagram:heidi": "e-heidi",
        "twitter:alice.com": "e-alice-com",
        "signal:frank.private": "e-frank",
    },
    "private": ["e-heidi", "e-frank"],
}


def call(rng: random.Random, **fields):
    base = {"callId": f"c{rng.randrange(10**9)}", "timestamp": T0}
    base.update({k: v for k, v in fields.items() if v is not ...})
    return base


def trajectory(index: int, calls: list[dict], **extra) -> dict:
    steps = [{"stepId": f"s{index}-{n}", "timestamp": T0, "llmCalls": [c]} for n, c in enumerate(calls)]
    return {
        "trajectoryId": f"t{index:05d}",
        "agentId": "agent",
        "startTime": T0 + index,
        "steps": steps,
        **extra,
    }


def hints_case(rng: random.Random) -> list[dict]:
    out, index = [], 0
    for value in HINT_VALUES:
        for field in (
            "purpose",
            "stepType",
            "actionType",
            "model",
            "modelType",
            "md_purpose",
            "model_type",
            "md_stepType",
            "tags",
        ):
            fields: dict = {"systemPrompt": "sys", "userPrompt": "user", "response": "plain answer"}
            if field == "tags":
                fields["tags"] = ["misc", value]
            elif field in ("modelType", "model_type"):
                fields["metadata"] = {field: value}
            elif field.startswith("md_"):
                fields["metadata"] = {field[3:]: value}
            else:
                fields[field] = value
            out.append(trajectory(index, [call(rng, **fields)]))
            index += 1
    return out


def texts_case(rng: random.Random) -> list[dict]:
    out = []
    for index in range(400):

        def pick():
            roll = rng.random()
            return ... if roll < 0.05 else None if roll < 0.1 else rng.choice(TEXTS)

        fields = {"systemPrompt": pick(), "userPrompt": pick(), "response": pick()}
        if rng.random() < 0.5:
            fields["purpose"] = rng.choice(HINT_VALUES)
        out.append(trajectory(index, [call(rng, **fields) for _ in range(rng.randint(0, 3))]))
    out.append({"trajectoryId": "no-steps", "agentId": "agent", "startTime": T0})
    out.append({"trajectoryId": "null-steps", "agentId": "agent", "startTime": T0, "steps": None})
    out.append({"trajectoryId": "empty-step", "startTime": T0, "steps": [{"timestamp": T0}]})
    out.append({"trajectoryId": "null-calls", "startTime": T0, "steps": [{"llmCalls": None}]})
    return out


def routing_case(rng: random.Random) -> list[dict]:
    out = []
    for index in range(300):
        fields = {
            "systemPrompt": rng.choice(ROUTING_PROMPTS + TEXTS[:3]),
            "userPrompt": rng.choice(TEXTS[:12]) or "u",
            "response": rng.choice(ROUTING_RESPONSES),
        }
        if rng.random() < 0.3:
            fields["purpose"] = rng.choice(("should_respond", "response", "planner"))
        out.append(trajectory(index, [call(rng, **fields)]))
    return out


def long_case(rng: random.Random) -> list[dict]:
    limit = 200_000
    straddle = "x" * (limit - 1) + "😀" + "tail"  # the clamp cuts the pair in half
    exact = "y" * (limit - 2) + "😀" + "z" * 10
    routed_late = "\ncontext_routing: early\n" + "w" * limit + "\ndecision_note: late"
    astral_many = "😀" * (limit // 2 + 5)
    prompts = [straddle, exact, routed_late, astral_many, "q" * (limit + 50) + "\n- primaryContext: cut"]
    return [
        trajectory(
            i,
            [
                call(
                    rng,
                    purpose="should_respond",
                    systemPrompt=p,
                    userPrompt="u" * 1000,
                    response="ok\nprimaryContext: x",
                )
            ],
        )
        for i, p in enumerate(prompts)
    ]


def privacy_case(rng: random.Random) -> list[dict]:
    out = []
    for index in range(400):
        parts = [rng.choice(SECRETS + HANDLES + TEXTS[:8]) for _ in range(rng.randint(1, 5))]
        joiner = rng.choice((" ", "\n", "", "\t", "/", "="))
        fields = {
            "systemPrompt": "sys " + joiner.join(parts),
            "userPrompt": joiner.join(rng.choice(SECRETS + HANDLES) for _ in range(3)),
            "response": rng.choice(SECRETS + HANDLES) + " done",
            "purpose": rng.choice(("reply", "should_respond", "planner")),
        }
        out.append(trajectory(index, [call(rng, **fields) for _ in range(rng.randint(1, 2))]))
    return out


CASES = {
    "hints": hints_case,
    "texts": texts_case,
    "routing": routing_case,
    "long": long_case,
    "privacy": privacy_case,
}


def main() -> None:
    for name, make in CASES.items():
        folder = HERE / name
        folder.mkdir(parents=True, exist_ok=True)
        rng = random.Random(name)
        with (folder / "input.jsonl").open("w", encoding="utf-8", newline="\n") as handle:
            for record in make(rng):
                # ensure_ascii keeps lone surrogates representable in the file, as JSON escapes
                handle.write(json.dumps(record, ensure_ascii=True) + "\n")
        (folder / "env.json").write_text(json.dumps(ENV, ensure_ascii=True, indent=1) + "\n")
        (folder / "anon.json").write_text(json.dumps(ANON, indent=1) + "\n")


if __name__ == "__main__":
    main()
