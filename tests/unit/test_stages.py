"""The Stage DSL: tree shape, metrics (ETC included), Result/raise, retries, spend cap, attribution."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from pydantic import BaseModel

from tests.fake_chat import FakeChatServer
from training_pipeline.llm.client import ChatClient, LLMError
from training_pipeline.stages import (
    AgentOutcome,
    Backoff,
    Budget,
    RetryPolicy,
    RunUntil,
    SpendCapExceeded,
    StageRecord,
    TrainingSession,
)
from training_pipeline.stages.records import FailureInfo


def test_a_stage_is_in_the_tree_before_its_block_runs_and_the_tree_reads_back(tmp_path: Path) -> None:
    seen = {}
    path = tmp_path / "training_records.json"
    with TrainingSession("root", records_path=path) as root:

        def inner(scope):
            seen["running"] = [(s.name, s.finished) for s in root.record.substages]
            scope.log_action("picked", variant=2)
            scope.set_additional_data({"prompt": "v2"})
            scope.record_custom_metric("score", 0.75)
            return scope.run_agent_or_raise(
                "item-1", agent=lambda item: AgentOutcome(item.upper(), solved=True)
            )

        outcome = root.run_stage_or_raise("outer", inner)
    assert seen["running"] == [("outer", False)]
    assert outcome.output == "ITEM-1"
    tree = StageRecord.model_validate_json(path.read_text())
    [outer] = tree.substages
    assert (outer.kind, outer.finished, outer.additional_data) == ("stage", True, {"prompt": "v2"})
    assert outer.action_log[0]["action"] == "picked" and outer.metrics["score"] == 0.75
    [leaf] = outer.substages
    assert (leaf.kind, leaf.completed, leaf.solved, leaf.item) == ("agent_run", True, True, "item-1")
    assert tree.metrics["agent_runs_solved"] == 1 and tree.finished


def test_failures_become_results_are_recorded_once_and_raise_on_request() -> None:
    with TrainingSession("root") as root:
        failed = root.run_agent("x", agent=lambda item: 1 / 0)
        assert not failed.ok and isinstance(failed.error, ZeroDivisionError)
        assert root.record.substages[-1].failure.kind == "ZeroDivisionError"

        def raising(scope):
            scope.run_agent_or_raise("y", agent=lambda item: {}["missing"])

        stage = root.run_stage("raising", raising)
        assert not stage.ok and isinstance(stage.error, KeyError)
        with pytest.raises(KeyError):
            stage.get_or_raise()
    metrics = root.record.metrics
    # two failed leaves, each counted once although the second also failed its stage
    assert metrics["failures"] == 2 and metrics["failures_by_kind"] == {"ZeroDivisionError": 1, "KeyError": 1}
    assert metrics["permanent_failures"] == 1 and metrics["unknown_failures"] == 1
    assert metrics["agent_runs_failed"] == 2 and metrics["substages_failed"] == 2


def test_elapsed_and_etc_follow_koogs_rule() -> None:
    snapshots = []
    with TrainingSession("root") as root:

        def item(scope, n):
            if n == 2:
                time.sleep(0.05)
                snapshots.append(scope._session.metrics_of(root.record.substages[0]))
                snapshots.append(time.time() - scope.record.started_at)  # how long the running item has run
            time.sleep(0.1)

        root.map_iterable_stage("items", range(4), item)
    during, running_for = snapshots
    assert (during["substages_finished"], during["substages_total"], during["substages"]) == (2, 4, 3)
    average = during["avg_substage_seconds"]
    assert 0.09 < average < 0.2 and during["max_substage_seconds"] >= average
    # the running item has about (average - its elapsed) left, and one item has not started: + average
    assert during["etc_seconds"] == pytest.approx(max(average - running_for, 0) + average, abs=0.01)
    finished = root.record.substages[0].metrics
    assert finished["etc_seconds"] == 0.0 and finished["finished_ratio"] == 1.0


def test_consumption_rolls_up_with_and_without_retries_and_per_substage() -> None:
    answers = iter(["not json", '{"answer": 4}', '{"answer": 5}'])
    with FakeChatServer(lambda body: {"content": next(answers)}) as server:
        client = ChatClient(server.base_url, "m")

        class Answer(BaseModel):
            answer: int

        lenient_parse = RetryPolicy(
            max_attempts=2,
            backoff=Backoff.FIXED,
            base_seconds=0,
            analyser=lambda err: FailureInfo(kind=type(err).__name__, message="", transient=True),
        )
        with TrainingSession("root", llm=client) as root:
            first = root.run_stage_or_raise(
                "first",
                lambda s: s.execute_prompt_structured_or_raise(
                    [{"role": "user", "content": "two plus two"}], Answer, retry=lenient_parse
                ),
            )
            second = root.run_stage_or_raise(
                "second",
                lambda s: s.execute_prompt_or_raise([{"role": "user", "content": "two plus three please"}]),
            )
    assert first.answer == 4 and second.content == '{"answer": 5}'
    metrics = root.record.metrics
    # each call: prompt tokens = words in the request, completion = words in the answer + 1
    assert metrics["tokens"] == (3 + 3) + (3 + 3) + (4 + 3)  # the failed parse attempt counts here ...
    assert metrics["tokens_without_retries"] == (3 + 3) + (4 + 3)  # ... and not here
    assert metrics["retries"] == 1 and metrics["retried_leaves"] == 1 and metrics["llm_calls"] == 3
    assert (metrics["substage_tokens_min"], metrics["substage_tokens_max"]) == (7, 12)
    assert metrics["substage_tokens_avg"] == 9.5
    leaf = root.record.substages[0].substages[0]
    assert leaf.previous_attempts[0].failure.kind == "ValidationError" and leaf.consumption.total_tokens == 6


def test_retry_backoffs_and_conservative_or_lenient_on_unknown_failures() -> None:
    assert [RetryPolicy(backoff=Backoff.FIXED, base_seconds=1).delay(n) for n in (1, 2, 3)] == [1, 1, 1]
    assert [RetryPolicy(backoff=Backoff.LINEAR, base_seconds=1).delay(n) for n in (1, 2, 3)] == [1, 2, 3]
    assert [RetryPolicy(base_seconds=1, max_seconds=3).delay(n) for n in (1, 2, 3)] == [1, 2, 3]
    unknown = FailureInfo(kind="Odd", message="", transient=None)
    assert not RetryPolicy().should_retry(unknown, 1) and RetryPolicy(lenient=True).should_retry(unknown, 1)
    calls = {"n": 0}

    def flaky(item):
        calls["n"] += 1
        if calls["n"] < 3:
            raise LLMError("HTTP 503: busy", transient=True, status=503)
        return AgentOutcome("ok", solved=True)

    with TrainingSession("root") as root:
        result = root.run_agent("x", agent=flaky, retry=RetryPolicy(max_attempts=3, base_seconds=0))
    assert result.ok and calls["n"] == 3
    assert [a.failure.transient for a in root.record.substages[0].previous_attempts] == [True, True]
    assert root.record.metrics["retries"] == 2


def test_spend_cap_stops_the_session_once_and_keeps_the_partial_tree(tmp_path: Path) -> None:
    with FakeChatServer() as server:
        client = ChatClient(server.base_url, "m")
        path = tmp_path / "training_records.json"
        with (
            pytest.raises(SpendCapExceeded),
            TrainingSession("root", llm=client, budget=Budget(max_calls=2), records_path=path) as root,
        ):
            root.map_iterable_stage(
                "calls",
                range(5),
                lambda s, n: s.execute_prompt_or_raise([{"role": "user", "content": f"call {n}"}]),
            )
    assert len(server.requests) == 3  # the third call crossed the cap; nothing ran after it
    tree = json.loads(path.read_text())
    assert tree["failure"]["kind"] == "SpendCapExceeded" and tree["metrics"]["llm_calls"] == 3
    assert len(tree["substages"][0]["substages"]) == 3


def test_parallel_map_keeps_order_and_attributes_usage_per_leaf() -> None:
    def reply(body):
        time.sleep(0.02 * (5 - int(body["messages"][0]["content"])))  # later items answer first
        return {"content": " ".join(["w"] * int(body["messages"][0]["content"]))}

    with FakeChatServer(reply) as server:
        client = ChatClient(server.base_url, "m", max_concurrency=4)
        with TrainingSession("root", llm=client) as root:
            result = root.parallel_map(
                "fan out",
                range(1, 5),
                lambda s, n: s.execute_prompt_or_raise([{"role": "user", "content": str(n)}]).content,
                max_concurrency=4,
            )
    assert result.value == ["w", "w w", "w w w", "w w w w"]
    items = root.record.substages[0].substages
    assert [s.name for s in items] == ["1", "2", "3", "4"]
    assert [s.substages[0].consumption.completion_tokens for s in items] == [2, 3, 4, 5]


def test_resampling_until_solved_and_dataset_iteration() -> None:
    attempts = iter([False, False, True])

    def fresh_agent():
        solved = next(attempts)  # each attempt gets a new agent, as agent_provider promises
        return lambda item: AgentOutcome(item, solved=solved)

    with TrainingSession("root", dataset=list(range(10))) as root:
        outcome = root.run_agent_with_retries(
            "hard item",
            max_attempts=5,
            until=RunUntil.SOLVED,
            agent_provider=fresh_agent,
        )
        assert outcome.value.solved and len(root.record.substages[0].substages) == 3

        stopped = root.iterate_dataset(
            lambda s, n: AgentOutcome(n, solved=n % 2 == 0), early_stop=lambda m: m["substages_finished"] >= 4
        )
        assert len(stopped.value) == 4
        dataset_metrics = root.record.substages[1].metrics
        assert dataset_metrics["solved_rate"] == 0.5 and dataset_metrics["items_solved"] == 2

        failing = root.iterate_dataset(lambda s, n: 1 / 0, name="doomed")
        assert not failing.ok and "failure rate" in str(failing.error)
        assert len(root.record.substages[2].substages) == 5  # stopped after the first few items
    assert root.record.metrics["min_solved_rate"] == 0.0 and root.record.metrics["max_failure_rate"] == 1.0
