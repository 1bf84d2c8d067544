"""The embedded default LLM, for real: SmolLM2-135M on llama.cpp's server on loopback.

Skipped unless `make local-llm` installed it. The model is tiny, so these tests check the shape of
what comes back, determinism at temperature 0 and that the pipeline runs, never answer quality.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.helpers import REPO, command_lines, until_gone
from training_pipeline.backends.base import DispatchRequest
from training_pipeline.datasets.training_tasks import ids_path
from training_pipeline.llm.answer_form import AnswerForm
from training_pipeline.llm.client import ChatClient
from training_pipeline.llm.local import LocalModelServer, local_model_available
from training_pipeline.optimizers.native import load_artifact, run_native
from training_pipeline.optimizers.programs import OptimiserConfig
from training_pipeline.optimizers.scoring import respond_decision

pytestmark = pytest.mark.skipif(
    not local_model_available(), reason="local model not installed (make local-llm)"
)


@pytest.mark.parametrize("owner", ["starter", "parent"])
def test_the_local_model_ends_with_the_process_of_the_run_it_serves(owner: str) -> None:
    """A run's process killed (`kill -9`) while the local model serves it: nothing would stop the
    server after that (its memory and a thread per core), so it ends with that process: the one that
    started it, or (a step's process of the multiprocess executor, gone since) that one's parent."""
    start = (
        "from training_pipeline.llm.local import LocalModelServer\n"
        f"server = LocalModelServer(context_size=512).start(lifeline={owner!r})\n"
        "print(server.port, flush=True)\n"
    )
    code = (
        f"exec({start!r})\n"
        if owner == "starter"
        else f"import subprocess, sys\nsubprocess.run([sys.executable, '-c', {start!r}], check=True)\n"
    ) + "import time\ntime.sleep(300)\n"
    run = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, cwd=REPO)
    try:
        assert run.stdout is not None
        port = run.stdout.readline().strip()
        assert port, "the local model did not start"
        serving = f"--port\0{port}\0"  # the server's own command line, and its launcher's
        time.sleep(1)  # a step's process that started it has exited by now
        assert command_lines(serving)
    finally:
        run.kill()
        run.wait()
    until_gone(serving, seconds=10)


@pytest.fixture(scope="module")
def server():
    with LocalModelServer(context_size=1024) as running:
        yield running


def test_the_local_model_answers_deterministically_at_temperature_zero(server: LocalModelServer) -> None:
    client = ChatClient(server.base_url, server.model_name)
    messages = [
        {"role": "system", "content": "You are brief."},
        {"role": "user", "content": "Say hello to Dana."},
    ]
    first, second = client.chat(messages, max_tokens=24), client.chat(messages, max_tokens=24)
    assert first.content and first.content == second.content
    assert first.usage.prompt_tokens > 5 and 0 < first.usage.completion_tokens <= 24


def test_a_decision_is_held_to_its_choices_by_a_grammar(server: LocalModelServer) -> None:
    """Unconstrained, the tiny model rambles; held to should_respond's form by a GBNF grammar, every
    answer is reasoning and then one of the decisions, which the strict decision scorer reads."""
    client = ChatClient(server.base_url, server.model_name, constraint="grammar")
    form = AnswerForm(
        ("IGNORE", "RESPOND", "STOP"),
        "<response><reasoning>",
        "</reasoning><action>",
        "</action></response>",
        80,
    )
    for line in ("Eliza, what's the status of the invoice?", "@bob did you see the thread?", "lol same"):
        messages = [
            {"role": "system", "content": "You are Eliza. Decide whether to respond."},
            {"role": "user", "content": f"# Conversation\ndana: {line}\n\nShould Eliza respond to dana?"},
        ]
        answer = client.chat(messages, max_tokens=64, answer_form=form)
        assert respond_decision(answer.content) in form.choices, answer.content


def test_a_native_optimisation_runs_on_the_local_model(server: LocalModelServer, tmp_path: Path) -> None:
    dataset = tmp_path / "response_trajectories.jsonl"
    rows = [
        {
            "messages": [
                {"role": "system", "content": "You greet people by name."},
                {"role": "user", "content": f"Greet {name}."},
                {"role": "model", "content": f"Hello {name}!"},
            ]
        }
        for name in ("Ada", "Bo", "Cy", "Di", "Ed")
    ]
    dataset.write_text("".join(json.dumps(r) + "\n" for r in rows))
    ids_path(dataset).write_text("".join(json.dumps(f"t{i}") + "\n" for i in range(5)))
    client = ChatClient(
        server.base_url, server.model_name, cache_dir=tmp_path / "cache", cache_all_temperatures=True
    )
    cfg = OptimiserConfig(optimizer="instruction-search", rounds=1, variants=1, train_batch=2, max_tokens=32)
    result = run_native(DispatchRequest("response", dataset, tmp_path, "run-local"), client, cfg, None)
    assert result.invoked
    artifact = load_artifact(Path(result.artifact_path))
    assert 0.0 <= artifact["baseline_score"] <= 1.0 and 0.0 <= artifact["score"] <= 1.0
    assert artifact["prompt"] and (tmp_path / "training_records.json").is_file()


def test_a_task_runs_agent_on_the_local_model_decides_in_its_form(tmp_path: Path) -> None:
    """A task run's agent holding should_respond's form (as an evaluation's agents do) on the local
    model the run starts itself: the server takes the form as a grammar (it refuses a `json_schema`
    response format)."""
    import asyncio

    from resources.llm import LLMResource
    from training_pipeline.tasks import runner
    from training_pipeline.tasks.registry import build_registry
    from training_pipeline.tasks.runtime import TaskRun
    from training_pipeline.tasks.task import parse_task

    form = {
        "choices": ["IGNORE", "RESPOND", "STOP"],
        "opening": "<response><reasoning>",
        "closing": "</reasoning><action>",
        "after": "</action></response>",
        "reasoning": 80,
    }
    task = parse_task(
        [
            {
                "id": "agent",
                "type": "deploy_agent",
                "agent_name": "eliza",
                "answer_form": form,
                "system_prompt": "You are Eliza. Decide whether to respond.",
                "max_tokens": 64,
            },
            {
                "id": "ask",
                "type": "prompt_agent",
                "agent_name": "eliza",
                "prompt_id": "ask",
                "max_turns": 1,
                "prompt": "# Conversation\ndana: Eliza, what's the status of the invoice?\n\n"
                "Should Eliza respond to dana?",
                "depends_on": [{"task_step_id": "agent"}],
            },
        ],
        build_registry(),
        name="decide",
    )
    run = TaskRun(task=task, run_id="r1", run_dir=tmp_path / "run", llm=LLMResource(context_tokens=1024))
    asyncio.run(runner.start_run(run))
    assert asyncio.run(runner.run_step(run, "agent")).status == "succeeded"
    outcome = asyncio.run(runner.run_step(run, "ask"))
    assert outcome.status == "succeeded", outcome
    [response] = run.store.state()["prompt_responses"]
    assert respond_decision(response["response"]) in form["choices"], response["response"]
    assert outcome.final_context is not None  # the run ended (and stopped the server it started)
