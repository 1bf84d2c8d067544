"""Property-based tests: whatever comes in, the pipeline answers with output or a reason, never a crash,
and its counts add up."""

from __future__ import annotations

import json
import re
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from training_pipeline.datasets.build import build_datasets
from training_pipeline.datasets.tasks import TASKS, build_example, infer_tasks
from training_pipeline.privacy.entities import EntityDirectory
from training_pipeline.privacy.filter import PrivacyFilter
from training_pipeline.privacy.rules import PROFILES, literal_first
from training_pipeline.trajectories.records import RawRecord, parse_record

from .test_privacy import FAMILIES

texts = st.text(alphabet=st.characters(codec="utf-8"), max_size=300) | st.sampled_from(
    [
        "sk-abcdefghijklmnopqrstu",
        "Bearer abcdefghijklmnopqr",
        "ghp_abcdefghijklmnopqrst",
        "AKIAABCDEFGHIJKLMNOP",
        "@alice",
        "primaryContext: x",
        "<actions>REPLY</actions>",
        "\ncontext_routing: a\ndecision_note: b",
        "\ufeff",
    ]
)
#: JSON's values: no NaN or Infinity, which `JSON.parse` (and so the pipeline) rejects as not JSON
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | texts,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(texts, inner, max_size=4),
    max_leaves=20,
)
calls = st.fixed_dictionaries(
    {},
    optional={
        "systemPrompt": st.none() | texts,
        "userPrompt": st.none() | texts,
        "response": st.none() | texts,
        "purpose": st.none() | texts,
        "stepType": st.none() | texts,
        "actionType": st.none() | texts,
        "model": st.none() | texts,
        "tags": st.none() | st.lists(texts, max_size=3),
        "metadata": st.none()
        | st.dictionaries(
            st.sampled_from(["modelType", "purpose", "model_type", "stepType", "x"]),
            st.none() | texts,
            max_size=3,
        ),
    },
)
trajectories = st.fixed_dictionaries(
    {"trajectoryId": texts, "startTime": st.integers(min_value=0, max_value=2_000_000_000_000)},
    optional={
        "agentId": st.none() | texts,
        "steps": st.none()
        | st.lists(
            st.fixed_dictionaries({}, optional={"llmCalls": st.none() | st.lists(calls, max_size=3)}),
            max_size=3,
        ),
        "extra": json_values,
    },
)


@given(st.binary(max_size=400) | json_values.map(lambda v: json.dumps(v).encode()))
def test_any_bytes_parse_to_a_trajectory_or_a_reason(data: bytes) -> None:
    parsed = parse_record(RawRecord("test:1", data))
    assert (parsed.trajectory is None) != (parsed.reason is None)


@given(trajectories)
def test_valid_shapes_parse_and_keep_every_field(record: dict) -> None:
    parsed = parse_record(RawRecord("test:1", json.dumps(record)))
    if parsed.trajectory is not None:
        assert parsed.trajectory == json.loads(json.dumps(record))
    else:
        assert parsed.reason and (record["trajectoryId"] == "" or parsed.reason.startswith("invalid field"))


@given(texts, st.sampled_from(["strict", "elizaos"]))
def test_the_filter_always_returns_text_and_counts_what_it_did(text: str, profile: str) -> None:
    privacy = PrivacyFilter(profile, env_secrets=("hunter2hunter2",))
    out = privacy.redact(text)
    assert isinstance(out, str)
    # every change is a counted redaction (each leaves a placeholder), and nothing counted left it alone
    assert (privacy.stats.redaction_count > 0) == (out != text)
    assert "hunter2hunter2" not in out


# Credentials, pieces of them, and characters where Python's and Hyperscan's views could part: multi-byte
# UTF-8, JavaScript whitespace, case folding outside ASCII (the Kelvin sign, dotted I).
_credentials = [text for _, text in FAMILIES] + ["Authorization: Bearer abcdefghijklmnop", "aws_key='x'"]
_pieces = st.sampled_from(_credentials) | st.tuples(
    st.sampled_from(_credentials), st.integers(0, 120), st.integers(0, 120)
).map(lambda t: t[0][t[1] : t[1] + t[2]])
_noise = st.text(alphabet="aZ09_-.:/=@'\" \t\n\u00a0\u2028\u3000é€😀İ\u212a", max_size=40)
gate_texts = st.lists(_pieces | _noise, max_size=6).map("".join)


@settings(max_examples=400)
@given(gate_texts, st.sampled_from(sorted(PROFILES)))
def test_the_prefilter_never_skips_a_rule_that_matches(text: str, profile: str) -> None:
    rules = PROFILES[profile]
    chosen = rules.applicable(text)
    missed = [r.label for r in rules.rules if r.pattern.search(text) and r not in chosen]
    assert missed == []


_BOUNDARY_PATTERNS = [r"\bsk-[A-Za-z0-9_-]{4,}\b", r"\bBearer\s+[a-z]{3,}", r"\bab?c\d", r"\bx_y-z"]


@given(st.text(alphabet="skBearxyzabc_-0129 \t.é", max_size=60), st.sampled_from(_BOUNDARY_PATTERNS))
def test_a_boundary_moved_behind_the_literal_matches_the_same(text: str, pattern: str) -> None:
    for flags in (re.ASCII, re.ASCII | re.IGNORECASE):
        original, rewritten = re.compile(pattern, flags), re.compile(literal_first(pattern), flags)
        assert [m.span() for m in rewritten.finditer(text)] == [m.span() for m in original.finditer(text)]


@given(calls)
def test_task_inference_never_fails_and_examples_are_well_formed(call: dict) -> None:
    for task in infer_tasks(call):
        assert task in TASKS
        example = build_example(call, task)
        if example is not None:
            assert [m["role"] for m in example["messages"]] == ["system", "user", "model"]
            assert all(isinstance(m["content"], str) for m in example["messages"])


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.binary(max_size=200) | trajectories.map(lambda t: json.dumps(t).encode()), max_size=12))
def test_every_record_is_in_the_output_or_a_report(tmp_path: Path, lines: list[bytes]) -> None:
    source = tmp_path / "in.jsonl"
    source.write_bytes(b"".join(line.replace(b"\n", b" ") + b"\n" for line in lines))
    directory = EntityDirectory({"discord:alice": "e-1"}, frozenset({"e-1"}))
    result = build_datasets(source, tmp_path / "out", PrivacyFilter("strict", directory))
    quarantined = len((tmp_path / "out" / "quarantine.jsonl").read_text().splitlines())
    assert result.quarantined == quarantined
    assert result.records_in == result.privacy["kept"] + result.privacy["droppedPrivate"] + quarantined
    assert result.summary["trajectoryCount"] == result.privacy["kept"]
