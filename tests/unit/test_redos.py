"""No redaction can be made to hang: every rule family against strings built to make a backtracking
matcher try every split, and the per-record budget that holds whatever a pattern does.

A pattern that backtracks exponentially takes seconds at a few dozen characters (the keyed rule's
word check took 14.6 s at 40 letters and grew 1.6x a letter); a linear one takes microseconds there.
So each rule is run on short adversarial texts with a generous ceiling: a quadratic or exponential
pattern fails it, a linear one never comes near.
"""

from __future__ import annotations

import json
import signal
import time
from pathlib import Path

import pytest

from training_pipeline.datasets.build import build_datasets
from training_pipeline.privacy.budget import OverBudget, budget
from training_pipeline.privacy.filter import PrivacyFilter
from training_pipeline.privacy.profiles import ELIZAOS_RULES, strict_rules
from training_pipeline.privacy.stored import OVER_BUDGET, safe_text

#: runs a backtracking matcher can split many ways: letters, words joined by separators, alphabets
#: of the credential shapes (hex, base64, dotted), each followed by a character no rule accepts
RUNS = [
    "a",
    "A",
    "aB",
    "Ab",
    "AB",
    "1",
    "a1",
    "f0",
    "a_",
    "a-",
    "a.",
    "ab-",
    "AB_",
    "a/",
    "a+",
    "a=",
    "a ",
    "a:",
]
LENGTHS = (40, 160)
GENERIC_PREFIXES = ["", "password: ", "api_key = ", "token=", '"secret": "', "Bearer ", "https://u:", "AKIA"]
#: a linear rule redacts 160 characters in well under a millisecond; an exponential one never returns
CEILING_SECONDS = 0.25
#: linear, but slow for its length: the cohere rule tries a bounded match at every position of a long
#: run of its own alphabet, and the key at the end lets the text past the gate (half a minute unbudgeted)
HOSTILE = "cohere = " + "a-" * 100_000 + " cohere = " + "aB3d" * 10


def _texts(rule) -> list[str]:
    prefixes = GENERIC_PREFIXES + [f"{keyword} = " for keyword in getattr(rule, "keywords", ())[:3]]
    return [prefix + run * (n // len(run)) + "!" for prefix in prefixes for run in RUNS for n in LENGTHS]


def _timed(rule, text: str) -> float:
    started = time.perf_counter()
    try:
        with budget(5.0):  # an exponential pattern would hold the suite for hours
            rule.redact(text)
    except OverBudget:
        return 5.0
    return time.perf_counter() - started


@pytest.mark.parametrize("profile", ["strict", "elizaos"])
def test_no_rule_backtracks_on_adversarial_text(profile: str) -> None:
    rules = strict_rules() if profile == "strict" else ELIZAOS_RULES
    slow = {}
    for rule in rules:
        worst = max((_timed(rule, text), text) for text in _texts(rule))
        if worst[0] > CEILING_SECONDS:
            slow[rule.label] = (round(worst[0], 3), worst[1][:60])
    assert slow == {}


def test_the_keyed_rule_decides_a_long_word_run_at_once() -> None:
    """The user's case: `password: ` then 60 lowercase letters and `!` (hours before the fix)."""
    redactor = PrivacyFilter("strict")
    for letters in (60, 2_000, 100_000):
        started = time.perf_counter()
        redactor.redact("password: " + "a" * letters + "!")
        assert time.perf_counter() - started < 1.0


def test_our_address_pattern_decides_an_address_like_run_at_once() -> None:
    """A run of `a.` before an `@` made the pattern of addresses glued into ids retry from every word
    start (seconds at 4,000 characters). Presidio's own e-mail pattern still does (0.9 s there): the
    recognizers are given windows of a few hundred characters (`finder._WIDEST`), and a record's
    redaction is budgeted."""
    import regex

    from training_pipeline.privacy.personal.recognizers import OfflineEmailRecognizer

    recognizer = OfflineEmailRecognizer()
    glued = regex.compile(recognizer.PATTERNS[-1].regex, recognizer.global_regex_flags)
    for text in ("a." * 2_000 + "@b.cc", "x@" + "a." * 2_000 + "!", "a-" * 2_000 + "@example.com-1"):
        started = time.perf_counter()
        list(glued.finditer(text))
        assert time.perf_counter() - started < CEILING_SECONDS


def test_a_redaction_past_its_budget_stops_and_a_stored_text_becomes_a_placeholder(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    text = HOSTILE
    redactor = PrivacyFilter("strict")
    started = time.perf_counter()
    with pytest.raises(OverBudget), budget(0.3):
        redactor.redact(text)
    assert time.perf_counter() - started < 2.0
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)  # the timer is gone
    monkeypatch.setenv("TRAINING_PIPELINE_REDACTION_BUDGET_SECONDS", "0.3")
    from training_pipeline.privacy import stored

    stored._filter.cache_clear()
    stored._filter_for.cache_clear()
    try:
        assert safe_text(text + " sk_live_" + "a1B2" * 8) == OVER_BUDGET
        assert safe_text("short and clean") == "short and clean"
    finally:
        stored._filter.cache_clear()
        stored._filter_for.cache_clear()


def _day_around(folder: Path, prompt: str) -> Path:
    """A day's export of three trajectories, the second's prompt `prompt`, the others plain."""
    good = {
        "trajectoryId": "good",
        "agentId": "a",
        "startTime": 1_764_000_000_000,
        "steps": [{"llmCalls": [{"purpose": "response", "userPrompt": "hi", "response": "hello"}]}],
    }
    odd = {
        **good,
        "trajectoryId": "odd",
        "steps": [{"llmCalls": [{"purpose": "response", "userPrompt": prompt}]}],
    }
    source = folder / "day.jsonl"
    source.write_text("\n".join(json.dumps(r) for r in (good, odd, good | {"trajectoryId": "g2"})) + "\n")
    return source


def test_a_record_past_the_budget_is_quarantined_and_the_day_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TRAINING_PIPELINE_REDACTION_BUDGET_SECONDS", "0.3")
    source = _day_around(tmp_path, HOSTILE)
    started = time.perf_counter()
    result = build_datasets(source, tmp_path / "out", PrivacyFilter("strict"))
    assert time.perf_counter() - started < 10
    assert result.records_in == 3 and result.quarantined == 1
    [entry] = [json.loads(line) for line in (tmp_path / "out" / "quarantine.jsonl").read_text().splitlines()]
    assert entry["reason"].startswith("redaction-budget") and "record" not in entry
    assert entry["bytes"] > len(HOSTILE)


def test_a_record_whose_redaction_raises_is_quarantined_without_its_text_and_the_day_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A fault of the filter's on one record (an id that once raised in the IBAN check) failed the
    share, and with it the day. The record is quarantined by origin, size and the error's type, never
    its text or the error's message (which may quote it); the others are built."""
    from training_pipeline.privacy.personal import finder

    def raising(token: str) -> bool:
        raise ValueError(f"cannot read {token!r}")

    monkeypatch.setattr(finder, "_valid_iban", raising)
    source = _day_around(tmp_path, "ref DE89370400440532013000")
    result = build_datasets(source, tmp_path / "out", PrivacyFilter("strict"))
    assert result.records_in == 3 and result.quarantined == 1
    quarantine = (tmp_path / "out" / "quarantine.jsonl").read_text()
    [entry] = [json.loads(line) for line in quarantine.splitlines()]
    assert entry["reason"] == "redaction-error: ValueError" and "record" not in entry
    assert "DE8937" not in quarantine
