"""Property-based tests: whatever comes in, the pipeline answers with output or a reason, never a crash,
and its counts add up."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st

from training_pipeline import jscompat
from training_pipeline.datasets.build import build_datasets
from training_pipeline.datasets.training_tasks import TASKS, build_example, infer_tasks
from training_pipeline.datasets.validate import inspect_line, inspect_record
from training_pipeline.privacy.credential_rule import CredentialRule, compiled
from training_pipeline.privacy.entities import EntityDirectory
from training_pipeline.privacy.escapes import _ESCAPE, may_be_escaped
from training_pipeline.privacy.escapes import _read as _read_escape
from training_pipeline.privacy.filter import PrivacyFilter
from training_pipeline.privacy.keyed import KEYED_SECRET, KEYED_SPACED
from training_pipeline.privacy.literals import Literals
from training_pipeline.privacy.personal.finder import PersonalDataFinder
from training_pipeline.privacy.personal.kinds import DEFAULT_KINDS
from training_pipeline.privacy.personal.recognizers import _Recognizer
from training_pipeline.privacy.prefilter import _STAND_IN, LineGate, RuleGate, stand_in_bytes
from training_pipeline.privacy.profiles import ELIZAOS_RULES, PROFILES, RuleSet, literal_first
from training_pipeline.privacy.proximity import KEYWORD_PROXIMITY
from training_pipeline.privacy.scan import SecretScanner
from training_pipeline.trajectories.parsing import RawRecord, parse_record

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
@example({"trajectoryId": "0", "startTime": 0, "extra": -(1 << 63) - 1})
@example({"trajectoryId": "0", "startTime": 0, "extra": ["\ud800", (1 << 64) + 1]})  # by the stdlib
def test_valid_shapes_parse_and_keep_every_field(record: dict) -> None:
    parsed = parse_record(RawRecord("test:1", json.dumps(record)))
    if parsed.trajectory is not None:
        # every field kept; an integer beyond 64 bits as the double `JSON.parse` makes of it
        assert parsed.trajectory == json.loads(json.dumps(record), parse_int=jscompat.parsed_int)
    else:
        assert parsed.reason and (record["trajectoryId"] == "" or parsed.reason.startswith("invalid field"))


_mangled = (
    trajectories
    | json_values
    | st.fixed_dictionaries(
        {"trajectoryId": json_values, "startTime": json_values}, optional={"steps": json_values}
    )
)


@given(_mangled)
def test_any_record_is_a_trajectory_or_gets_one_line_saying_why_not(record: object) -> None:
    from training_pipeline.trajectories.models import validation_reason

    reason = validation_reason(record)
    assert reason is None or (reason and "\n" not in reason)
    if reason is None:
        assert (
            isinstance(record, dict) and record["trajectoryId"] and type(record["startTime"]) in (int, float)
        )


@given(texts, st.sampled_from(["strict", "elizaos"]))
def test_the_filter_always_returns_text_and_counts_what_it_did(text: str, profile: str) -> None:
    privacy = PrivacyFilter(profile, env_secrets=("hunter2hunter2",))
    out = privacy.redact(text)
    assert isinstance(out, str)
    # every change is a counted redaction (each leaves a placeholder), and nothing counted left it alone
    assert (privacy.stats.redaction_count > 0) == (out != text)
    assert "hunter2hunter2" not in out


@given(
    st.text(alphabet="ab", min_size=8, max_size=24),
    st.lists(st.sampled_from(["a", "b", "x", "<REDACTED:env-secret>", "SECRET"]), max_size=12),
)
@example("ab" * 10 + "a", ["SECRET", "x", "SECRET"])  # as long as the placeholder itself
def test_a_secret_value_is_replaced_and_counted_at_every_occurrence(secret: str, parts: list[str]) -> None:
    text = "".join(secret if part == "SECRET" else part for part in parts)
    privacy = PrivacyFilter("strict", env_secrets=(secret,))
    assert privacy.redact(text) == text.replace(secret, "<REDACTED:env-secret>")
    assert privacy.stats.redactions.get("env-secret", 0) == text.count(secret)
    assert 0 not in privacy.stats.redactions.values()


#: more secret values than `PrivacyFilter` searches one by one: one of them inside another, one
#: outside ASCII, one a lone surrogate can follow
_MANY_SECRETS = ("hunter2hunter2", "hunter2hunter2-prod", "pässwörd-ünïcode", "tok-0f9e8d7c", "db-pw-11")


class _SearchedSecrets(PrivacyFilter):
    """The filter searching for each secret value in turn, with no gate over them all."""

    def __init__(self, profile: str, env_secrets: tuple[str, ...]) -> None:
        super().__init__(profile, env_secrets=env_secrets)
        self._secret_gate = None


_secret_parts = st.lists(
    st.sampled_from(
        [*_MANY_SECRETS, "hunter2", "tok-0f9e", " ", "\n", "é", "\ud800", "sk-abcdefghijklmnopqrstu"]
    ),
    max_size=8,
).map("".join)


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.recursive(
        st.none() | _secret_parts,
        lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.sampled_from(["a", "b"]), inner),
        max_leaves=12,
    ),
    _secret_parts,
    st.sampled_from(sorted(PROFILES)),
    # the last value can appear once another is replaced: across the placeholder left for it
    st.sampled_from([_MANY_SECRETS, (*_MANY_SECRETS, "secret>tok-0f9e")]),
)
def test_many_secret_values_are_redacted_as_when_each_is_searched_for(
    value: object, prompt: str, profile: str, secrets: tuple[str, ...]
) -> None:
    """From a few secret values on, one Hyperscan scan tells which of them a text holds: the same output
    and counts as searching for each value in turn, in the prompts, the other strings and the batches."""
    trajectory = {"trajectoryId": "t", "metadata": value, "steps": [{"llmCalls": [{"userPrompt": prompt}]}]}
    gated = PrivacyFilter(profile, env_secrets=secrets)
    assert gated._secret_gate is not None
    searched = _SearchedSecrets(profile, secrets)
    ours, theirs = copy.deepcopy(trajectory), copy.deepcopy(trajectory)
    assert gated.redact_sensitive(ours) == searched.redact_sensitive(theirs)
    assert ours == theirs and list(gated.stats.redactions.items()) == list(searched.stats.redactions.items())
    if "\ud800" not in prompt:
        assert not any(secret in ours["steps"][0]["llmCalls"][0]["userPrompt"] for secret in _MANY_SECRETS)


def test_the_gate_over_secret_values_is_never_written_to_the_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    privacy = PrivacyFilter("elizaos", env_secrets=_MANY_SECRETS)
    privacy.rules = RuleSet(lambda: ELIZAOS_RULES)  # its gate not built yet in this process
    assert privacy.redact("x tok-0f9e8d7c y") == "x <REDACTED:env-secret> y"
    written = [path.read_bytes() for path in tmp_path.rglob("*") if path.is_file()]
    assert written  # the rules' own gate is cached there
    assert not any(secret.encode() in data for data in written for secret in _MANY_SECRETS)


def test_a_changed_rule_is_never_given_the_gate_its_old_self_remembered(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    old = (CredentialRule("thing", re.compile(r"tok_[a-z]{8}")),)
    new = (CredentialRule("thing", re.compile(r"key_[a-z]{8}")),)
    assert RuleSet(lambda: old).applicable("x tok_abcdefgh y")
    changed = RuleSet(lambda: new)
    assert changed.applicable("x key_abcdefgh y") and not changed.applicable("x tok_abcdefgh y")
    assert len(list(tmp_path.rglob("gate-*.hsdb"))) == 2  # a database per set of expressions


# Credentials, pieces of them, and characters where Python's and Hyperscan's views could part: multi-byte
# UTF-8, JavaScript whitespace, case folding outside ASCII (the Kelvin sign, dotted I).
_HEX40 = "0123456789abcdef0123456789abcdef01234567"
_credentials = [text for _, text in FAMILIES] + [
    "Authorization: Bearer abcdefghijklmnop",
    "aws_key='x'",
    # rules the gate names by their keywords (`GitleaksRule.gate`), written as `str.lower` still finds
    f"SourceGraph token {_HEX40} ",
    f"sgp_{_HEX40}\n",
    "FACEBOO\u212a 123456789012345|Q7xk2Lp9Rw4Tz8Nv3Mb6Hc1Jd5Fg0Ys ",
    "ghu_Q7xk2Lp9Rw4Tz8Nv3Mb6Hc1Jd5Fg0YsAe2Ui",
    # passwords people choose, told by the field or the sentence (`passwords`): a line's rules too
    "DB_PASSWORD=hunter2\n",
    "\n  password: correct-horse\n",
    '{"password": "hunter2"}',
    "The password is hunter2.",
    'auth=("bob", "hunter2")',
]
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
    missed = [r.label for r in rules.rules if r not in chosen and r.redact(text)[1]]
    assert missed == []


_token_texts = st.lists(
    _pieces | _noise | st.text(alphabet="aZ09_+-/.~=", min_size=10, max_size=40), max_size=8
).map("".join)


@settings(max_examples=400)
@given(_token_texts, st.integers(0, 200))
def test_the_proximity_rule_finds_the_tokens_re_finds(text: str, position: int) -> None:
    """Its search by runs of token characters (`ProximityRule.searcher`) is `re`'s search."""
    pattern = compiled(KEYWORD_PROXIMITY.pattern)
    ours = KEYWORD_PROXIMITY.searcher(text)(position)
    theirs = pattern.search(text, position)
    assert (ours and ours.span()) == (theirs and theirs.span())
    assert [m.span() for m in KEYWORD_PROXIMITY.finditer(text)] == [m.span() for m in pattern.finditer(text)]


_keyed_words = st.sampled_from(
    ["token", "API_KEY", "Secret", "passWord", "client-secret", "auth_token", "credentials", "pwd", "apikey"]
)
_keyed_pieces = st.sampled_from(
    [
        "setenv ",
        "ENV ",
        "set -x ",
        "set \t -x\t\t ",
        "--",
        "-",
        " is ",
        "=",
        ": ",
        ":=",
        '"',
        "'",
        "[",
        "]",
        "\n",
        "os.environ",
        "Q7xk2Lp9Rw4Tz8Nv3Mb6",
        "tok-live-0f9e8d7c6b5a",
        "\u0130",
        "\u212a",
        "\ud800",
    ]
)
#: a key's run before its word, up to past the forty characters a key may reach
_key_runs = st.text(alphabet="aZ09_-.", max_size=48)
_keyed_texts = st.lists(
    _keyed_pieces | _keyed_words | _key_runs | st.text(alphabet="aZ09_-. \t:=", max_size=12), max_size=12
).map("".join)


@settings(max_examples=500)
@given(_keyed_texts, st.integers(0, 120))
@example("x" * 40 + "token: Q7xk2Lp9Rw4Tz8Nv3Mb6", 0)  # the key's forty characters before its word
@example(
    "set" + " " * 8 + "-xyz" + "\t" * 8 + "a" * 40 + "token Q7xk2Lp9Rw4Tz8Nv3Mb6", 0
)  # the spaced form's reach
def test_the_keyed_rules_find_the_matches_re_finds(text: str, position: int) -> None:
    """Their search from secret words (`KeyedSecretRule.searcher`) is `re`'s search."""
    for rule in (KEYED_SECRET, KEYED_SPACED):
        pattern = compiled(rule.pattern)
        ours = rule.searcher(text)(position)
        theirs = pattern.search(text, position)
        assert (ours and ours.span()) == (theirs and theirs.span())
        assert [m.span() for m in rule.finditer(text)] == [m.span() for m in pattern.finditer(text)]


@pytest.mark.parametrize(
    "word",
    [
        "token",
        "secret",
        "passwd",
        "password",
        "passphrase",
        "pwd",
        "api_key",
        "api.key",
        "api-key",
        "apikey",
        "access_key",
        "private_key",
        "credential",
        "credentials",
        "creds",
        "auth",
        "auth_key",
        "authtoken",
        "client_secret",
        "clientsecret",
        "signing_key",
    ],
)
def test_the_keyed_rules_search_from_every_secret_word(word: str) -> None:
    for text, rule in (
        (f"{word.upper()} = Q7xk2Lp9Rw4Tz8Nv3Mb6", KEYED_SECRET),
        (f"my {word} is Q7xk2Lp9Rw4Tz8Nv3Mb6", KEYED_SPACED),
    ):
        assert rule.searcher(text)(0) is not None, text


_KEYWORD_RULES = [rule for rule in PROFILES["strict"].rules if getattr(rule, "keywords", ())]
_keyword_texts = st.lists(
    st.sampled_from(sorted({word for rule in _KEYWORD_RULES for word in rule.keywords})).map(
        lambda word: word.upper() if len(word) % 2 else word.title()
    )
    | st.text(alphabet="aKkIiSs-_ é€😀İı\u212a\u017f\u0307\ud800", max_size=12),
    max_size=8,
).map("".join)


@settings(max_examples=300)
@given(_keyword_texts)
@example("FACEBOO\u212a 1|x")  # the Kelvin sign lowers to k
@example("\u0130")  # İ lowers to i and a combining dot
@example("AKIA—\ud800")  # a dash (the text outside Latin-1) and a lone surrogate
def test_a_rule_looks_for_its_keywords_in_the_text_lowered(text: str) -> None:
    """gitleaks runs a rule only on text whose lower case holds one of its keywords; the rules look in
    the text's UTF-8 with ASCII letters lowered where nothing else can lower into a keyword's letters
    (and then for the run of token characters every match holds, `token_run`)."""
    lowered = text.lower()
    for rule in _KEYWORD_RULES:
        expected = rule.keyword_in_every_match or any(word in lowered for word in rule.keywords)
        expected = expected and (rule.token_run is None or rule.token_run.held_by(text))
        assert rule.applies(text) == expected, (rule.label, text)


#: a value each of detect-secrets' regex plugins finds (the independent scanner's families)
SCANNER_SAMPLES = [
    "artifactory: AKCp8jQ8bq4wPJzYfnNNHn3LeQ1rrt6dMYK7aQzh7FAkwcUo2Nbbx8pLD34e9eVfqq6DHoNQ3",
    'key="AP6xxxxxxxxxxx"',
    "AKIAIOSFODNN7EXAMPLQ",
    'aws_secret_key = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEX"',
    "AccountKey=" + "a" * 86 + "==",
    "https://user:s3cretpass@example.com",
    'cloudant_password = "abcdefghijklmnopqrstuvwx"',
    "https://u:" + "a" * 64 + "@acc.cloudant.com",
    "MTk4NjIyNDgzNDcxOTI1MjQ4.Cl2FMQ.ZnCjm1XVW7vRze4b7Cq4se7kKWs",
    "ghp_" + "a1B2" * 9,
    "glpat-abcdefghij0123456789",
    'ibm_cloud_iam_api_key = "abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGH"',
    'ibm_cos_hmac_secret_access_key = "' + "a1" * 24 + '"',
    "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
    "0123456789abcdef0123456789abcdef-us12",
    "//registry.npmjs.org/:_authToken=npm_abcdefghijklmnop",
    "sk-proj-abcdefghij1234567890T3BlbkFJabcdefghij1234567890",
    "-----BEGIN RSA PRIVATE KEY-----",
    "pypi-AgEIcHlwaS5vcmc" + "A" * 70,
    "SG." + "a" * 22 + "." + "b" * 43,
    "xoxb-123456789012-abcdefghij",
    "https://hooks.slack.com/services/T01234567/B01234567/abcdefghijklmnop",
    'softlayer_api_key = "' + "a" * 64 + '"',
    "sq0csp-" + "a" * 43,
    "sk_live_" + "a1" * 12,
    "123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw7",
    "AC" + "a1" * 16,
    "SK" + "b2" * 16,
]
_scanner_pieces = st.sampled_from(SCANNER_SAMPLES) | st.tuples(
    st.sampled_from(SCANNER_SAMPLES), st.integers(0, 90), st.integers(0, 90)
).map(lambda t: t[0][t[1] : t[1] + t[2]])
# where Python's per-line view and a whole-text scan could part: every line break `splitlines` knows,
# Python's extra spaces (\x1c-\x1f), digits and letters outside ASCII, case folding outside ASCII
# (dotless i, long s, the Kelvin sign), a lone surrogate
_scanner_noise = st.text(
    alphabet="aZ09_-.:/=@'\" \t\n\r\x0b\x0c\x1c\x1d\x1e\x1f\x85\u2028\u2029\u00a0"
    "é😀İı\u017f\u212a\u0663\ud800",
    max_size=30,
)
_GATED = SecretScanner()
_UNGATED = SecretScanner()
_UNGATED.gate = None


def test_the_scanner_gate_is_built_for_every_detect_secrets_plugin() -> None:
    assert _GATED.gate is not None
    unicode_cases = [  # what Python's `re` matches outside ASCII: digits, case folding, line breaks
        "\u0661\u0662\u0663\u0664\u0665\u0666\u0667\u0668\u0669:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw7",
        'aws_secret_\u212aey = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEX"',
        "https://hooks.\u017flack.com/services/T01234567/B01234567/abcdefghijklmnop",
        "\u2028AKCp8jQ8bq4wPJzYfnNNHn3LeQ1rrt6dMYK7aQzh7FAkwcUo2Nbbx8pLD34e9eVfqq6DHoNQ3\x85",
    ]
    for text in unicode_cases:
        assert _UNGATED.find(text), text
        assert _GATED.find(text) == _UNGATED.find(text), text
    for sample in SCANNER_SAMPLES:
        assert _UNGATED.find(sample), sample
        for context in ("{}", "é {} ü", "x\u2028{}\x85y", "\x1f{}\x1c", "ſ\u212a {}\n"):
            text = context.format(sample)
            assert _GATED.find(text) == _UNGATED.find(text), text


_LINE_PATTERNS = [r"^tok\d{3}$", r"\Atok\w\Z", r"\btok[\s=]+\w+\b", r"[^\W_]ok\s", r"(?P<k>tok).{2}$"]


_LINE_PIECES = ["tok", "TO\u212a", "\u0131ok", "333", "\u0663\u0663", "=", "_", " ", "é", "x", "\x1f"]
_LINE_BREAKS = ["\n", "\r", "\r\n", "\x0b", "\x1c", "\x85", "\u2028"]


@given(
    st.lists(st.sampled_from(_LINE_PIECES + _LINE_BREAKS), max_size=8).map("".join),
    st.sampled_from(_LINE_PATTERNS),
    st.booleans(),
)
# each of the ways Python's per-line view differs from a plain multi-line scan
@example("x\rtok333", _LINE_PATTERNS[0], False)  # a line break that is not \n, before `^`
@example("tok333\x85x", _LINE_PATTERNS[0], False)  # ... and after `$`
@example("tok\u0663\u0663\u0663", _LINE_PATTERNS[0], False)  # digits outside ASCII
@example("TO\u212a333", _LINE_PATTERNS[0], True)  # the Kelvin sign folds to k
@example("tok=é", _LINE_PATTERNS[2], False)  # a letter outside ASCII, and a boundary after it
@example("éok\x1f", _LINE_PATTERNS[3], False)  # a negated class that takes letters; \x1f is a space
def test_a_line_gate_takes_every_text_with_a_line_its_pattern_matches(
    text: str, pattern: str, caseless: bool
) -> None:
    compiled = re.compile(pattern, re.IGNORECASE if caseless else 0)
    if any(compiled.search(line) for line in text.splitlines()):
        assert LineGate([compiled]).candidates(text) == {0}


_GATED_RECOGNIZERS = [cls() for cls in _Recognizer.__subclasses__()]
_UNGATED_RECOGNIZERS = [cls() for cls in _Recognizer.__subclasses__()]
for _recognizer in _UNGATED_RECOGNIZERS:
    _recognizer._gate = None
#: what the recognizers' patterns are made of: cues, names, numbers, and what `regex` reads
#: differently from a byte scan (letters outside ASCII, folds into ASCII and into two letters)
_CUE_PIECES = [
    *["my name is", "Hi", "Regards,", "Name:", '"full_name": "', "Patient:", "DOB:", "born on", "Mr"],
    *["Hauptstraße", "Main St", "Strasse", "jdoe@host:~$", "/home/", "USER=", "uid=501(", "login"],
    *["Jane", "Doe", "JANE", "Ólafur", "Émile", "Müller", "o'Neil", "ß", "SS", "\u212a", "ſ", "İ", "ﬁ"],
    *["12", "1990-04-01", "4411", " ", "  ", "\n", ",", ":", '"', "-", "é", "\u2028", "\x1f"],
    *['"user": "', '"assignee": "', "created_by: ", "Reviewer:", "jdoe", "JaneDoe42", "Google", "- "],
    *["user=", "ts=1 ", "?", "&", "Accepted publickey for ", "session opened for user ", "(uid=0)"],
]


@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(_CUE_PIECES), max_size=10).map("".join))
@example("Mit freundlichen GRÜSSEN,\nJane Doe")  # `ß` in a pattern is `SS` to a case-insensitive regex
@example("HAUPTSTRAßE 5")  # ... and a text's `ß` a pattern's `ss`
@example("Paßnummer: X1234567")  # where the pattern has no `ß`
@example("\ufb01rst name: Jane")  # a ligature folds to two letters too
@example("Hi Ólafur,")  # a capital outside ASCII where a name starts
@example("my name is Jane Doe")
@example("reviewers: Jane Doe, Tom Baker")  # a pattern opening with a lookbehind, closing with a lookahead
@example('authors = ["Jane Doe", "Tom Baker"]')
def test_a_recognizers_gate_never_hides_what_its_patterns_find(text: str) -> None:
    """Each of our recognizers, asked first whether it could find anything (as the finder asks) and then
    to analyse, finds what it finds with every pattern searched."""
    for gated, ungated in zip(_GATED_RECOGNIZERS, _UNGATED_RECOGNIZERS, strict=True):
        entities = gated.supported_entities
        expected = [(r.entity_type, r.start, r.end, r.score) for r in ungated.analyze(text, entities)]
        assert gated.could_find(text, entities) or not expected, (type(gated).__name__, text)
        found = [(r.entity_type, r.start, r.end, r.score) for r in gated.analyze(text, entities)]
        assert found == expected, (type(gated).__name__, text)


def test_a_recognizers_gate_sets_aside_capitalised_words_without_a_cue() -> None:
    """What the gate is for: an agent's chat, where a greeting cue opened the window, holds two
    capitalised words in a row but no pattern's cue (a lookbehind's cue is matched, not dropped)."""
    name_cues = next(r for r in _GATED_RECOGNIZERS if type(r).__name__ == "NameCueRecognizer")
    chat = "grace: hey Eliza, can you explain a bug?\n\nShould Eliza respond to grace?"
    assert not name_cues.could_find(chat, ["PERSON"])
    assert name_cues.could_find("Reviewers: Jane Doe, Tom Baker", ["PERSON"])


@settings(max_examples=300)
@given(
    st.lists(
        st.text(alphabet=st.characters(codec="utf-8") | st.sampled_from("ab\ud800é€😀"), min_size=1),
        max_size=20,
    ),
    st.text(alphabet=st.characters(codec="utf-8") | st.sampled_from("ab\ud800é€😀"), max_size=200),
)
@example(["é", "b\ud800"], "xéb\ud800")
@example(["\x00", "a\x00b"], "a")  # the binding reads a literal up to its first NUL
def test_the_values_a_scan_says_a_text_holds_are_every_value_it_holds(values: list[str], text: str) -> None:
    """Scanned (as a long text is, with many values), a text is never said not to hold a value it holds,
    whatever its characters, lone surrogates too; and the pairs come in the order given, once each (a
    value holding a NUL is not scanned for: each is then looked for by the caller)."""
    pairs = [(value, index) for index, value in enumerate(values)]
    literals = Literals(pairs)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("training_pipeline.privacy.literals.LONG_TEXT", 0)
        patch.setattr("training_pipeline.privacy.literals.MANY_VALUES", 0)
        held = list(literals.held_by(text))
    assert [pair for pair in held if pair[0] in text] == [pair for pair in pairs if pair[0] in text]
    assert [index for _, index in held] == sorted({index for _, index in held})  # in order, once each


@settings(max_examples=500)
@given(
    st.text(alphabet="ab @.+-_\né1", min_size=1, max_size=4), st.text(alphabet="ab @.+-_\né1", max_size=40)
)
@example("aa", "aaa")  # a value inside a longer run of itself
@example("a", "+a a@ a.a _a a")
def test_a_found_value_is_spread_where_it_stands_as_a_whole_word(value: str, text: str) -> None:
    """A value found once is replaced wherever nothing of a word, an address or a number is beside it:
    the search looking behind from the value's end finds what one looking behind its start does."""
    from training_pipeline.privacy.personal.pseudonyms import _whole_word

    opening_with_a_lookbehind = re.compile(rf"(?<![\w@.+-]){re.escape(value)}(?![\w@])")
    assert _whole_word(value).subn("<P>", text) == opening_with_a_lookbehind.subn("<P>", text)


_FINDER = PersonalDataFinder(DEFAULT_KINDS)
#: what the weak patterns of Presidio's recognizers take (digit runs, a PAN's and a NINO's letters and
#: digits), the context words that raise them (as written, in capitals, inside a longer word), and
#: letters whose lower case is not one character for one (`İ`, the Kelvin sign, a final sigma)
_WEAK_PIECES = [
    *[
        "4000079190",
        "123456789",
        "12345678901",
        "A1234567",
        "ABCDE1234F",
        "ABCPE1234F",
        "AB123456C",
        "req-00000123",
    ],
    *["account", "ACCOUNT", "Bankruptcy", "passport", "us", "Status", "pan", "Japan", "nino", "sin"],
    *["licence", "license", "Driver", "documento", "여권", "travel document", "ΚΑΣ", "İ", "\u212a"],
    *[" ", "\n", ",", ":", "#", "-"],
]


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(_WEAK_PIECES), max_size=12).map("".join))
@example("\u212aKaccountStatusA1234567")  # the Kelvin sign folds into a fiscal code's shape, not its check
@example("order 4000079190 shipped")  # no context word: a bank number and a licence only to weak patterns
@example("account 4000079190")
@example("PAN: ABCPE1234F")  # a pattern strong enough alone
def test_leaving_out_what_only_context_could_raise_finds_the_same(window: str) -> None:
    """Presidio finds in a window what it finds when the finder leaves out the entities none of whose
    findings could reach the threshold there (`engine.context_needs`)."""
    kinds = _FINDER.kinds
    analyzer = _FINDER._analyzer

    def found(entities: list[str]) -> list[tuple[str, int, int, float]]:
        results = analyzer.analyze(window, language="en", entities=entities) if entities else []
        return sorted((r.entity_type, r.start, r.end, r.score) for r in results)

    assert found(_FINDER._wanted(window, kinds)) == found(sorted(kinds)), window


def test_a_window_without_a_context_word_is_not_read_for_what_only_one_could_raise() -> None:
    """What leaving out is for: a log's ten-digit id is a US bank account number to Presidio only beside
    a word about accounts, so without one it is not looked for; with one, and where a strong pattern
    matches (an Indian PAN's shape), it is."""
    wanted = set(_FINDER._wanted("order 4000079190 shipped", _FINDER.kinds))
    assert "US_BANK_NUMBER" not in wanted and "IN_PAN" not in wanted
    assert "UK_NHS" in wanted  # a checksum may make a finding of it alone
    assert "US_BANK_NUMBER" in _FINDER._wanted("account 4000079190", _FINDER.kinds)
    assert "IN_PAN" in _FINDER._wanted("ABCPE1234F", _FINDER.kinds)


@given(st.text(alphabet=st.characters(blacklist_categories=())))
@example("a\ud800b é \U0001f600 \x7f\x80")  # a lone surrogate, two- to four-byte characters, edges
def test_a_line_gates_bytes_hold_one_stand_in_per_character_outside_ascii(text: str) -> None:
    """From the text's UTF-8 as from the codec's error handler: the same bytes."""
    assert stand_in_bytes(text) == text.encode("ascii", _STAND_IN)


@settings(max_examples=500)
@given(st.lists(_scanner_pieces | _scanner_noise, max_size=6).map("".join))
def test_the_scanner_gate_never_hides_what_the_plugins_find(text: str) -> None:
    assert _GATED.find(text) == _UNGATED.find(text)


@settings(max_examples=200)
@given(
    st.lists(
        st.sampled_from(SCANNER_SAMPLES) | st.text(alphabet='ab \n\ud800\udfff😀é"\\', max_size=20),
        max_size=4,
    ).map("".join),
    st.sampled_from(TASKS),
)
def test_a_line_inspected_from_what_it_was_made_of_is_inspected_as_read(text: str, task: str) -> None:
    """The pass inspects each example from the object it dumps (`inspect_record`), the checks from the
    line read back (`inspect_line`): the same, lone surrogates and escapes included."""
    call = {"systemPrompt": "s " + text, "userPrompt": text + " u", "response": "r" + text}
    example = build_example(call, task)
    assume(example is not None)
    line = jscompat.dumpb(example) + b"\n"
    assert inspect_record(example, _GATED) == inspect_line(line, _GATED)


@pytest.mark.parametrize(
    "metadata",
    [
        {"phoneNumber": 14155550123},
        {"cardNumber": 4111111111111111},
        {"fullName": "Jane Doe"},
        {"wa_id": "16315551234"},
        {"clientSecret": "q8W2e4R6t8Y0u2I4o6P8"},
        {"phones": ["4155550123", 14155550124]},
        {"names": ["Jane Doe"]},
        {"api_keys": ["q8W2e4R6t8Y0u2I4o6P8"]},
        {"api_keys": "q8W2e4R6t8Y0u2I4o6P8"},
        {"names": "Jane Doe"},
        {"phones": "4155550123"},
        {"passwords": 12345678},
        {"login": {"user": "bob", "password": "hunter2"}},
        {"page": "jane&#64;example.com"},
    ],
)
def test_a_value_told_by_its_key_is_redacted_wherever_the_trajectory_holds_it(metadata: dict) -> None:
    """A value read by its key (a name field, a phone's or card's label, a secret's name, a list's or
    a plural's items), numbers among them, is redacted in a trajectory's metadata as in its prompts;
    counts and times beside it stay."""
    trajectory = {
        "trajectoryId": "t",
        "metadata": {**copy.deepcopy(metadata), "promptTokens": 512, "timestamp": 1795478500000},
        "steps": [{"llmCalls": [{"userPrompt": "hi"}]}],
    }
    assert PrivacyFilter("strict").redact_sensitive(trajectory) >= 1
    kept = trajectory["metadata"]
    assert (kept.pop("promptTokens"), kept.pop("timestamp")) == (512, 1795478500000)
    assert kept != metadata


@pytest.mark.parametrize("pattern", [r"^tok_[a-z]{8}$", r"\Atok_[a-z]{8}\Z", r"(?<![^\s])tok_[a-z]{8}(?!\S)"])
def test_a_metadata_string_is_seen_whole_as_an_anchored_rule_does(pattern: str) -> None:
    """Each string of a trajectory is read as a text of its own: a rule anchored to a text's start and
    end, or needing space around it, matches a metadata value."""
    privacy = PrivacyFilter("strict")
    privacy.rules = RuleSet(lambda: (CredentialRule("anchored", re.compile(pattern)),))
    trajectory = {"trajectoryId": "t", "metadata": {"k": "tok_abcdefgh"}}
    assert privacy.redact_sensitive(trajectory) == 1
    assert trajectory["metadata"]["k"] == "<REDACTED:anchored>"


@pytest.mark.parametrize(
    ("pattern", "flags", "text"),
    [
        (r"^tok_[a-z]{8}$", re.MULTILINE, "first line\ntok_abcdefgh\nlast line"),
        (r"begin.*tok_[a-z]{8}", re.DOTALL, "begin\n\ntok_abcdefgh"),
        (r"TOK_[A-Z]{8}", re.IGNORECASE, "tok_abcdefgh"),
    ],
)
def test_the_gate_names_a_rule_wherever_its_flags_let_it_match(pattern: str, flags: int, text: str) -> None:
    """A rule's flags are the gate's: a multi-line rule's `^` at any line (a config file's), a `.` that
    crosses lines, a rule's case; a gate that read the pattern without them never ran the rule."""
    compiled = re.compile(pattern, flags)
    assert compiled.search(text) is not None
    gate = RuleGate(lambda: [compiled], 1)
    assert gate.candidates(text) == {0}


def test_a_credential_among_many_clean_short_texts_is_redacted() -> None:
    neighbours = [f"step {index} finished in {index * 7} ms" for index in range(40)]
    trajectory = {
        "trajectoryId": "t",
        "metadata": {"log": [*neighbours[:20], "ghp_C3J27XDCG2LmlZGEONYlgCtjfIZ4SOcMz9CP", *neighbours[20:]]},
    }
    privacy = PrivacyFilter("strict")
    assert privacy.redact_sensitive(trajectory) == 1
    assert trajectory["metadata"]["log"][20] == "<REDACTED:github-token>"
    assert trajectory["metadata"]["log"][:20] == neighbours[:20]


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


_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


@given(
    st.lists(st.sampled_from(["available", "AVAILABLE", " ", "actions", "AcTiOnS", "aCtIoNnAmEs", "names"]))
    .map("".join)
    .flatmap(lambda words: st.text(alphabet="aAcCtTiİıKk\u212a \ud800é", max_size=8).map(words.__add__)),
    st.booleans(),
)
@example("available actİons", True)
@example("AVAILABLE\ud800ACTIONS", False)
def test_a_prompt_naming_actions_makes_a_planner_example_as_javascripts_ascii_only_i_does(
    prompt: str, in_system: bool
) -> None:
    """elizaOS tests `/available actions|actionnames/i` on the prompts: ASCII letters fold, nothing else."""
    expected = any(word in prompt.translate(_ASCII_LOWER) for word in ("available actions", "actionnames"))
    call = {"systemPrompt" if in_system else "userPrompt": prompt, "response": "ok"}
    assert ("action_planner" in infer_tasks(call)) == expected


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


_RUN_RULES = [rule for rule in PROFILES["strict"].rules if getattr(rule, "token_run", None) is not None]


@settings(max_examples=200, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(st.data())
def test_a_text_a_rule_matches_holds_the_token_run_the_rule_looks_for_first(data: st.DataObject) -> None:
    """A rule is run only on text holding the run of token characters its pattern requires
    (`token_run`): every text its pattern matches holds one, whatever surrounds the match."""
    rule = data.draw(st.sampled_from(_RUN_RULES), label="rule")
    pattern = rule.pattern.compiled()
    text = data.draw(st.from_regex(pattern), label="text")
    assume(pattern.search(text) is not None)
    assert rule.token_run.held_by(text), (rule.label, text)


_ESCAPES = st.one_of(
    st.sampled_from(
        ["%40", "%2B", "&#64;", "&#x40;", "&commat;", "&period;", "\\/", "\\\\", '\\"', "\\u0040"]
    ),
    st.builds(
        lambda opening, word, closing: opening + word + closing,
        st.sampled_from("[({"),
        st.sampled_from(["at", "dot", "AT", "Dot", "aT"]),
        st.sampled_from(")]}"),
    ),
)
_AROUND = st.text(alphabet=st.sampled_from(list('%&#;\\/"u[](){}atdoATDOxq0127 \t')), max_size=12)


@settings(max_examples=300)
@given(_AROUND, _ESCAPES, _AROUND)
def test_a_text_holding_an_escape_is_never_passed_over(before: str, escape: str, after: str) -> None:
    """`may_be_escaped` looks for the characters an escape needs before any pattern: it may say yes
    to a text with none, never no to a text holding one `unescaped` reads."""
    text = before + escape + after
    if any(_read_escape(match) is not None for match in _ESCAPE.finditer(text)):
        assert may_be_escaped(text), text
