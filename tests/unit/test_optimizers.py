"""The native optimisers end to end against a scripted OpenAI-compatible server, and on Dagster."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.fake_chat import FakeChatServer
from training_pipeline.backends.base import BackendError, DispatchRequest
from training_pipeline.datasets.training_tasks import ids_path
from training_pipeline.llm.client import ChatClient
from training_pipeline.optimizers.examples import load_examples, split_by_trajectory
from training_pipeline.optimizers.native import load_artifact, run_native
from training_pipeline.optimizers.nearest import nearest_demonstrations
from training_pipeline.optimizers.programs import OPTIMIZERS, REWRITE, OptimiserConfig
from training_pipeline.optimizers.scoring import (
    action_match,
    actions_match,
    agreement,
    answer_form,
    decision_match,
    planner_action,
)
from training_pipeline.stages import Budget, StageRecord

NAMES = ["ada", "bo", "cy", "di", "ed", "flo", "gus", "hal", "ivy", "jo", "kit", "lu"]


def _dataset(tmp_path: Path) -> Path:
    """Two examples per trajectory: greet a name properly. The expected answer follows from the input."""
    path = tmp_path / "response_trajectories.jsonl"
    rows, ids = [], []
    for name in NAMES:
        for turn in ("hello", "hi"):
            rows.append(
                {
                    "messages": [
                        {"role": "system", "content": "You greet people."},
                        {"role": "user", "content": f"{turn} from {name}"},
                        {"role": "model", "content": f"Welcome {name}, glad you are here"},
                    ]
                }
            )
            ids.append(f"traj-{name}")
    rows.append(rows[0])  # an exact duplicate, dropped
    ids.append("traj-ada")
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    ids_path(path).write_text("".join(json.dumps(i) + "\n" for i in ids))
    return path


def _reply(body: dict) -> dict:
    system, user = body["messages"][0]["content"], body["messages"][-1]["content"]
    if system.startswith("Rewrite the system prompt"):
        return {"content": f"{user} IMPROVED-{body.get('seed')}"}
    if system.startswith("You improve a system prompt"):
        current = user.split("Current system prompt:\n", 1)[1].split("\n\nExamples it got wrong:")[0]
        return {"content": f"{current} IMPROVED-{body.get('seed')}"}
    name = user.rsplit(" ", 1)[-1]
    # a model that follows a better instruction or copies the demonstrations it was shown as turns
    good = "IMPROVED" in system or "Examples of good answers" in system or len(body["messages"]) > 2
    return {"content": f"Welcome {name}, glad you are here" if good else "hmm"}


def _run(
    tmp_path: Path,
    server: FakeChatServer,
    cfg: OptimiserConfig,
    budget: Budget | None = None,
    work: str = "work",
    scorer: str | None = None,
    seeds: tuple[int, ...] = (0,),
):
    work_dir = tmp_path / work
    work_dir.mkdir(exist_ok=True)
    client = ChatClient(server.base_url, "m", cache_dir=tmp_path / "cache", cache_all_temperatures=True)
    request = DispatchRequest(
        "response", _dataset(tmp_path), work_dir, "run-1", log=lambda line: None, scorer=scorer
    )
    return run_native(request, client, cfg, budget, seeds=seeds)


def test_examples_are_deduplicated_and_split_by_trajectory_with_a_seed(tmp_path: Path) -> None:
    examples = load_examples(_dataset(tmp_path), ids_path(tmp_path / "response_trajectories.jsonl"))
    assert len(examples) == 24
    split = split_by_trajectory(examples, 0.25, 0.5, seed=1)
    groups = [{e.group for e in side} for side in (split.train, split.validation, split.test)]
    assert all(a.isdisjoint(b) for i, a in enumerate(groups) for b in groups[i + 1 :])
    assert split.sizes == {"train": 6, "validation": 6, "test": 12}
    assert split_by_trajectory(examples, 0.25, 0.5, seed=1) == split
    assert split_by_trajectory(examples, 0.25, 0.5, seed=2) != split
    # a cap moves what it leaves out into training; three groups are the least that splits
    capped = split_by_trajectory(examples, 0.25, 0.5, seed=1, max_validation=2, max_test=4)
    assert capped.sizes == {"train": 18, "validation": 2, "test": 4}
    assert split_by_trajectory(examples[:4], seed=1).test == []


def test_scorers_match_elizaos() -> None:
    assert agreement("Hello, World!", "hello world") == 1.0
    assert agreement("a b", "b c") == pytest.approx(1 / 3)
    assert agreement("", "") == 1.0 and agreement("x", "") == 0.0
    assert planner_action("<actions><action><name>reply</name></action></actions>") == "REPLY"
    assert planner_action("<action>ignore</action>") == "IGNORE"
    assert planner_action("I will SEND_MESSAGE now") == "SEND_MESSAGE"
    assert action_match("<action>REPLY</action>", "<name>reply</name>") == 1.0
    assert action_match("<action>IGNORE</action>", "<name>reply</name>") == 0.0


@pytest.mark.parametrize("optimizer", OPTIMIZERS)
def test_each_optimiser_improves_the_prompt_and_records_every_step(tmp_path: Path, optimizer: str) -> None:
    cfg = OptimiserConfig(
        optimizer=optimizer,
        rounds=2,
        variants=2,
        population=3,
        generations=1,
        k=2,
        train_batch=4,
        seed=3,
        demo_sets=2,
    )
    with FakeChatServer(_reply) as server:
        result = _run(tmp_path, server, cfg, seeds=(3,))
    assert result.invoked
    artifact = load_artifact(Path(result.artifact_path))
    assert artifact["baseline_score"] < 0.2 and artifact["score"] == 1.0
    assert artifact["validation_baseline_score"] < 0.2 and artifact["validation_score"] == 1.0
    assert artifact["train_size"] + artifact["validation_size"] + artifact["test_size"] == 24
    tree = StageRecord.model_validate_json((tmp_path / "work" / "training_records.json").read_text())
    [seed] = tree.substages
    baseline_stage = next(s for s in seed.substages if s.name == "test: baseline")
    assert tree.metrics["llm_calls"] == len(server.requests) and tree.metrics["prompt_executions"] > 0
    # baseline and winner are scored on exactly the same test examples, each once
    winner = next(s for s in seed.substages if s.name == "test: candidate")
    assert [s.name for s in baseline_stage.substages] == [s.name for s in winner.substages]
    assert len(baseline_stage.substages) == artifact["test_size"] == len(artifact["test_ids"])
    examples = load_examples(
        tmp_path / "response_trajectories.jsonl", ids_path(tmp_path / "response_trajectories.jsonl")
    )
    split = split_by_trajectory(examples, seed=3)
    held_out = {e.user for e in split.validation + split.test}
    assert {e.id for e in split.test} == set(artifact["test_ids"])
    if optimizer == "bootstrap-fewshot":
        demo_users = {d["user"] for d in artifact["few_shot_examples"]}
        assert demo_users and demo_users <= {e.user for e in split.train} and demo_users.isdisjoint(held_out)
        # given as chat turns before the question, not pasted into the system prompt
        assert artifact["prompt"] == artifact["baseline_prompt"] and artifact["demo_style"] == "turns"
    elif optimizer == "nearest-fewshot":
        # the pool is the training split; each question was shown the `neighbours` nearest of it
        assert {d["user"] for d in artifact["few_shot_examples"]} == {e.user for e in split.train}
        assert artifact["neighbours"] == cfg.neighbours and artifact["demo_style"] == "turns"
        answered = [r["messages"] for r in server.requests if r["messages"][-1]["content"] in held_out]
        assert answered and {len(m) for m in answered} <= {2, 2 + 2 * cfg.neighbours}
        assert not any(m["content"] in held_out for r in answered for m in r[1:-1])
    elif optimizer == "prompt-evolution":
        # the proposer was shown the failing training examples with what was expected, none held out
        [reflection, *_] = [
            r["messages"][1]["content"]
            for r in server.requests
            if r["messages"][0]["content"].startswith("You improve a system prompt")
        ]
        assert "Expected answer: Welcome" in reflection and "Model's answer: hmm" in reflection
        assert not any(user in reflection for user in held_out)
    else:
        seeds = {r.get("seed") for r in server.requests if r["messages"][0]["content"] in (REWRITE,)}
        assert None not in seeds  # sampled calls carry a seed


def test_a_crashed_run_resumes_from_cache_and_checkpoint(tmp_path: Path) -> None:
    cfg = OptimiserConfig(optimizer="instruction-search", rounds=3, variants=2, train_batch=4)
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    with FakeChatServer(_reply) as full:  # what an uninterrupted run pays
        _run(fresh, full, cfg)
    total = len(full.requests)
    with FakeChatServer(_reply) as first, pytest.raises(BackendError, match="spend cap reached"):
        _run(tmp_path, first, cfg, Budget(max_calls=total // 2))
    assert len(first.requests) == total // 2 + 1
    records = json.loads((tmp_path / "work" / "training_records.json").read_text())
    assert records["failure"]["kind"] == "SpendCapExceeded"  # the partial tree was saved
    with FakeChatServer(_reply) as second:
        resumed = _run(tmp_path, second, cfg)
    assert resumed.invoked
    assert len(second.requests) < total - len(first.requests) + 1  # completed rounds were not paid twice
    assert load_artifact(Path(resumed.artifact_path))["score"] == 1.0


def test_too_few_trajectories_to_split_is_a_skip(tmp_path: Path) -> None:
    path = tmp_path / "d.jsonl"
    path.write_text(
        json.dumps(
            {
                "messages": [
                    {"role": "system", "content": "s"},
                    {"role": "user", "content": "u"},
                    {"role": "model", "content": "m"},
                ]
            }
        )
        + "\n"
    )
    ids_path(path).write_text('"only-one"\n')
    request = DispatchRequest("response", path, tmp_path, "run-1")
    result = run_native(request, None, OptimiserConfig(), None)
    assert not result.invoked and "not enough trajectories" in result.reason
    assert re.search(r"1 usable examples from 1 trajectories", result.notes[0])


def test_an_llm_judge_scores_each_held_out_answer_in_a_recorded_prompt_execution(tmp_path: Path) -> None:
    """The judge grades by the LLM resource: its calls are leaves of the records tree, counted in the
    run's calls, and the artifact names the scorer and keeps each example's score for the gate."""

    def reply(body: dict) -> dict:
        system = body["messages"][0]["content"]
        if system.startswith("You grade an answer"):
            graded = body["messages"][1]["content"].rsplit("Answer to grade:\n", 1)[1]
            return {"content": '{"score": 10}' if graded.startswith("Welcome") else '{"score": 2}'}
        return _reply(body)

    cfg = OptimiserConfig(optimizer="instruction-search", rounds=1, variants=1, train_batch=4)
    with FakeChatServer(reply) as server:
        result = _run(tmp_path, server, cfg, scorer="llm_judge")
    artifact = load_artifact(Path(result.artifact_path))
    assert artifact["scorer"] == "llm_judge" and result.details["scorer"] == "llm_judge"
    assert artifact["baseline_score"] == pytest.approx(0.2) and artifact["score"] == 1.0
    assert len(artifact["scores"]) == len(artifact["baseline_scores"]) == artifact["test_size"]
    assert artifact["test_ids"] and set(artifact["scores"]) == {1.0}
    judged = [r for r in server.requests if r["messages"][0]["content"].startswith("You grade an answer")]
    tree = StageRecord.model_validate_json((tmp_path / "work" / "training_records.json").read_text())
    assert judged and tree.metrics["llm_calls"] == len(server.requests)


def test_a_decision_task_has_a_form_and_free_text_has_none() -> None:
    """The form comes from the expected answers: their common opening tags, free reasoning where they
    differ, the decision from the choices they hold, and the common closing tags; whatever the model
    writes in it, the strict scorer reads its decision."""
    expected = [
        "<response><name>Eliza</name><reasoning>ada asked Eliza directly</reasoning>"
        "<action>RESPOND</action></response>",
        "<response><name>Eliza</name><reasoning>bo was not talking to Eliza</reasoning>"
        "<action>IGNORE</action></response>",
        "<response><name>Eliza</name></response>",  # no decision: not part of the form
    ]
    form = answer_form("respond_decision", expected)
    assert form.choices == ("IGNORE", "RESPOND") and form.reasoning > 0
    assert (form.opening, form.closing, form.after) == (
        "<response><name>Eliza</name><reasoning>",
        "</reasoning><action>",
        "</action></response>",
    )
    assert all(decision_match(form.text("any <words>", c), f"<action>{c}</action>") for c in form.choices)
    plans = [
        "<thought>t</thought><actions>REPLY</actions>",
        "<thought>u v</thought><actions>SEND_MESSAGE, REPLY</actions>",
    ]
    planner = answer_form("planner_actions", plans)
    assert planner.choices == ("REPLY", "REPLY, SEND_MESSAGE") and planner.closing == "</thought><actions>"
    assert all(
        actions_match(planner.text("why", c), plan) for c, plan in zip(planner.choices, plans, strict=True)
    )
    # answers that are the bare decision: no reasoning, nothing around it
    assert (
        answer_form("respond_decision", ["<action>STOP</action>", "<action>RESPOND</action>"]).reasoning == 0
    )
    assert answer_form("token_overlap", ["anything"]) is None


def test_each_seed_is_its_own_split_and_the_best_on_validation_is_kept(tmp_path: Path) -> None:
    """Two seeds, two splits: the artifact keeps each seed's paired test scores for the gate, and the
    candidate whose validation gain was largest; the notes give the test gain's mean and spread."""
    cfg = OptimiserConfig(optimizer="bootstrap-fewshot", k=2, demo_sets=2)
    with FakeChatServer(_reply) as server:
        result = _run(tmp_path, server, cfg, seeds=(4, 5))
    artifact = load_artifact(Path(result.artifact_path))
    seeds = {summary["seed"]: summary for summary in artifact["seeds"]}
    assert set(seeds) == {4, 5} and artifact["seed"] in seeds
    examples = load_examples(
        tmp_path / "response_trajectories.jsonl", ids_path(tmp_path / "response_trajectories.jsonl")
    )
    tests = {seed: {e.id for e in split_by_trajectory(examples, seed=seed).test} for seed in seeds}
    assert tests[4] != tests[5] and set(artifact["test_ids"]) == tests[artifact["seed"]]
    for summary in seeds.values():
        assert len(summary["scores"]) == len(summary["baseline_scores"]) == len(tests[summary["seed"]])
        assert summary["score"] == 1.0 and summary["baseline_score"] < 0.2
    assert result.details["seeds"] == 2 and "test gain over seeds" in result.notes[0]
    tree = StageRecord.model_validate_json((tmp_path / "work" / "training_records.json").read_text())
    assert [stage.name for stage in tree.substages] == ["seed 4", "seed 5"]


def test_an_example_too_long_for_the_models_context_is_left_out_and_counted(tmp_path: Path) -> None:
    path = _dataset(tmp_path)
    long_question = "hello " * 1200 + "from zed"  # 7,200 characters: over half a 2,048-token window
    row = {
        "messages": [
            {"role": "system", "content": "You greet people."},
            {"role": "user", "content": long_question},
            {"role": "model", "content": "Welcome zed, glad you are here"},
        ]
    }
    with path.open("a") as handle:
        handle.write(json.dumps(row) + "\n")
    with ids_path(path).open("a") as handle:
        handle.write('"traj-zed"\n')
    cfg = OptimiserConfig(optimizer="bootstrap-fewshot", k=2, demo_sets=2, context_tokens=2048)
    work = tmp_path / "work"
    work.mkdir()
    with FakeChatServer(_reply) as server:
        client = ChatClient(server.base_url, "m", cache_dir=tmp_path / "cache", cache_all_temperatures=True)
        result = run_native(DispatchRequest("response", path, work, "run-1"), client, cfg, None)
    assert result.invoked and result.details["too_long"] == 1
    assert any("left out 1 of 25 examples" in note and "2048-token context" in note for note in result.notes)
    assert not any("from zed" in json.dumps(r) for r in server.requests)  # never sent
    cfg_unknown = OptimiserConfig(optimizer="bootstrap-fewshot", k=2, demo_sets=2)
    with FakeChatServer(_reply) as server:
        client = ChatClient(server.base_url, "m", cache_dir=tmp_path / "cache2", cache_all_temperatures=True)
        work2 = tmp_path / "work2"
        work2.mkdir()
        unknown = run_native(DispatchRequest("response", path, work2, "run-2"), client, cfg_unknown, None)
    assert unknown.details["too_long"] == 0  # a window not known: nothing left out


def test_the_demonstrations_given_are_those_whose_last_message_asks_the_same() -> None:
    """Older lines and the question every prompt ends with weigh nothing beside the last message."""
    pool = [
        ("bo: lol same\nada: Eliza, please create a task for the invoice\n\nPlan the next step.", "CREATE"),
        (
            "ada: Eliza, please create a task for X\nbo: Eliza, tell @cy about the invoice"
            "\n\nPlan the next step.",
            "SEND",
        ),
        ("cy: Eliza, look up our notes on the invoice\n\nPlan the next step.", "SEARCH"),
        ("di: lol same\ncy: Eliza, tell @ed about the standup\n\nPlan the next step.", "SEND"),
    ]
    question = "ed: brb\nfi: Eliza, please create a task for the standup\n\nPlan the next step."
    assert [answer for _, answer in nearest_demonstrations(pool, question, 1)] == ["CREATE"]
    asked = "gus: Eliza, tell @hal about onboarding\n\nPlan the next step."
    nearest = [answer for _, answer in nearest_demonstrations(pool, asked, 3)]
    assert nearest[-2:] == ["SEND", "SEND"]  # the most similar last, beside the question
    assert nearest_demonstrations(pool, question, 0) == [] and nearest_demonstrations([], question, 2) == []
