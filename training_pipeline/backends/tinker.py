"""Tinker supervised fine-tuning (LoRA), driven batch by batch through Thinking Machines' `tinker` SDK.

Unlike the hosted jobs (OpenAI, Vertex), Tinker trains where the client says: this module validates the
chat file, tokenises it with the model's chat format (loss on the assistant's turns), runs
`forward_backward` + `optim_step` per batch for the configured epochs, saves the weights for sampling and
returns their `tinker://` path as the run's artifact. `tuned_model` then checks the checkpoint is listed
under the training run (`sampler_checkpoint`) and has the tuned weights and the base model answer the
run's test split through Tinker's sampling clients (`sampling_models`).

Examples are read by byte offset, so a large file is never held in memory: each epoch shuffles the
offsets (seeded) and tokenises one batch at a time. The next batch is submitted before the previous
one's results are awaited, so the service is never idle waiting on this process.
"""

from __future__ import annotations

import contextlib
import json
import random
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from training_pipeline.backends.base import BackendError, DispatchRequest, DispatchResult
from training_pipeline.backends.chat_tokens import (
    ROLES,
    Llama3Chat,
    TokenizerError,
    chat_format,
    llama_messages,
    load_tokenizer,
)
from training_pipeline.backends.formats import Ask, calls_text, chat_converter, convert_file


@dataclass(frozen=True)
class TinkerConfig:
    """The `tinker` backend resource's settings (its defaults live there)."""

    base_url: str | None
    api_key: str
    base_model: str
    tokenizer: str | None
    lora_rank: int
    learning_rate: float
    epochs: int
    batch_size: int
    max_example_tokens: int
    seed: int


def validate_chat_file(path: Path, chat: Llama3Chat, max_tokens: int) -> list[int]:
    """Checks every line before anything is sent; returns the byte offset of each example.
    Fails on the first bad line, naming it."""
    offsets: list[int] = []
    with path.open("rb") as handle:
        offset = 0
        for number, line in enumerate(handle, start=1):
            if line.strip():
                where = f"{path.name} line {number}"
                try:
                    messages = llama_messages(json.loads(line))
                except (ValueError, KeyError, TypeError, AttributeError) as err:
                    raise BackendError(f"{where}: not a chat example ({err})") from None
                _check_messages(messages, where)
                length = len(chat.render(messages).tokens)
                if length > max_tokens:
                    raise BackendError(f"{where}: {length} tokens, over the {max_tokens} allowed per example")
                offsets.append(offset)
            offset += len(line)
    if not offsets:
        raise BackendError(f"{path.name}: no examples to train on")
    return offsets


def _check_messages(messages: Any, where: str) -> None:
    if not isinstance(messages, list) or not messages:
        raise BackendError(f"{where}: missing messages list")
    for message in messages:
        if not isinstance(message, dict) or message.get("role") not in ROLES:
            raise BackendError(f"{where}: every message needs a role of {', '.join(ROLES)}")
        if not isinstance(message.get("content"), str) or not message["content"]:
            raise BackendError(f"{where}: empty or non-text content")
    if messages[-1]["role"] != "assistant":
        raise BackendError(f"{where}: the last message must be the assistant's (it is what is trained)")


def _batches(
    path: Path, offsets: list[int], size: int, rng: random.Random
) -> Iterator[list[list[dict[str, str]]]]:
    order = offsets[:]
    rng.shuffle(order)
    with path.open("rb") as handle:
        for start in range(0, len(order), size):
            batch = []
            for offset in order[start : start + size]:
                handle.seek(offset)
                batch.append(llama_messages(json.loads(handle.readline())))
            yield batch


def _datum(chat: Llama3Chat, messages: list[dict[str, str]]) -> tuple[Any, float]:
    """Next-token prediction: the model reads tokens[:-1] and is scored on tokens[1:] where trained.
    Returns the datum and how many of its tokens are trained (the loss is a sum over them)."""
    from tinker import types

    rendered = chat.render(messages)
    datum = types.Datum(
        model_input=types.ModelInput.from_ints(rendered.tokens[:-1]),
        loss_fn_inputs={"target_tokens": rendered.tokens[1:], "weights": rendered.weights[1:]},
    )
    return datum, sum(rendered.weights[1:])


@dataclass(frozen=True)
class _Step:
    """One batch in flight: its forward-backward and optimiser-step futures."""

    forward_backward: Any
    optim_step: Any
    trained_tokens: float

    def settle(self, totals: list[float]) -> None:
        totals[0] += self.forward_backward.result().metrics["loss:sum"]
        self.optim_step.result()
        totals[1] += self.trained_tokens


def _train(
    request: DispatchRequest,
    config: TinkerConfig,
    chat: Llama3Chat,
    chat_file: Path,
    offsets: list[int],
    validation: tuple[Path, list[int]] | None = None,
) -> tuple[str, str, list[float], list[float]]:
    """One session: a LoRA training client, the epochs batch by batch (and after each, the loss on the
    `validation` examples, forward only), the sampler weights saved. Returns the training run's id,
    the sampler weights' path, and the mean loss per trained token of each epoch and on validation."""
    import tinker
    from tinker import types

    rng = random.Random(config.seed)
    losses: list[float] = []
    validation_losses: list[float] = []
    with tinker.ServiceClient(
        base_url=config.base_url, api_key=config.api_key, user_metadata={"run_id": request.run_id}
    ) as service:
        training = service.create_lora_training_client(
            base_model=config.base_model, rank=config.lora_rank, seed=config.seed
        ).result()
        model_id = training.model_id
        request.log(f"Tinker training run {model_id} on {config.base_model}, LoRA rank {config.lora_rank}")
        adam = types.AdamParams(learning_rate=config.learning_rate)
        for epoch in range(config.epochs):
            totals = [0.0, 0.0]  # summed loss, trained tokens
            previous: _Step | None = None
            for batch in _batches(chat_file, offsets, config.batch_size, rng):
                data, trained = zip(*(_datum(chat, messages) for messages in batch), strict=True)
                step = _Step(
                    training.forward_backward(list(data), "cross_entropy"),
                    training.optim_step(adam),
                    sum(trained),
                )
                if previous is not None:
                    previous.settle(totals)
                previous = step
            if previous is not None:
                previous.settle(totals)
            losses.append(totals[0] / totals[1] if totals[1] else 0.0)
            said = f"epoch {epoch + 1}/{config.epochs}: mean loss per trained token {losses[-1]:.4f}"
            if validation is not None:
                validation_losses.append(_validation_loss(training, chat, *validation, config.batch_size))
                said += f", on validation {validation_losses[-1]:.4f}"
            request.log(said)
        sampler_path = (
            training.save_weights_for_sampler(request.run_id, user_metadata={"task": request.task})
            .result()
            .path
        )
    return model_id, sampler_path, losses, validation_losses


def _validation_loss(training: Any, chat: Llama3Chat, path: Path, offsets: list[int], size: int) -> float:
    """Mean loss per trained token on the validation examples, forward only (no gradient, no step);
    every batch submitted before the first result is awaited."""
    futures = []
    for batch in _batches(path, offsets, size, random.Random(0)):
        data, trained = zip(*(_datum(chat, messages) for messages in batch), strict=True)
        futures.append((training.forward(list(data), "cross_entropy"), sum(trained)))
    loss = sum(future.result().metrics["loss:sum"] for future, _ in futures)
    tokens = sum(trained for _, trained in futures)
    return loss / tokens if tokens else 0.0


def run_tinker(request: DispatchRequest, config: TinkerConfig) -> DispatchResult:
    try:
        chat = chat_format(config.base_model, load_tokenizer(config.tokenizer))
    except TokenizerError as err:
        raise BackendError(str(err)) from None
    chat_file = request.work_dir / f"{request.task}.chat.jsonl"
    convert_file(request.dataset_path, chat_file, chat_converter(request.format))
    offsets = validate_chat_file(chat_file, chat, config.max_example_tokens)
    validation = None
    if request.validation_path is not None:
        validation_file = request.work_dir / f"{request.task}.validation.chat.jsonl"
        convert_file(request.validation_path, validation_file, chat_converter(request.format))
        validation = (validation_file, validate_chat_file(validation_file, chat, config.max_example_tokens))
    request.log(f"{len(offsets)} examples valid for {config.base_model}; starting a Tinker session")

    import tinker

    try:
        model_id, sampler_path, losses, validation_losses = _train(
            request, config, chat, chat_file, offsets, validation
        )
    except tinker.TinkerError as err:
        raise BackendError(f"Tinker: {type(err).__name__}: {err}") from None
    request.log(f"sampler weights saved: {sampler_path}")
    return DispatchResult(
        True,
        artifact_path=sampler_path,
        notes=[
            f"Tinker training run {model_id}: {len(offsets)} examples, {config.epochs} epoch(s), "
            f"batch {config.batch_size}, learning rate {config.learning_rate}",
            f"sampler weights: {sampler_path}",
        ],
        details={
            "poll": {"service": "tinker", "training_run": model_id, "sampler_path": sampler_path},
            "base_model": config.base_model,
            "examples": len(offsets),
            "epoch_losses": losses,
            "validation_losses": validation_losses,
        },
    )


def sampler_checkpoint(base_url: str | None, api_key: str, training_run: str, path: str) -> dict[str, Any]:
    """The sampler checkpoint `path` as the service lists it under `training_run`; raises when the
    service does not list it (the weights a run recorded are not there to sample from)."""
    import tinker

    listing = tinker.RestClient(base_url=base_url, api_key=api_key).list_checkpoints(training_run).result()
    for checkpoint in listing.checkpoints:
        if checkpoint.tinker_path == path:
            return checkpoint.model_dump(mode="json")
    raise BackendError(f"Tinker lists no checkpoint {path} under training run {training_run}")


@contextlib.contextmanager
def sampling_models(
    config: TinkerConfig, base_model: str, model_path: str, max_tokens: int = 512
) -> Iterator[tuple[Ask, Ask]]:
    """The base model and the tuned weights at `model_path` answering through Tinker's sampling
    clients, as (base, tuned): greedy (temperature 0), to the end of the assistant's turn. Prompts are
    rendered with the chat format the weights were trained in (`llama_messages`: tools as Llama 3.1
    offers them), and a tool call written back as the JSON every service's answer is compared in.
    A sampling client is made when its model is first asked (never, when nothing is judged); both
    may be asked from several threads. The SDK's errors become `BackendError`s."""
    import tinker

    try:
        chat = chat_format(base_model, load_tokenizer(config.tokenizer))
    except TokenizerError as err:
        raise BackendError(str(err)) from None
    try:
        with tinker.ServiceClient(base_url=config.base_url, api_key=config.api_key) as service:
            yield (
                _sampled(lambda: service.create_sampling_client(base_model=base_model), chat, max_tokens),
                _sampled(lambda: service.create_sampling_client(model_path=model_path), chat, max_tokens),
            )
    except tinker.TinkerError as err:
        raise BackendError(f"Tinker: {type(err).__name__}: {err}") from None


def _sampled(create: Callable[[], Any], chat: Llama3Chat, max_tokens: int) -> Ask:
    from tinker import types

    params = types.SamplingParams(max_tokens=max_tokens, temperature=0.0, stop=[chat.end_of_turn])
    lock, made = threading.Lock(), []

    def ask(prompt: list[dict[str, Any]], tools: list[dict[str, Any]] | None) -> str:
        with lock:
            if not made:
                made.append(create().result())
        messages = llama_messages({"messages": prompt, "tools": tools})
        model_input = types.ModelInput.from_ints(chat.prompt(messages))
        response = made[0].sample(prompt=model_input, num_samples=1, sampling_params=params).result()
        text = chat.answer(response.sequences[0].tokens)
        return tool_call_text(text) if tools else text

    return ask


def tool_call_text(text: str) -> str:
    """A Llama 3.1 tool call (`{"name", "parameters"}`) as `calls_text`; any other answer as written."""
    try:
        call = json.loads(text)
    except ValueError:
        return text
    if isinstance(call, dict) and isinstance(call.get("name"), str):
        return calls_text([(call["name"], call.get("parameters", {}))])
    return text
