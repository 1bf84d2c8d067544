"""Keys with no prefix of their own: Kingfisher's rule set (vendored, refreshed only to a set that
compiles), the assignment forms people paste, a credential-shaped token near a credential word or a
service's name, a secret found once redacted wherever else the trajectory holds it, and the re-check's
keyword detector."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import REPO
from training_pipeline.privacy import gitleaks, kingfisher
from training_pipeline.privacy.filter import PrivacyFilter
from training_pipeline.privacy.kingfisher import RULES_FOLDER, refresh, rules_from_yaml, to_python_pattern
from training_pipeline.privacy.scan import SecretScanner
from training_pipeline.privacy.token_run import required_run

CORPUS = REPO / "bench" / "data" / "kingfisher_corpus.jsonl"
KEY = "Zq8W3kLmN7pR2tY5vB9xC4dF6gH1jK0s"


@pytest.fixture(scope="module")
def strict() -> PrivacyFilter:
    return PrivacyFilter("strict")


def test_every_kingfisher_family_is_caught_in_every_context(strict: PrivacyFilter) -> None:
    samples = [json.loads(line) for line in CORPUS.read_text().splitlines()]
    contexts = {s["context"] for s in samples}
    assert {"published", "prose", "sentence", "assignment", "env", "json", "url", "connection"} <= contexts
    labels = {rule.label for rule in kingfisher.load_rules()}
    sampled = {s["family"] for s in samples}
    # the few rules whose published examples are digits only or placeholders have nothing to plant
    assert sampled <= labels and len(labels - sampled) <= 15
    leaks = [s for s in samples if any(secret in strict.redact(s["text"]) for secret in s["secrets"])]
    assert leaks == []


def test_the_vendored_rules_json_is_what_the_vendored_yaml_makes() -> None:
    made = {spec["id"]: spec for spec in rules_from_yaml(RULES_FOLDER)}
    vendored = {spec["id"]: spec for spec in json.loads(kingfisher.RULES_FILE.read_text())["rules"]}
    assert made.keys() == vendored.keys() and len(made) > 700
    for rule_id, spec in made.items():
        kept = vendored[rule_id]
        assert (spec["pattern"], spec["flags"], spec["label"], spec["min_entropy"]) == (
            kept["pattern"],
            kept["flags"],
            kept["label"],
            kept["min_entropy"],
        )
        assert set(kept["examples"]) <= set(spec["examples"])  # refresh leaves out what its rule misses


def test_rust_patterns_translate_to_python() -> None:
    verbose = "(?x)(?i)\n  \\b airbrake  # the service\n  [ a-z ]{2}  (?# a comment)\n  \\# ( [0-9]{4} )\n"
    assert to_python_pattern(verbose) == ("\\bairbrake[a-z]{2}#([0-9]{4})", re.ASCII | re.IGNORECASE)
    assert to_python_pattern(r"x(?i)[a-z]{3}")[0] == "x(?i:[a-z]{3})"  # a mid-pattern flag is scoped
    assert to_python_pattern(r"(?s)a.{0,4}(?<NAME>\w+)") == (r"a.{0,4}(?P<NAME>\w+)", re.ASCII | re.DOTALL)


def test_refresh_takes_only_a_set_that_compiles_and_keeps_the_old_one(tmp_path: Path) -> None:
    target = tmp_path / "kingfisher"
    (target / "rules").mkdir(parents=True)
    (target / "rules" / "old.yml").write_text("rules: []\n")
    source = tmp_path / "checkout" / "data" / "rules"
    source.mkdir(parents=True)
    (source / "bad.yml").write_text(
        "rules:\n  - name: Bad\n    id: kingfisher.bad.1\n    pattern: '(unclosed'\n    examples: []\n"
    )
    with pytest.raises(re.error):
        refresh(tmp_path / "checkout", target)
    assert [p.name for p in (target / "rules").iterdir()] == ["old.yml"]
    assert {spec["id"].split(".")[1] for spec in rules_from_yaml(RULES_FOLDER)} >= {"mysql", "airbrake"}
    with pytest.raises(ValueError, match="no Kingfisher rule files"):
        refresh(tmp_path, target)
    (source / "bad.yml").write_text(
        "rules:\n  - name: Good Key\n    id: kingfisher.good.1\n"
        "    pattern: '(?i)\\bgood.{0,8}([a-z0-9]{24})\\b'\n"
        "    examples: ['good key = q8w3klmn7pr2ty5vb9xc4df6', 'not matched']\n"
    )
    count, unmatched = refresh(tmp_path / "checkout", target)
    assert count == 1 and unmatched == ["kingfisher.good.1: 'not matched'"]
    assert json.loads((target / "rules.json").read_text())["rules"][0]["label"] == "good-key"


@pytest.mark.parametrize(
    "text",
    [
        f"setenv OPENAI_API_KEY {KEY}",  # csh
        f"set -x GITHUB_TOKEN {KEY}",  # fish
        f"ENV API_TOKEN {KEY}",  # Dockerfile
        f"mytool --api-key {KEY} --verbose",  # a command's flag
        f"--password {KEY}",
        f'$env:OPENAI_API_KEY = "{KEY}"',  # PowerShell
        f"export SERVICE_TOKEN={KEY}",
        f'token := "{KEY}"',  # Go
        f'"api_key" => "{KEY}",',  # PHP, Ruby
        f"[default]\naws_secret_access_key = {KEY}",  # INI
        f"Server=myServer;Database=db;User Id=sa;Password={KEY};",  # ADO.NET
        f"jdbc:mysql://db.example.com:3306/app?user=app&password={KEY}&useSSL=true",
        f"DefaultEndpointsProtocol=https;AccountName=acct;AccountKey={KEY}==;EndpointSuffix=core.windows.net",
        f"https://admin:{KEY}@db.example.com/app",  # URL userinfo
        f"curl -H 'Authorization: Bearer {KEY}' https://api.example.com",
        f"//registry.npmjs.org/:_authToken={KEY}",  # .npmrc
        "_auth=dXNlcjpaeThXM2tMbU43cFIydFk1dkI5eA==",  # .npmrc, legacy
        f"heroku config:set STRIPE_SECRET={KEY} -a app",
        f"machine api.example.com login jdoe password {KEY}",  # .netrc
        f"My dropbox token is {KEY[:15].lower()}. Then we go on",  # prose, a sentence's full stop after it
    ],
)
def test_a_key_is_redacted_in_the_forms_people_paste(strict: PrivacyFilter, text: str) -> None:
    out = strict.redact(text)
    value = (
        KEY[:15].lower()
        if "dropbox" in text
        else "dXNlcjpaeThXM2tMbU43cFIydFk1dkI5eA"
        if "_auth=" in text
        else KEY
    )
    assert value not in out and "<REDACTED:" in out


def test_a_docker_auth_file_loses_its_credentials(strict: PrivacyFilter) -> None:
    auth = "dXNlcjpaeThXM2tMbU43cFIydFk1dkI5eA=="
    out = strict.redact(json.dumps({"auths": {"https://index.docker.io/v1/": {"auth": auth}}}))
    assert auth not in out


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        ("easyinsight key = '987ahjjd8s7dfg6s5d4f3g2h1j'", "987ahjjd8s7dfg6s5d4f3g2h1j"),
        ('# smartsheet credentials\nsheet_id := "MVE7zmdxAq83kLp02nZx9wQe"', "MVE7zmdxAq83kLp02nZx9wQe"),
        ("use smartsheet MVE7zmdxAq83kLp02nZx9wQe for the export", "MVE7zmdxAq83kLp02nZx9wQe"),
        ("The key 550e8400-e29b-41d4-a716-446655440000 opens it.", "550e8400-e29b-41d4-a716-446655440000"),
        (
            "ACR=smpldev.azurecr.io\nACRPWD=Cw8xeDNK6Bub3p61aq5ij/TiVvtBicpTj5rverVezj+ACRBPkEcx",
            "Cw8xeDNK6Bub3p61",
        ),
        (
            "docker login r.azurecr.io -u r -p Ljc+1lq0U0+c3jHlMHxSxAhCipKt6zU43HfMle/Ymj+ACRAKcPHy",
            "Ljc+1lq0U0",
        ),
        ("<secret>{AQAAABAAA _FXYx2kyyNv6n_CBb9LrMHZPXa_S8iaj89zYn9mICmkB4=}</secret>", "FXYx2kyyNv6n"),
        ("## Save pass:\n\n  s3cEZKH3yytiVnJ3h+eI3qhhzf9l1vNwEi1+q+WGdd+ACRCZ7JD6", "s3cEZKH3yytiVnJ3"),
        ("Using Key=ATCTT3xFfGN0GsZNgOGrQSHSnxiJVi00oHlRicyM0yMNuKCBfw6qOHVcCy4Hm89Gnc=366BFE3A", "366BFE3A"),
        # an OAuth authorization code in its redirect
        (
            "GET https://app.example.com/auth/callback?code=4/0AX4XfWhq8sKzLmN3pQrT7vWyZ2bC5dE&scope=email",
            "0AX4XfWhq8sKzLmN3pQrT7vWyZ2bC5dE",
        ),
        (
            "Redirected to http://localhost:8080/?state=xyz123&code=SplxlOBeZQQYbYS6WxSbIA",
            "SplxlOBeZQQYbYS6WxSbIA",
        ),
        # in a URL, named by the part just before it, or by the text before the URL
        ("open https://app.example.com/reset-password#Xk9fQ2mZ7pLw3RtY8vBnQ4 now", "Xk9fQ2mZ7pLw3RtY8vBnQ4"),
        ("my token: https://example.com/x#Xk9fQ2mZ7pLw3RtY8vBnQ4", "Xk9fQ2mZ7pLw3RtY8vBnQ4"),
        # a one-time link's token in its path: a password reset, a verification, an invitation
        (
            "Reset it: https://app.example.com/reset-password/9f8e7d6c5b4a39281706f5e4d3c2b1a0",
            "9f8e7d6c5b4a3928",
        ),
        ("https://example.com/password/reset/Qm9vYmFyLXRva2VuLTEy?email=x", "Qm9vYmFyLXRva2VuLTEy"),
        ("GET /account/activate/550e8400-e29b-41d4-a716-446655440000 HTTP/1.1", "550e8400-e29b-41d4"),
        ("Join us: https://example.com/Invitations/k9Xw2Lp4Qz7Rt1Vb8Nm3", "k9Xw2Lp4Qz7Rt1Vb8Nm3"),
    ],
)
def test_a_credential_shaped_token_near_a_credential_word_or_a_service_is_redacted(
    strict: PrivacyFilter, text: str, secret: str
) -> None:
    assert secret not in strict.redact(text)


@pytest.mark.parametrize(
    "text",
    [
        # a commit beside a service's name
        "see github.com/org/repo/commit/3f1c2b7e9d0a4c5b6e7f8a9b0c1d2e3f4a5b6c7d",
        "the primary key is user_id_1234_in_region_eu",
        "token: self.api_token_value_thing",
        "class HTTPPasswordMgrWithPriorAuth(HTTPPasswordMgrWithDefaultRealm):",
        "if endrec[_ECD_SIGNATURE] == stringEndArchive64:",
        "credentialsId: 'a1b2c3d4-jenkins-deploy-credentials-2024'",
        '"kms_key_id": "1234abcd-12ab-34cd-56ef-1234567890ab",',
        "publicToken = 'pk_9f8e7d6c5b4a39281706f5e4d3c2b1a0'",
        '<input type="hidden" name="authenticity_token" value="7SWaFo1hsC6oovfBsJFLGPUl2EhkSWPbJh">',
        "the secret is stored_in_vault_v2",
        "the token is invalid_or_expired",
        "the key is used for signing",
        "EURASIA1234567890ABCDEF",
        # a credential word or a service's name elsewhere in a URL is where the link goes
        "[details](https://github.com/Yelp/detect-secrets/issues/272#issuecomment-619187136)",
        "[live stream]: https://www.youtube.com/playlist?list=PLhQjrBD2T382_R182iC2gNZI9HzWFMC_8",
        # a `code=` outside an OAuth redirect: a promotion's, a country's
        "https://shop.example.com/cart?code=SUMMER2026DISCOUNTS and https://example.com/c?code=DE",
        # a one-time link's purpose before a page's name, a file, an endpoint
        "https://example.com/docs/reset-password/how-to-reset-your-password",
        "see src/app/login/LoginForm.tsx and /api/login/refresh_session_token",
    ],
)
def test_names_ids_and_commits_near_a_credential_word_are_left_alone(
    strict: PrivacyFilter, text: str
) -> None:
    assert strict.redact(text) == text


def test_a_key_glued_to_a_name_by_an_underscore_is_redacted(strict: PrivacyFilter) -> None:
    secret = "sk_live_4eC39HqLyjWDarjtT1zdp7dc9Zq8W3kL"
    assert secret not in strict.redact(f"t_{secret}")
    assert "Zq8W3kLmN7pR2tY5vB9x" not in strict.redact("x_glpat-Zq8W3kLmN7pR2tY5vB9x")


def test_a_secret_found_once_is_redacted_everywhere_in_the_trajectory() -> None:
    privacy = PrivacyFilter("strict")
    secret = "t2P1f7O8b0J9d6P5j3Z5q4K6o0L0w0M4r0R1s6Z9"
    trajectory = {
        "trajectoryId": "t1",
        "steps": [
            {
                "llmCalls": [
                    {"userPrompt": f"my airbrake secretKey= {secret}", "response": "noted"},
                    {"userPrompt": "go on", "response": f"Calling the API with {secret} now."},
                ],
                "metadata": {"note": f"retried with {secret}"},
            }
        ],
    }
    privacy.redact_sensitive(trajectory)
    assert secret not in json.dumps(trajectory)
    assert "Calling the API with <REDACTED:airbrake-user-key> now." in json.dumps(trajectory)
    # within one text too, and a short secret (a URL's password) is not looked for elsewhere
    assert secret not in privacy.redact(f"airbrake secretKey= {secret}, again: {secret}")
    assert privacy.redact("https://u:hunter@db.example.com said hunter") == (
        "https://u:<REDACTED:url-password>@db.example.com said hunter"
    )
    # before a weaker rule reads the rest: the proximity rule took a copy in brackets for `key=value`
    # and redacted only the part after `=`, leaving the token's first half (a second pass took it)
    token = "live_7qi2zhKY66BwUH=GMlHdlQllM1_6HK1mS31M0j9M"
    once = privacy.redact(f"My gocardless token is {token}. Try ({token}), then {token}: thanks!")
    assert "7qi2zhKY66BwUH" not in once and privacy.redact(once) == once


def test_the_recheck_finds_a_value_named_by_its_key_but_not_a_redaction() -> None:
    scanner = SecretScanner()
    assert scanner.find('password = "hunter2xyzQ"') == (("Secret Keyword", "hunter2xyzQ"),)
    assert scanner.find('password = "<REDACTED:keyed-secret>"') == ()
    assert scanner.find('api_key: "${API_KEY}"') == ()
    assert scanner.find("the password field is required") == ()


def test_every_keyword_of_the_detector_holds_a_hint_the_scanner_looks_for_first() -> None:
    from detect_secrets.plugins.keyword import DENYLIST

    from training_pipeline.privacy.scan import holds_keyword_hint

    assert all(holds_keyword_hint(word.replace("_?", "_")) for word in DENYLIST)
    assert holds_keyword_hint("DB_PASSWORD=") and holds_keyword_hint("the \u212aey is")  # a Kelvin sign
    assert not holds_keyword_hint("the staging deploy failed again")


@pytest.mark.parametrize("module", ["gitleaks", "kingfisher"])
def test_a_refresh_from_a_missing_source_is_one_line_and_changes_nothing(module: str, tmp_path: Path) -> None:
    vendored = (kingfisher.RULES_FILE if module == "kingfisher" else gitleaks.RULES_FILE).read_bytes()
    done = subprocess.run(
        [sys.executable, "-m", f"training_pipeline.privacy.{module}", "refresh", str(tmp_path / "missing")],
        capture_output=True,
        text=True,
        cwd=REPO,
    )
    assert done.returncode != 0 and done.stdout == ""
    assert done.stderr.startswith("error: ") and len(done.stderr.strip().splitlines()) == 1
    assert "Traceback" not in done.stderr
    assert (kingfisher.RULES_FILE if module == "kingfisher" else gitleaks.RULES_FILE).read_bytes() == vendored


@pytest.mark.parametrize(
    ("pattern", "run"),
    [
        (r"\bline(?:.|[\n\r]){0,32}?(?:SECRET|KEY)(?:.|[\n\r]){0,32}?\b([a-zA-Z0-9+/]{171,172})", 171),
        (r"\bcolumn(?:.|[\n\r]){0,32}?KEY\b((?:test|live)_[a-zA-Z0-9]{27})", 27),
        (r"\b(sgp_\w{64})\b", 64),
        (r"(?:foo|[a-z]{40})", None),  # a branch of an alternation
        (r"key|[a-z]{40}", None),
        (r"x([a-z]{40})?", None),  # an optional group
        (r"x(?:[a-z]{40}){,2}", None),
        (r"(?=[a-z]{40})abc", None),  # a lookaround
        (r"(?i:[a-z]{40})", None),  # a scoped flag: not followed
        (r"tok=[a-z]{8}", None),  # too short to be worth looking for
    ],
)
def test_a_token_run_counts_only_where_every_match_holds_it(pattern: str, run: int | None) -> None:
    found = required_run(pattern)
    assert (found[1] if found else None) == run


def test_a_rule_named_by_a_common_word_runs_only_on_text_holding_its_token(strict: PrivacyFilter) -> None:
    """Kingfisher's LINE rule is gated on the word `line`: a log or a prompt full of the word ran its
    pattern, gaps and all, at every occurrence, for a 171-character token the text did not hold."""
    (rule,) = [rule for rule in strict.rules.rules if rule.label == "line-messaging-api-token"]
    log = "line 42: the access key was rotated\n" * 50
    assert rule.pattern.search(log) is None and not rule.applies(log)
    example = kingfisher.examples()[rule.label][0]
    assert rule.applies(example)
    assert rule.redact(example)[1] == 1


def test_every_published_key_holds_the_token_run_its_rule_looks_for_first() -> None:
    rules = {rule.label: rule for rule in (*kingfisher.load_rules(), *gitleaks.load_rules())}
    checked = 0
    for corpus in (CORPUS, REPO / "bench" / "data" / "credential_corpus.jsonl"):
        for sample in map(json.loads, corpus.read_text().splitlines()):
            rule = rules.get(sample["family"])
            if rule is None or rule.token_run is None or rule.pattern.search(sample["text"]) is None:
                continue
            checked += 1
            assert rule.token_run.held_by(sample["text"]), (rule.label, sample["text"])
    assert checked > 5000
