"""A loopback stand-in for Thinking Machines' Tinker training service (the hosted service cannot be
reached here), driven by the real `tinker` SDK.

It speaks the protocol the installed SDK uses: `X-API-Key` auth (`tml-` keys), client config, sessions
and their heartbeats, `create_model` and `get_info`, `forward_backward` as protobuf (zstd-compressed when
the config says so) answered through `retrieve_future` as protobuf, `optim_step` and
`save_weights_for_sampler` as JSON futures, the first poll of each future answered `try_again` as a busy
service does, the checkpoint listing of a training run, and sampling: sampling sessions (of a base model
or of saved sampler weights), joining one, `asample` answered as a protobuf `SampleResponse`.

The "model" is a unigram over the vocabulary that `optim_step` really updates from the gradients the
weighted targets leave, so the loss a run reports falls as it trains and a wrong loss mask shows; and
beside it a bigram of the trained (token, next token) pairs, which sampling decodes greedily from the
prompt's last token. A base model has learnt no pair and ends its turn at once; saved weights answer
with what they were trained on, whatever the prompt: a model that learnt the commonest reply.
"""

from __future__ import annotations

import copy
import json
import math
import re
import threading
import uuid
from collections import Counter, defaultdict
from datetime import UTC, datetime
from typing import Any

import numpy as np
import zstandard
from tinker.proto import tinker_public_pb2 as pb

from tests.loopback import Answer, LoopbackJSONServer

PROTO = {"content-type": "application/x-protobuf"}
VOCAB = 128_256  # Llama 3's


class FakeTinker(LoopbackJSONServer):
    def __init__(self, api_key: str = "tml-test-key-for-the-loopback-service-0000") -> None:
        super().__init__()
        self.api_key = api_key
        self.lock = threading.Lock()
        self.paths: list[str] = []
        self.sessions: dict[str, int] = {}  # session id -> heartbeats
        self.finished: dict[str, str] = {}  # session id -> the reason the client gave
        self.models: dict[str, dict[str, Any]] = {}
        self.futures: dict[str, tuple[int, Any]] = {}  # id -> (polls so far, answer)
        self.batches: list[dict[str, Any]] = []  # every datum forward_backward received, decoded
        self.forwards: list[dict[str, Any]] = []  # every datum a forward-only request (validation) sent
        self.optim_steps: list[dict[str, Any]] = []
        self.sampler_weights: dict[str, dict[int, Counter[int]]] = {}  # tinker path -> bigram saved
        self.samplers: dict[str, dict[str, Any]] = {}  # sampling session id -> what it samples
        self.samples: list[dict[str, Any]] = []  # every sample request: the sampler and the prompt
        self.compress = True  # ask the SDK for zstd bodies, as the service does for big payloads
        self.fail_forward_backward: str | None = None
        self.fail_sampling: str | None = None

    @property
    def base_url(self) -> str:
        return self.origin

    def handle(self, method: str, path: str, headers: Any, body: bytes) -> Answer:
        with self.lock:
            self.paths.append(path)
        if path == "/api/v1/healthz":
            return 200, {"status": "ok"}
        if headers.get("x-api-key") != self.api_key:
            return 401, {"detail": "Invalid API key"}
        if path == "/api/v1/client/config":
            return 200, {"pjwt_auth_enabled": False, "proto_compress_fwdbwd": self.compress}
        if path == "/api/v1/client/dynamic_config":
            return 200, {}
        if path == "/api/v1/telemetry":
            return 200, {"status": "accepted"}
        if path == "/api/v1/forward_backward":
            if headers.get("content-encoding") == "zstd":
                body = zstandard.ZstdDecompressor().decompress(body)
            return self._forward_backward(body)
        match = re.fullmatch(r"/api/v1/sessions/([\w-]+)/finish", path)
        if method == "POST" and match and match[1] in self.sessions:
            self.finished[match[1]] = json.loads(body)["reason"]["type"]
            return 200, {}
        match = re.fullmatch(r"/api/v1/training_runs/([\w-]+)/checkpoints", path)
        if method == "GET" and match:
            return self._checkpoints(match[1])
        match = re.fullmatch(r"/api/v1/samplers/([\w-]+)", path)
        if method == "GET" and match:
            return self._sampler(match[1])
        request = json.loads(body or b"{}")
        handler = {
            "/api/v1/create_session": self._create_session,
            "/api/v1/session_heartbeat": self._heartbeat,
            "/api/v1/create_model": self._create_model,
            "/api/v1/get_info": self._get_info,
            "/api/v1/optim_step": self._optim_step,
            "/api/v1/save_weights_for_sampler": self._save_for_sampler,
            "/api/v1/retrieve_future": self._retrieve,
            "/api/v1/create_sampling_session": self._create_sampling_session,
            "/api/v1/join_sampling_session": self._join_sampling_session,
            "/api/v1/asample": self._asample,
        }.get(path)
        if handler is None:
            return 404, {"detail": f"no route {method} {path}"}
        return handler(request)

    # sessions and models

    def _create_session(self, request: dict[str, Any]) -> Answer:
        session = f"session-{uuid.uuid4().hex[:12]}"
        self.sessions[session] = 0
        return 200, {"type": "create_session", "session_id": session}

    def _heartbeat(self, request: dict[str, Any]) -> Answer:
        if request.get("session_id") not in self.sessions:
            return 404, {"detail": "unknown session"}
        if request["session_id"] in self.finished:
            return 410, {"detail": "session finished"}
        self.sessions[request["session_id"]] += 1
        return 200, {"type": "session_heartbeat"}

    def _create_model(self, request: dict[str, Any]) -> Answer:
        if request.get("session_id") not in self.sessions:
            return 400, {"detail": "unknown session"}
        model_id = f"run-{uuid.uuid4().hex[:12]}"
        self.models[model_id] = {
            "base_model": request["base_model"],
            "lora_rank": (request.get("lora_config") or {}).get("rank"),
            "counts": np.zeros(VOCAB, dtype=np.float64),
            "gradient": np.zeros(VOCAB, dtype=np.float64),
            "pairs": defaultdict(Counter),  # token -> the next tokens trained after it, weighted
            "pair_gradient": [],
            "checkpoints": [],
        }
        return self._future({"type": "create_model", "model_id": model_id})

    def _get_info(self, request: dict[str, Any]) -> Answer:
        model = self.models.get(request.get("model_id", ""))
        if model is None:
            return 404, {"detail": "unknown model"}
        return 200, {
            "type": "get_info",
            "model_id": request["model_id"],
            "model_data": {
                "arch": "llama",
                "model_name": model["base_model"],
                "tokenizer_id": model["base_model"],
            },
            "is_lora": True,
            "lora_rank": model["lora_rank"],
            "model_name": model["base_model"],
        }

    # training

    def _forward_backward(self, body: bytes) -> Answer:
        request = pb.ForwardBackwardRequest()
        request.ParseFromString(body)
        model = self.models.get(request.model_id)
        if model is None:
            return 404, {"detail": "unknown model"}
        if request.loss_fn != "cross_entropy":
            return self._future({"error": f"unsupported loss {request.loss_fn}", "category": "user"})
        if self.fail_forward_backward:
            return self._future({"error": self.fail_forward_backward, "category": "user"})
        counts = model["counts"]
        logprobs: list[np.ndarray] = []
        loss = weight_total = 0.0
        for datum in request.data:
            tokens = np.concatenate(
                [np.frombuffer(c.encoded_text.tokens, dtype=np.int32) for c in datum.model_input]
            )
            targets = _dense(datum.loss_fn_inputs["target_tokens"])
            weights = _dense(datum.loss_fn_inputs["weights"])
            if not (len(tokens) == len(targets) == len(weights)):
                return self._future(
                    {"error": "target_tokens and weights must match the input length", "category": "user"}
                )
            if targets.max(initial=0) >= VOCAB or tokens.max(initial=0) >= VOCAB:
                return self._future({"error": "token id outside the vocabulary", "category": "user"})
            (self.forwards if request.forward_only else self.batches).append(
                {"tokens": tokens.tolist(), "targets": targets.tolist(), "weights": weights.tolist()}
            )
            datum_logprobs = np.log((counts[targets] + 1.0) / (counts.sum() + VOCAB))
            logprobs.append(datum_logprobs.astype(np.float32))
            loss -= float((weights * datum_logprobs).sum())
            weight_total += float(weights.sum())
            if not request.forward_only:
                np.add.at(model["gradient"], targets.astype(np.int64), weights)
                model["pair_gradient"].extend(
                    (int(t), int(n), float(w)) for t, n, w in zip(tokens, targets, weights, strict=True) if w
                )
        output = pb.ForwardBackwardOutput(loss_fn_output_type="ArrayRecord")
        output.metrics["loss:sum"] = loss
        record = output.loss_fn_outputs.add(num_datums=len(logprobs))
        batched = record.fields["logprobs"]
        batched.dtype = pb.DTYPE_FLOAT32
        batched.data = b"".join(a.tobytes() for a in logprobs)
        batched.offsets = np.cumsum([0, *(a.nbytes for a in logprobs)], dtype=np.int64).tobytes()
        return self._future(output.SerializeToString())

    def _optim_step(self, request: dict[str, Any]) -> Answer:
        model = self.models.get(request.get("model_id", ""))
        if model is None:
            return 404, {"detail": "unknown model"}
        params = request.get("adam_params") or {}
        self.optim_steps.append(params)
        step = float(params.get("learning_rate", 1e-4)) * 1e4 * model["gradient"]
        model["counts"] += step
        model["gradient"][:] = 0
        for token, following, weight in model["pair_gradient"]:
            model["pairs"][token][following] += weight
        model["pair_gradient"] = []
        return self._future({"metrics": {"update_norm:sum": float(math.sqrt((step**2).sum()))}})

    def _save_for_sampler(self, request: dict[str, Any]) -> Answer:
        model = self.models.get(request.get("model_id", ""))
        if model is None:
            return 404, {"detail": "unknown model"}
        name = request.get("path") or uuid.uuid4().hex[:8]
        path = f"tinker://{request['model_id']}/sampler_weights/{name}"
        self.sampler_weights[path] = copy.deepcopy(dict(model["pairs"]))
        model["checkpoints"].append(
            {
                "checkpoint_id": f"sampler_weights/{name}",
                "checkpoint_type": "sampler",
                "time": datetime.now(UTC).isoformat(),
                "tinker_path": path,
                "size_bytes": 1 << 20,
                "user_metadata": request.get("user_metadata"),
            }
        )
        return self._future({"type": "save_weights_for_sampler", "path": path})

    def _checkpoints(self, model_id: str) -> Answer:
        model = self.models.get(model_id)
        if model is None:
            return 404, {"detail": "unknown training run"}
        return 200, {"checkpoints": model["checkpoints"]}

    # sampling

    def _create_sampling_session(self, request: dict[str, Any]) -> Answer:
        if request.get("session_id") not in self.sessions:
            return 400, {"detail": "unknown session"}
        path, base_model = request.get("model_path"), request.get("base_model")
        if path is not None and path not in self.sampler_weights:
            return 404, {"detail": f"no sampler weights at {path}"}
        if path is not None:
            base_model = self.models[path.split("/")[2]]["base_model"]
        sampler = f"sampler-{uuid.uuid4().hex[:12]}"
        self.samplers[sampler] = {
            "model_path": path,
            "base_model": base_model,
            "pairs": self.sampler_weights.get(path, {}),
            "clients": 0,
        }
        return 200, {"type": "create_sampling_session", "sampling_session_id": sampler}

    def _join_sampling_session(self, request: dict[str, Any]) -> Answer:
        sampler = self.samplers.get(request.get("sampling_session_id", ""))
        if sampler is None:
            return 404, {"detail": "unknown sampling session"}
        sampler["clients"] += 1
        return 200, {"type": "join_sampling_session", "client_counter": sampler["clients"]}

    def _sampler(self, sampler_id: str) -> Answer:
        sampler = self.samplers.get(sampler_id)
        if sampler is None:
            return 404, {"detail": "unknown sampler"}
        return 200, {
            "sampler_id": sampler_id,
            "base_model": sampler["base_model"],
            "model_path": sampler["model_path"],
        }

    def _asample(self, request: dict[str, Any]) -> Answer:
        sampler = self.samplers.get(request.get("sampling_session_id", ""))
        if sampler is None:
            return 404, {"detail": "unknown sampling session"}
        prompt = [t for chunk in request["prompt"]["chunks"] for t in chunk["tokens"]]
        params = request["sampling_params"]
        self.samples.append({"model_path": sampler["model_path"], "prompt": prompt, "params": params})
        if self.fail_sampling:
            return self._future({"error": self.fail_sampling, "category": "user"})
        stops = set(params.get("stop") or ())
        tokens, previous = [], prompt[-1]
        while len(tokens) < (params.get("max_tokens") or 64):
            following = sampler["pairs"].get(previous)
            # greedy: the heaviest next token, the smallest id among equals; nothing learnt ends the turn
            previous = (
                min(following, key=lambda t: (-following[t], t)) if following else min(stops, default=-1)
            )
            if previous < 0:
                break
            tokens.append(previous)
            if previous in stops:
                break
        response = pb.SampleResponse()
        sequence = response.sequences.add(
            stop_reason=pb.STOP_REASON_STOP if tokens and tokens[-1] in stops else pb.STOP_REASON_LENGTH
        )
        sequence.tokens = np.asarray(tokens, dtype=np.int32).tobytes()
        sequence.logprobs = np.zeros(len(tokens), dtype=np.float32).tobytes()
        # a sampling promise names its sequences as it is made (the SDK stamps them on the result)
        return self._future(response.SerializeToString(), sample_sequence_ids=[uuid.uuid4().hex])

    # futures

    def _future(self, answer: Any, **promise: Any) -> Answer:
        request_id = f"req-{uuid.uuid4().hex[:12]}"
        with self.lock:
            self.futures[request_id] = (0, answer)
        return 200, {"request_id": request_id, **promise}

    def _retrieve(self, request: dict[str, Any]) -> Answer:
        request_id = request.get("request_id", "")
        with self.lock:
            if request_id not in self.futures:
                return 404, {"detail": "unknown request"}
            polls, answer = self.futures[request_id]
            self.futures[request_id] = (polls + 1, answer)
        if polls == 0:
            return 200, {"type": "try_again", "request_id": request_id, "queue_state": "active"}
        if isinstance(answer, bytes):
            return 200, answer, PROTO
        return 200, answer


def _dense(tensor: pb.Tensor) -> np.ndarray:
    dtype = {pb.DTYPE_FLOAT32: np.float32, pb.DTYPE_INT64: np.int64, pb.DTYPE_INT32: np.int32}[tensor.dtype]
    if tensor.HasField("sparse_csr"):
        values = np.frombuffer(tensor.sparse_csr.values, dtype=dtype)
        columns = np.frombuffer(tensor.sparse_csr.col_indices, dtype=np.int64)
        dense = np.zeros(tensor.shape[-1], dtype=dtype)
        dense[columns] = values
        return dense
    return np.frombuffer(tensor.dense, dtype=dtype)
