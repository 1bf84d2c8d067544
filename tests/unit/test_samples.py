"""The sample data has signal: every label follows from the conversation, so a prompt can learn it and
always giving the commonest answer cannot match it."""

from __future__ import annotations

import json
import re
from collections import Counter
from datetime import date

from training_pipeline.samples import _TOPICS, day_of_trajectories
from training_pipeline.training.evaluation import EVALUATION_TASKS

_LAST_LINE = re.compile(r"\n(\w+): ([^\n]*)\n\nShould Eliza respond to \1\?$")
_INTENTS = {
    "CREATE_TASK": ("task", "ticket"),
    "SEARCH_KNOWLEDGE": ("docs", "knowledge base", "notes"),
    "SEND_MESSAGE": ("tell @", "message @", "let @"),
    "FOLLOW_ROOM": ("follow this room", "watching this channel"),
}


def _calls(count: int = 600):
    for trajectory in day_of_trajectories(date(2026, 11, 23), count, seed=9):
        yield [call for step in trajectory["steps"] for call in step["llmCalls"]]


def _rule(last: str) -> tuple[str, str | None]:
    """What a reader of the last message decides: addressed to Eliza or not, and what is asked."""
    if not re.match(r"(Eliza,|@eliza|hey Eliza)", last):
        return "IGNORE", None
    if "stop" in last or "be quiet" in last:
        return "STOP", None
    for action, cues in _INTENTS.items():
        if any(cue in last for cue in cues):
            return "RESPOND", action
    return "RESPOND", "REPLY"


def test_the_decision_and_the_action_follow_from_the_last_message() -> None:
    decisions, actions = Counter(), Counter()
    for calls in _calls():
        deciding = calls[0]
        last = _LAST_LINE.search(deciding["userPrompt"])[2]
        decision, action = _rule(last)
        assert f"<action>{decision}</action>" in deciding["response"], last
        decisions[decision] += 1
        planner = [call for call in calls if "<actions>" in call["response"]]
        assert [re.search(r"<actions>(\w+)</actions>", p["response"])[1] for p in planner] == (
            [action] if action else []
        )
        if action:
            actions[action] += 1
    # no constant answer comes close to the rule: RESPOND is about half, the commonest action a quarter
    assert max(decisions.values()) / sum(decisions.values()) < 0.6 and set(decisions) == {
        "RESPOND",
        "IGNORE",
        "STOP",
    }
    assert max(actions.values()) / sum(actions.values()) < 0.3 and len(actions) == 5


def test_routing_replies_and_images_depend_on_what_was_said() -> None:
    contexts, descriptions = {}, {}
    for calls in _calls():
        deciding = calls[0]
        routed = re.search(
            r"primaryContext: (\w+)\nsecondaryContexts: \[\]\nevidenceTurnIds: \[(\d+)\]",
            deciding["response"],
        )
        if routed:
            turns = deciding["userPrompt"].split("\n\nShould Eliza")[0].splitlines()[1:]
            assert int(routed[2]) == len(turns)  # the evidence is the last message's turn
            last = turns[-1]
            topic = next((t for t in contexts if t in last), None)
            if topic is not None and routed[1] != "social":
                assert contexts[topic] == routed[1]  # one topic, one context
            for candidate in ("deployment", "refund", "invoice", "standup", "password", "pricing"):
                if candidate in last and routed[1] != "social":
                    contexts.setdefault(candidate, routed[1])
        reply = next((c for c in calls if c.get("purpose") == "response"), None)
        if reply is not None:
            asked = reply["userPrompt"].split("\n\nWrite Eliza's reply")[0].splitlines()[-1]
            [(topic, fact)] = [(t, f) for t, _, f in _TOPICS if t in asked]
            assert topic in reply["response"] or fact in reply["response"], (asked, reply["response"])
        image = next((c for c in calls if "caption" in c["userPrompt"]), None)
        if image is not None:
            caption = re.search(r'caption "([^"]+)"', image["userPrompt"])[1]
            assert descriptions.setdefault(caption, image["response"]) == image["response"]
    assert contexts["refund"] == contexts["invoice"] == "billing" and contexts["deployment"] == "engineering"
    assert len(set(descriptions.values())) == len(descriptions) >= 6  # a caption, its own description


def test_the_bundled_evaluations_expect_what_the_last_message_asks() -> None:
    """Each should_respond and action_planner scenario of the bundled evaluation files is judged on the
    decision a reader of its last message makes."""
    checked = 0
    for task, pattern in (
        ("should_respond", r"<action>\\s\*(\w+)"),
        ("action_planner", r"<actions>\\s\*(\w+)"),
    ):
        steps = {s["id"]: s for s in json.loads((EVALUATION_TASKS / f"{task}.json").read_text())}
        for step in steps.values():
            if step["type"] != "agent_prompt_response_verifier":
                continue
            prompt = steps[step["prompt_id"]]["prompt"]
            last = prompt.split("\n\n")[-2].splitlines()[-1].split(": ", 1)[1]
            decision, action = _rule(last)
            want = re.search(pattern, step["regex"][0])[1]
            assert want == (decision if task == "should_respond" else action), (last, want)
            checked += 1
    assert checked == 16 + 15
