"""The promotion gate and the scorers it judges by, with constructed scores."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from pydantic import ValidationError

from training_pipeline import SAMPLE_TRAJECTORIES
from training_pipeline.datasets.training_tasks import TASKS, infer_tasks, strip_routing_prompt
from training_pipeline.optimizers.scoring import (
    SCORERS,
    LLMJudge,
    answer_fields,
    best_constant,
    default_scorer,
    exact_match,
    json_fields,
    planner_action_set,
    respond_decision,
)
from training_pipeline.tasks import EXAMPLE_TASKS
from training_pipeline.tasks.registry import build_registry
from training_pipeline.tasks.task import load_task
from training_pipeline.training.evaluation import Evaluation, evaluation_files, task_prompt_overrides
from training_pipeline.training.promotion import (
    PromotionPolicy,
    judge,
    judge_artifact,
    paired_bootstrap,
    promote,
    publish,
    read_published,
)
from training_pipeline.training.run_records import RunRecord, RunStore


def _scores(n: int, seed: int, gain: float, noise: float) -> tuple[list[float], list[float]]:
    rng = random.Random(seed)
    baseline = [rng.random() for _ in range(n)]
    candidate = [min(1.0, max(0.0, b + gain + rng.gauss(0, noise))) for b in baseline]
    return baseline, candidate


def test_a_truly_better_candidate_is_promoted() -> None:
    baseline, candidate = _scores(300, seed=1, gain=0.08, noise=0.2)
    verdict = judge(baseline, candidate, PromotionPolicy(), "token_overlap")
    assert verdict.promoted and verdict.n == 300 and verdict.scorer == "token_overlap"
    assert 0 < verdict.low < verdict.gain < verdict.high


def test_a_candidate_that_only_looks_better_on_a_small_split_is_rejected() -> None:
    # twelve held-out examples: the mean gain is positive, but two large swings carry it
    baseline = [0.5, 0.4, 0.6, 0.5, 0.3, 0.7, 0.5, 0.5, 0.6, 0.4, 0.2, 0.5]
    candidate = [0.5, 0.4, 0.6, 0.4, 0.3, 0.7, 0.6, 0.4, 0.6, 0.4, 1.0, 1.0]
    verdict = judge(baseline, candidate, PromotionPolicy(), "token_overlap")
    assert verdict.gain > 0.1 and verdict.low <= 0 and not verdict.promoted
    assert "not distinguishable from noise on 12" in verdict.reason
    # and with fewer examples than the gate needs, even a clean sweep is rejected
    tiny = judge([0.0, 0.0, 0.0], [1.0, 1.0, 1.0], PromotionPolicy(), "exact_match")
    assert not tiny.promoted and "fewer than the 10" in tiny.reason


def test_the_margin_decides_and_the_interval_is_reproducible() -> None:
    baseline, candidate = _scores(400, seed=2, gain=0.05, noise=0.05)
    assert judge(baseline, candidate, PromotionPolicy(margin=0.0), "s").promoted
    assert not judge(baseline, candidate, PromotionPolicy(margin=0.1), "s").promoted
    first = paired_bootstrap(baseline, candidate, seed=7)
    assert first == paired_bootstrap(baseline, candidate, seed=7)
    assert first != paired_bootstrap(baseline, candidate, seed=8)
    with pytest.raises(ValueError, match="differ in length"):
        paired_bootstrap([0.1], [0.1, 0.2])


def test_a_candidate_equal_to_the_baseline_is_never_promoted() -> None:
    baseline, candidate = _scores(100, seed=3, gain=0.3, noise=0.01)
    artifact = {
        "prompt": "same",
        "baseline_prompt": "same",
        "baseline_scores": baseline,
        "scores": candidate,
        "scorer": "token_overlap",
    }
    verdict = judge_artifact(artifact, PromotionPolicy())
    assert not verdict.promoted and verdict.gain == 0.0


def test_promote_publishes_only_what_passes_and_records_the_verdict(tmp_path: Path) -> None:
    runs, prompts = RunStore(tmp_path), tmp_path / "prompts"
    better_base, better = _scores(200, seed=4, gain=0.2, noise=0.05)
    artifact = {
        "optimizer": "instruction-search",
        "prompt": "new prompt",
        "baseline_prompt": "old prompt",
        "baseline_scores": better_base,
        "scores": better,
        "scorer": "token_overlap",
    }
    promoted = RunRecord(task="response", backend="native", status="succeeded")
    verdict = promote(promoted, artifact, runs, prompts, PromotionPolicy())
    assert verdict.promoted
    published = read_published(prompts, "response")
    assert published["prompt"] == "new prompt" and published["run_id"] == promoted.run_id
    assert runs.load(promoted.run_id).promotion["published"] == str(prompts / "response.json")

    rejected = RunRecord(task="response", backend="native", status="succeeded")
    flat = {**artifact, "prompt": "newer prompt", "scores": better_base}
    assert not promote(rejected, flat, runs, prompts, PromotionPolicy()).promoted
    assert read_published(prompts, "response")["run_id"] == promoted.run_id  # unchanged
    stored = runs.load(rejected.run_id)
    assert stored.promotion["published"] is None and "rejected" in stored.notes[-1]
    with pytest.raises(ValueError, match="rejected by the gate"):
        publish(prompts, "response", flat, judge_artifact(flat, PromotionPolicy()), rejected.run_id)


def test_the_policy_names_known_tasks_and_scorers() -> None:
    assert PromotionPolicy(scorers={"context_routing": "json_fields"}).scorer_for("context_routing") == (
        "json_fields"
    )
    # the decision where a task makes one; elizaOS's lenient `action_match` is a setting away
    assert (
        PromotionPolicy().scorer_for("action_planner")
        == "planner_actions"
        == default_scorer("action_planner")
    )
    assert default_scorer("should_respond") == "respond_decision"
    assert PromotionPolicy(scorers={"action_planner": "action_match"}).scorer_for("action_planner") == (
        "action_match"
    )
    with pytest.raises(ValidationError, match="unknown scorer"):
        PromotionPolicy(scorers={"response": "vibes"})
    with pytest.raises(ValidationError, match="unknown task"):
        PromotionPolicy(evaluation_tasks={"chitchat": "x.json"})


def test_json_fields_scores_routing_answers_field_by_field() -> None:
    expected = (
        "<response><action>RESPOND</action></response>\n"
        'primaryContext: billing\nsecondaryContexts: ["refunds", "social"]\nevidenceTurnIds: [1, 4]'
    )
    assert answer_fields(expected)["primarycontext"] == "billing"
    same_in_json = json.dumps(
        {
            "action": "RESPOND",
            "primaryContext": "Billing",
            "secondaryContexts": ["social", "refunds"],
            "evidenceTurnIds": [4, 1],
        }
    )
    assert json_fields(same_in_json, expected) == 1.0
    half = "primaryContext: billing\nsecondaryContexts: []\nevidenceTurnIds: [1, 4]\naction: IGNORE"
    assert json_fields(half, expected) == 0.5
    assert json_fields("no structure at all", expected) == 0.0
    assert json_fields("hello there", "hello world") == pytest.approx(1 / 3)  # no fields: token overlap


def test_exact_match_and_the_judges_grade() -> None:
    assert (
        exact_match("Hello  world\n", "Hello world") == 1.0
        and exact_match("hello world", "Hello world") == 0.0
    )
    judge_ = SCORERS["llm_judge"]
    assert isinstance(judge_, LLMJudge)
    assert "Reference answer:\nB" in judge_.messages("A", "B")[1]["content"]
    assert LLMJudge.parse('{"score": 7}') == 0.7
    assert LLMJudge.parse("I would give it 9/10.") == 0.9
    assert LLMJudge.parse('{"score": 42}') == 1.0 and LLMJudge.parse("no idea") == 0.0


def test_evaluation_files_and_totals(tmp_path: Path) -> None:
    # each dataset task has its own bundled evaluation, whose agent carries that task's prompt as the
    # sample's agent writes it (the baseline is the agent's real prompt) and asks at least 15 scenarios;
    # a trace dataset has none and must be named
    prompts = {}
    for line in next(SAMPLE_TRAJECTORIES.glob("*.jsonl")).read_text().splitlines():
        for step in json.loads(line)["steps"]:
            for call in step["llmCalls"]:
                for task in infer_tasks(call):  # should_respond's examples leave the routing out
                    prompt = call["systemPrompt"]
                    prompts.setdefault(
                        task, strip_routing_prompt(prompt) if task == "should_respond" else prompt
                    )
    for task in TASKS:
        [path] = evaluation_files(PromotionPolicy(), task)
        spec = load_task(path, build_registry())
        [agent] = [step for step in spec.steps if step.type == "deploy_agent"]
        assert path.stem == agent.task_prompt.task == task and agent.task_prompt.prompt == prompts[task]
        assert sum(step.type == "agent_prompt_response_verifier" for step in spec.steps) >= 15
    with pytest.raises(FileNotFoundError, match="no evaluation task file for tool_use"):
        evaluation_files(PromotionPolicy(), "tool_use")
    mine = tmp_path / "mine.json"
    mine.write_text("[]")
    assert evaluation_files(PromotionPolicy(evaluation_tasks={"response": str(mine)}), "response") == [mine]
    with pytest.raises(FileNotFoundError, match="response"):
        evaluation_files(
            PromotionPolicy(evaluation_tasks={"response": str(tmp_path / "gone.json")}), "response"
        )
    evaluation = Evaluation()
    evaluation.add("a", "promoted", "r1", True, 1.0)
    evaluation.add("a", "baseline", "r2", False, None)  # failed, nothing verified: scores 0
    assert evaluation.summary()["difference"] == 1.0 and evaluation.by_task_file() == {
        "a": {"promoted": 1.0, "baseline": 0.0}
    }


def test_the_promoted_part_goes_where_the_tasks_prompt_lives_and_nothing_else_changes() -> None:
    """reply-to-dana's agent keeps its tool instructions in both variants; only its `response` prompt
    is replaced, demonstrations come with the promoted variant only, and both decode in one form.
    An agent of another task, or a file with none, is not evaluated."""
    spec = load_task(EXAMPLE_TASKS / "reply-to-dana.json", build_registry())
    form = {"choices": ["A", "B"], "opening": "", "closing": "", "after": "", "reasoning": 0}
    published = {
        "prompt": "You are Eliza.",
        "demonstrations": [{"user": "hi", "expected": "A"}],
        "demo_style": "turns",
        "answer_form": form,
    }
    promoted = task_prompt_overrides(spec, "response", published, "promoted")
    baseline = task_prompt_overrides(spec, "response", published, "baseline")
    assert promoted == {
        "assistant": {
            "answer_form": form,
            "task_prompt": {"task": "response", "prompt": "You are Eliza."},
            "demonstrations": [["hi", "A"]],
        }
    }
    assert baseline == {"assistant": {"answer_form": form}}
    agent = spec.step("assistant")
    effective = type(agent).from_dict({**agent.to_dict(), **promoted["assistant"]})
    assert effective.full_system_prompt.startswith(agent.system_prompt)  # its tools' instructions
    assert effective.full_system_prompt.endswith("\n\nYou are Eliza.")
    assert effective.demonstrations == [("hi", "A")] and effective.answer_form.choices == ("A", "B")
    with pytest.raises(ValueError, match="no agent whose task_prompt is should_respond's"):
        task_prompt_overrides(spec, "should_respond", published, "promoted")


def test_a_candidate_that_only_gives_the_commonest_answer_is_never_promoted() -> None:
    """On should_respond with RESPOND two times in three, a poor baseline (right one time in five) and a
    candidate that always answers RESPOND: a large, significant gain over the baseline, and none over
    the best constant answer."""
    expected = ["RESPOND", "RESPOND", "IGNORE"] * 40
    scorer = SCORERS["respond_decision"]
    reference = best_constant(expected, scorer)
    assert reference is not None and reference.answer == "RESPOND" and reference.mean == pytest.approx(2 / 3)
    baseline = [1.0 if i % 5 == 0 else 0.0 for i in range(len(expected))]
    majority = [scorer("<action>RESPOND</action>", want) for want in expected]
    verdict = judge(baseline, majority, PromotionPolicy(), "respond_decision", reference.scores)
    assert verdict.low > 0.3 and not verdict.promoted
    assert "not than always giving the commonest answer" in verdict.reason
    assert verdict.reference == pytest.approx(2 / 3)
    # one that gets the IGNOREs right as well beats both
    right = [1.0] * len(expected)
    better = judge(baseline, right, PromotionPolicy(), "respond_decision", reference.scores)
    assert better.promoted and better.reference_low > 0


def test_decisions_are_read_strictly_and_a_malformed_answer_is_wrong() -> None:
    should = "<response><name>Eliza</name><reasoning>asked</reasoning><action>RESPOND</action></response>"
    assert respond_decision(should) == "RESPOND" and respond_decision(" ignore. ") == "IGNORE"
    assert respond_decision("<name>Eliza</name> I think RESPOND maybe") is None
    assert respond_decision("<action>RESPOND</action><action>IGNORE</action>") is None
    assert SCORERS["respond_decision"](should, should) == 1.0
    # elizaOS's lenient scorer reads the agent's name as the decision
    assert SCORERS["action_match"]("<name>Eliza</name><action>IGNORE</action>", should) == 1.0
    assert SCORERS["respond_decision"]("<name>Eliza</name><action>IGNORE</action>", should) == 0.0
    plan = "<thought>x</thought><actions>REPLY, SEND_MESSAGE</actions><providers>A</providers>"
    assert planner_action_set(plan) == {"REPLY", "SEND_MESSAGE"}
    assert SCORERS["planner_actions"]("<actions>send_message,REPLY</actions>", plan) == 1.0
    assert SCORERS["planner_actions"]("REDACTED: I will REPLY", "<actions>REPLY</actions>") == 0.0


def test_a_gain_one_seed_finds_and_the_others_do_not_is_rejected() -> None:
    """The chosen seed's candidate passes on its own test split, but pooled over the three seeds'
    test splits the gain's interval reaches 0: the verdict must not depend on which seed ran."""
    lucky_base, lucky = _scores(60, seed=5, gain=0.3, noise=0.05)
    flat_base, flat = _scores(200, seed=6, gain=-0.05, noise=0.05)
    other_base, other = _scores(200, seed=7, gain=-0.03, noise=0.05)
    artifact = {
        "prompt": "new",
        "baseline_prompt": "old",
        "baseline_scores": lucky_base,
        "scores": lucky,
        "scorer": "respond_decision",
        "seeds": [
            {"seed": 0, "baseline_scores": lucky_base, "scores": lucky},
            {"seed": 1, "baseline_scores": flat_base, "scores": flat},
            {"seed": 2, "baseline_scores": other_base, "scores": other},
        ],
    }
    assert judge(lucky_base, lucky, PromotionPolicy(), "respond_decision").promoted
    verdict = judge_artifact(artifact, PromotionPolicy())
    assert not verdict.promoted and "one seed's luck" in verdict.reason
    assert verdict.seeds == 3 and verdict.seeds_low <= 0 < verdict.low
    agreeing = {
        **artifact,
        "seeds": [{"seed": s, "baseline_scores": lucky_base, "scores": lucky} for s in range(3)],
    }
    passed = judge_artifact(agreeing, PromotionPolicy())
    assert passed.promoted and passed.seeds_low > 0 and "over 3 seeds" in passed.reason


def test_demonstrations_alone_are_a_candidate_and_are_published_with_the_prompt(tmp_path: Path) -> None:
    base, better = _scores(100, seed=8, gain=0.3, noise=0.05)
    demos = [{"user": "Eliza, help?", "expected": "RESPOND"}]
    artifact = {
        "optimizer": "bootstrap-fewshot",
        "prompt": "same",
        "baseline_prompt": "same",
        "few_shot_examples": demos,
        "demo_style": "turns",
        "baseline_scores": base,
        "scores": better,
        "scorer": "respond_decision",
    }
    record = RunRecord(task="should_respond", backend="native", status="succeeded")
    assert promote(record, artifact, RunStore(tmp_path), tmp_path / "prompts", PromotionPolicy()).promoted
    published = read_published(tmp_path / "prompts", "should_respond")
    assert published["demonstrations"] == demos and published["demo_style"] == "turns"


def test_a_tuned_model_is_judged_on_its_own_answers_asked_several_at_a_time() -> None:
    import threading
    import time

    from training_pipeline.training.tuned_evaluation import IN_FLIGHT, Case, evaluate_tuned

    cases = [
        Case([{"role": "user", "content": f"q{i}"}], None, "RESPOND" if i % 3 else "IGNORE")
        for i in range(60)
    ]
    in_flight, most = [0], [0]
    lock = threading.Lock()

    def model(right_when: int):
        def ask(prompt, tools):
            number = int(prompt[0]["content"][1:])
            with lock:
                in_flight[0] += 1
                most[0] = max(most[0], in_flight[0])
            time.sleep(0.002 * (number % 5))  # answers come back out of order
            with lock:
                in_flight[0] -= 1
            right = "RESPOND" if number % 3 else "IGNORE"
            return right if number % right_when == 0 else "nonsense"

        return ask

    said: list[str] = []
    evaluation = evaluate_tuned(cases, "exact_match", model(4), model(1), PromotionPolicy(), said.append)
    # each answer is scored against its own case, whatever order they came back in
    assert evaluation.tuned_score == 1.0 and evaluation.base_score == 15 / 60
    assert evaluation.verdict.promoted and 1 < most[0] <= IN_FLIGHT
    assert said[-1] == "120/120 answers of both models to the test split"

    def failing(prompt, tools):
        if prompt[0]["content"] == "q5":
            raise RuntimeError("HTTP 429 from the service")
        return "RESPOND"

    asked = []

    def counting(prompt, tools):
        asked.append(prompt)
        time.sleep(0.01)
        return "RESPOND"

    with pytest.raises(RuntimeError, match="HTTP 429"):
        evaluate_tuned(cases, "exact_match", counting, failing, PromotionPolicy(), said.append)
    assert len(asked) < len(cases)  # the first error stopped what had not been sent yet
