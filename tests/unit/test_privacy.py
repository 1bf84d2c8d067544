"""The privacy filter: elizaOS's rules, the strict profile's families, handles, private people."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.helpers import REPO, fresh_python
from training_pipeline.privacy.entities import EntityDirectory
from training_pipeline.privacy.filter import PrivacyFilter, secret_env_values
from training_pipeline.privacy.scan import SecretScanner

#: (label, text with a made-up credential of that family): gitleaks' family names, our own families
#: (`private-key`, `url-password`, `authorization-header`, ...), and values named by their key
FAMILIES = [
    ("openai-key", "key sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXyZ0aBcDeFgHiJkL ok"),
    ("anthropic-key", "use sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789-_abcdEFGH now"),
    ("github-token", "ghp_C3J27XDCG2LmlZGEONYlgCtjfIZ4SOcMz9CP"),
    ("github-app-token", "server token ghs_VNPkNa1Hedcm4pMbXDuCL1mHoOsFaQfDPrAJ"),
    ("github-oauth", "oauth gho_71fTquWoGsbeKXgzg2sye9b2Rann76dEyTzA"),
    (
        "github-fine-grained-pat",
        "pat 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",
    ),
    ("gitlab-pat", "glpat-MxxNDi9LE1Ki3ylOjt6o"),
    ("aws-access-key", "AKIAPMK9MY4F0DGGC6QP"),
    ("aws-access-token", "session ASIAQWB5PDKHX6PYGPAN"),
    ("aws-secret-key", 'aws_secret_access_key = "VberACpdclsxHKifxi5CvQUSHL8iLc7bE6wSt9cb"'),
    ("stripe-access-token", "sk_live_MOeEeUtuieeCIxVc57VVTiY9"),
    ("stripe-access-token", "rk_live_6vwfRE5e32A8Yb3FKaNQyyLa"),
    ("slack-bot-token", "xoxb-1234567890-1234567890123-MeffOhq4AUvy7VSLDCD1IfHW"),
    (
        "slack-webhook-url",
        "post to https://hooks.slack.com/services/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",
    ),
    ("gcp-api-key", "AIzanyoL6uniiFw152cTe8r0khCEr7n1AyOHFRu"),
    ("huggingface-access-token", "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"),
    ("npm-access-token", "npm_CgOIPOZx9eRmm0EqlTaWEITclorXwIS8HGNW"),
    ("pypi-upload-token", "pypi-AgEIcHlwaS5vcmckz2YS5ofA75UyiCDmO46ayJKP4GY08vDuPngU30ZP7Thnp5yftIY7uq6T2bw"),
    ("sendgrid-api-token", "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"),
    ("twilio-api-key", "SK6948f6d30c01c3f252edc87ff4adfa36"),
    (
        "jwt",
        "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
    ),
    (
        "private-key",
        "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA7\nq8w==\n-----END RSA PRIVATE KEY-----",
    ),
    ("private-key", "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\nAAAA"),
    ("url-password", "DATABASE_URL=postgres://admin:s3cr3tpass@db.example.com:5432/app"),
    ("authorization-header", "Authorization: Basic dXNlcjpwYXNzd29yZA=="),
    ("bearer", "curl -H 'x: Bearer abcdef0123456789abcdef'"),
    ("discord-api-token", "discord token: d0840164709ab7f3f386d0cd566647b5aa666347428c3dd46c036bb3a62f301f"),
    ("telegram-bot-api-token", "telegram_bot_token = 123456789:AAArl63XykWZeiNNCiia3anXn9k3ksu9mI4"),
    ("mailchimp-api-key", "mailchimp_key = 656c90bd5482a90a29b9fa5ff5180bc0-us12"),
    ("square-access-token", "square EAAAtEga4wO5Ndor89QtvnQzKlIeyGFPnShWzKbhNgVpqCzGdWmPyagqqr5vJIGA"),
    (
        "azure-storage-key",
        "AccountKey=9HK2gOCZPeJMQW9cy78kyEk2FINMdB8FAsHzMtxHsEPrJ7sQTVsbaXpLcOkAWRyd5uVzdLU8ueZ5oBUEqWpcHg==",
    ),
    ("artifactory-api-key", "AKCp7ZU6Dj90pMThdNADhn3dwHjhxCiQADMqOLRAxXVH0i8sUipEhG5tYGN2wrrNRUKSLmOrW"),
    ("command-password", "mysql -uroot -phunter2 app"),
    ("command-password", "sshpass -p hunter2 ssh bob@db.example.com"),
    ("langsmith-key", "tracing with 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 on"),
    (
        "pinecone-key",
        "pc = Pinecone('pcsk_MLZWe_06d39s5jQ3r5OXKXjcPlmSNvC2RJxZPgH1QtJeMOTkwq8sE0b4Ry7uZ3aWcVnLx')",
    ),
    ("tavily-key", "client = TavilyClient('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')"),
    ("firecrawl-key", "app = FirecrawlApp('fc-461ccdbdaea2343a33f6cc7ce920257f')"),
    ("e2b-key", "Sandbox(api_key_from=e2b_d46847bba471128a8a180128a0f8cc96f54ab114)"),
    ("browserbase-key", "connecting with bb_live_7yJm9CbgnbZTDEGnjsojoWksxZz"),
    ("keyed-secret", "password: Tr0ub4dor&3xQ"),
    ("keyed-secret", "GET /v1/items?access_token=Zq8W3kLmN7pR2tY5vB9xC4dF6gH1jK0s&page=2"),
    ("generic-api-key", "X-Api-Key: OxEEwnvvFVi13eZhCZ0N1XXnCBVq"),
    ("generic-api-key", 'clientSecret = "yZjxjP1MusJWV06lBPxLgD4ufIfBKK"'),
]


@pytest.mark.parametrize(
    ("label", "text"), FAMILIES, ids=[f"{label}-{i}" for i, (label, _) in enumerate(FAMILIES)]
)
def test_strict_redacts_each_family_with_its_label_and_the_scanner_agrees(label: str, text: str) -> None:
    privacy = PrivacyFilter("strict")
    out = privacy.redact(text)
    assert f"<REDACTED:{label}>" in out
    assert privacy.stats.redactions[label] >= 1
    assert SecretScanner().find(out) == ()


def test_the_scanner_is_independent_it_catches_what_the_elizaos_rules_miss() -> None:
    leaks = [
        "sk_live_4eC39HqLyjWDarjtT1zdp7dc",
        "xoxb-1234567890-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx",
        "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",
    ]
    scanner = SecretScanner()
    for leak in leaks:
        assert PrivacyFilter("elizaos").redact(leak) == leak  # elizaOS's five patterns do not know it
        assert scanner.find(leak), leak


def test_elizaos_profile_applies_its_patterns_in_order() -> None:
    privacy = PrivacyFilter("elizaos")
    # the openai pattern runs first and also swallows sk-ant- keys, exactly as in elizaOS
    assert privacy.redact("sk-ant-abcdefghijklmnopqrstu") == "<REDACTED:openai-key>"
    assert privacy.redact("Bearer sk-abcdefghijklmnopqrstu") == "Bearer <REDACTED:openai-key>"
    assert privacy.redact("AKIAABCDEFGHIJKLMNOP ghp_abcdefghijklmnopqrst") == (
        "<REDACTED:aws-access-key> <REDACTED:github-token>"
    )


def test_text_that_is_not_utf8_still_gets_every_rule() -> None:
    """A lone surrogate (JSON allows `\\ud800`) cannot be scanned by the prefilter; every rule runs."""
    text = "\ud800 key sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXyZ0 and AKIAIOSFODNN7EXAMPLE"
    for profile in ("strict", "elizaos"):
        out = PrivacyFilter(profile).redact(text)
        assert out.startswith("\ud800 key <REDACTED:openai-key>")
        assert out.endswith("<REDACTED:aws-access-key>")


def test_ordinary_text_is_left_alone() -> None:
    """False positives: the strict profile changes nothing in ordinary chat and code (the full
    measurement over the standard library is `bench/false_positives.py`). Credentials only: the text's
    email address and phone number are personal data, and `test_personal_data` holds those."""
    privacy = PrivacyFilter("strict", personal_data="none")
    lines = (REPO / "tests" / "data" / "ordinary_text.txt").read_text(encoding="utf-8").splitlines()
    changed = [line for line in lines if privacy.redact(line) != line]
    assert changed == []
    assert len(lines) > 30


def test_environment_secret_values_are_redacted_by_value() -> None:
    env = {
        "MY_API_TOKEN": "tok-1234567",
        "SHORT_KEY": "abc",
        "HOME": "/root/longpath",
        "DB_PASSWORD": "pa$$w0rd!!",
    }
    values = secret_env_values("strict", env)
    assert set(values) == {"tok-1234567", "pa$$w0rd!!"}  # names that say secret, values of 8+ chars
    privacy = PrivacyFilter("strict", env_secrets=values)
    assert privacy.redact("login with pa$$w0rd!! and tok-1234567") == (
        "login with <REDACTED:env-secret> and <REDACTED:env-secret>"
    )
    assert secret_env_values("elizaos", env, names="DB_*") == ("pa$$w0rd!!",)


def test_a_secret_held_under_its_key_in_an_object_is_redacted_and_spread() -> None:
    """A config in a tool's result or the metadata (`{"api_key": "…"}`) is walked string by string: a
    value is a secret by its key as the keyed rule reads `"api_key": "…"` in a text, and the same value
    said later in a prompt goes too; what a key says about a secret (its id, a tokenizer, a count, a
    method) and placeholders stay."""
    secret, password = "Zx8d7f6g5h4j3k2l1qwertyPL", "Tr0ub4dor3xQzz!"
    config = {
        "api_key": secret,
        "db": {"password": password},
        "headers": {"X-Api-Key": secret},
        "api_key_id": "key-Zx8d7f6g5h4j3k2l1",
        "tokenizer": "cl100k_base",
        "token_count": "12345678901",
        "auth_method": "oauth2",
        "client_secret": "${CLIENT_SECRET}",
    }
    calls = [
        {"purpose": "response", "systemPrompt": "s", "userPrompt": "connect", "response": "ok"},
        {"purpose": "response", "systemPrompt": "s", "userPrompt": f"retry with {secret}", "response": "ok"},
    ]
    trajectory = json.loads(
        json.dumps({"trajectoryId": "t", "steps": [{"llmCalls": calls}], "metadata": {"config": config}})
    )
    strict = PrivacyFilter("strict", personal_data="none")
    strict.redact_sensitive(trajectory)
    assert secret not in json.dumps(trajectory) and password not in json.dumps(trajectory)
    kept = trajectory["metadata"]["config"]
    assert [kept[k] for k in ("api_key_id", "tokenizer", "token_count", "auth_method", "client_secret")] == [
        "key-Zx8d7f6g5h4j3k2l1",
        "cl100k_base",
        "12345678901",
        "oauth2",
        "${CLIENT_SECRET}",
    ]
    assert strict.stats.redactions["keyed-secret"] == 4  # three in the config, one in the prompt
    elizaos = {"trajectoryId": "t", "steps": [{"llmCalls": calls}], "metadata": {"config": dict(config)}}
    PrivacyFilter("elizaos").redact_sensitive(elizaos)  # elizaOS's filter reads the prompts alone
    assert elizaos["metadata"]["config"]["api_key"] == secret


@pytest.mark.parametrize("password", ["hunter2", "correct horse battery staple", "1234", "P@ssw0rd"])
def test_a_password_a_person_chose_is_redacted_under_its_field_however_plain(password: str) -> None:
    """A login tool's arguments, the prompt that shows them and a saved connection: what a person chose
    (short, words, digits) is no random token, but a password's field says what it holds; a mask, a
    placeholder, a type and the shell's working directory (`PWD`) stay."""
    arguments = json.dumps({"username": "bob", "password": password})
    calls = [
        {"purpose": "action", "userPrompt": "log me in", "toolCallArguments": arguments},
        {"purpose": "response", "userPrompt": f"Tool call: login({arguments})\nResult: ok", "response": "in"},
    ]
    masks = {"password": "********", "new_password": "<password>", "pwd": "string", "db_pwd": "${DB_PASS}"}
    metadata = {
        "connection": {"user": "bob", "db_password": password},
        "form": masks,
        "env": {"PWD": "/srv", "PGPASSWORD": password},
    }
    trajectory = {"trajectoryId": "t", "steps": [{"llmCalls": calls}], "metadata": metadata}
    PrivacyFilter("strict", personal_data="none").redact_sensitive(trajectory)
    redacted = {"username": "bob", "password": "<REDACTED:keyed-secret>"}
    assert json.loads(calls[0]["toolCallArguments"]) == redacted
    assert calls[1]["userPrompt"] == f"Tool call: login({json.dumps(redacted)})\nResult: ok"
    assert metadata["connection"] == {"user": "bob", "db_password": "<REDACTED:keyed-secret>"}
    assert metadata["form"] == masks and metadata["env"] == {
        "PWD": "/srv",
        "PGPASSWORD": "<REDACTED:keyed-secret>",
    }


_SET = "<REDACTED:keyed-secret>"


@pytest.mark.parametrize(
    ("text", "kept"),
    [
        (
            "DB_HOST=db\nDB_PASSWORD=hunter2\nexport SMTP_PASS=letmein1\n",
            f"DB_HOST=db\nDB_PASSWORD={_SET}\nexport SMTP_PASS={_SET}\n",
        ),
        (
            "database:\n  user: bob\n  password: correct-horse\n",
            f"database:\n  user: bob\n  password: {_SET}\n",
        ),
        ("[db]\npassword = s3cr3t  # prod\n", f"[db]\npassword = {_SET}  # prod\n"),
        ("const cfg = {\n  password: 'hunter2',\n}", f"const cfg = {{\n  password: '{_SET}',\n}}"),
        ("PGPASSWORD=hunter2 psql -h db", f"PGPASSWORD={_SET} psql -h db"),
        ("mysql -u root --password=hunter2 app", f"mysql -u root --password={_SET} app"),
        (
            "psql 'host=db user=bob password=hunter2 dbname=app'",
            f"psql 'host=db user=bob password={_SET} dbname=app'",
        ),
        ("Server=db;User Id=sa;Password=hunter2;", f"Server=db;User Id=sa;Password={_SET};"),
        ('connect(user="bob", password="hunter2")', f'connect(user="bob", password="{_SET}")'),
        ('os.environ["DB_PASSWORD"] = "hunter2"', f'os.environ["DB_PASSWORD"] = "{_SET}"'),
        ('requests.get(url, auth=("bob", "hunter2"))', f'requests.get(url, auth=("bob", "{_SET}"))'),
        ('server.login("bob@example.com", "hunter2")', f'server.login("bob@example.com", "{_SET}")'),
        ("The password is hunter2.", f"The password is {_SET}."),
        ("My PIN is 4821", f"My PIN is {_SET}"),
        ("the passphrase was 'P@ss!word'", f"the passphrase was '{_SET}'"),
        ("my password is letmein", f"my password is {_SET}"),
        ("my password is abc1", f"my password is {_SET}"),
        ("My wifi password is sunshine.", f"My wifi password is {_SET}."),
        ("the password is 'dragon'", f"the password is '{_SET}'"),
        ("the password is letmein", f"the password is {_SET}"),
        ("The default password is sunshine.", f"The default password is {_SET}."),
        ("Your password is: marmalade", f"Your password is: {_SET}"),
        (
            "db_pass=hunter2\nsmtpPass: letmein\nDB_PASSWORD=user123\n",
            f"db_pass={_SET}\nsmtpPass: {_SET}\nDB_PASSWORD={_SET}\n",
        ),
        ('$db_pass = "Xk9#mq2LpZ";', f'$db_pass = "{_SET}";'),
        # a passphrase with the other quote in it, whole: `'s-a-secret` was kept
        ('{"password": "it\'s-a-secret", "user": "bob"}', f'{{"password": "{_SET}", "user": "bob"}}'),
        ('password = "don\'t tell"\npassword: "Tom\'s dog"\n', f'password = "{_SET}"\npassword: "{_SET}"\n'),
        (
            '{"mysql_root_pass": "letmein", "dbpass": "hunter2"}',
            f'{{"mysql_root_pass": "{_SET}", "dbpass": "{_SET}"}}',
        ),
        (
            "docker login -u bob -p hunter22 ghcr.io; mongosh --username bob --password hunter22",
            "docker login -u bob -p <REDACTED:command-password> ghcr.io; "
            "mongosh --username bob --password <REDACTED:command-password>",
        ),
        # a label's password on a line that goes on (a support reply's credentials)
        ("Login: jdoe42 Password: hunter22 (change it)", f"Login: jdoe42 Password: {_SET} (change it)"),
    ],
)
def test_a_password_a_config_a_command_or_a_connection_string_sets_is_redacted(text: str, kept: str) -> None:
    """What a coding agent reads and runs and what people tell it: a `.env`, YAML, INI and JavaScript
    config, a command's password, a connection string's, a login's in code, one said in a sentence;
    each loses its value whatever it is, and keeps the rest."""
    assert PrivacyFilter("strict", personal_data="none").redact(text) == kept


@pytest.mark.parametrize(
    "code",
    [
        "    password = getpass.getpass()",
        "    password = self.password",
        "    password: str",
        "    password = None",
        "    password: Optional[str] = None",
        "        password: _PasswordType | None = None,",
        "    def login(self, password: SecretStr, user: Optional[str]):",
        "Password: Forgot password?",
        "Password: os.environ.get(KEY) ok",
        "On resetting my password: passwords are reset from the login page's link.",
        "PWD=/srv",
        "db.connect(user=user, password=pw)",
        "self.user, self.password = user, password",
        "login, account, password = auth_from_netrc",
        "    s3_disable_express_session_auth=s3_disable_express_session_auth,",
        "self.password = credentials",
        "userid = passwd = acct = ''",
        "PuttyPassword=0",
        "mysql -u root -p app",
        "echo $CR_PAT | docker login ghcr.io -u bob --password-stdin",
        "mysqldump -u bob -p$DB_PASS app",
        "the password is incorrect",
        "the password is given",
        "if the password is then reset",
        "the admin password is changeme",
        "my password is incorrect",
        "My password is not working",
        "my password is expired",
        "my email password is different",
        "my password is 'incorrect'",
        "The password is 12 characters long",
        "The PIN is 4 digits",
        "the password is 2024",
        "if the password is None:",
        'if config["password"] == "":',
        "the password is self.password",
        "first_pass = true",
        "render_pass: shadows",
        "proxy_pass: http://backend:8080",
        "boarding_pass: AB1234",
        "bypass=on",
        "db_pass = os.environ['DB_PASS']",
        "userpass = username",
    ],
)
def test_code_that_reads_or_passes_a_password_is_left_alone(code: str) -> None:
    """A call, a reference, a type, a variable passed on or unpacked, a switch, a sentence about a
    password: no password is in it."""
    assert PrivacyFilter("strict", personal_data="none").redact(code) == code


@pytest.mark.parametrize(
    ("body", "kept"),
    [
        ("password=Summer2024!&user=bob", "password=<REDACTED:keyed-secret>&user=bob"),
        (
            "client_secret=Zx8d7f6g5h4j3k2l1qwertyPL&grant_type=client_credentials&scope=read",
            "client_secret=<REDACTED:keyed-secret>&grant_type=client_credentials&scope=read",
        ),
        ("password: Tr0ub4dor&3xQ", "password: <REDACTED:keyed-secret>"),
    ],
)
def test_a_forms_body_loses_its_secret_and_keeps_its_other_fields(body: str, kept: str) -> None:
    """A form's body (an OAuth token request, a login's POST) has no `?` before its first field: the
    secret ends where the next field begins, and a password with a `&` in it is still whole."""
    assert PrivacyFilter("strict", personal_data="none").redact(body) == kept


def test_a_secret_written_with_percent_escapes_is_redacted_where_it_is_written() -> None:
    """A token in a URL nested in a query (`redirect_uri=…%3Dsk_live_…`), an environment value with
    `/` and `+` escaped in a URL: read as the URL reads, redacted as it is written, the rest of the URL
    kept; the same value elsewhere in the trajectory, escaped or not, goes too. `elizaos` is elizaOS's
    filter, which reads no escape."""
    from urllib.parse import quote

    from tests.planted_secrets import STRIPE_KEY

    value = "Zq9/x8+w7v=PLANTED"
    nested = f"redirect_uri={quote(f'https://app.example.com/cb?code={STRIPE_KEY}', safe='')}"
    fetched = f"GET https://vault.example.com/v1/unwrap?state={quote(value, safe='')}&ttl=60"
    strict = PrivacyFilter("strict", env_secrets=(value,), personal_data="none")
    assert strict.redact(nested) == (
        "redirect_uri=https%3A%2F%2Fapp.example.com%2Fcb%3Fcode%3D<REDACTED:stripe-access-token>"
    )
    assert (
        strict.redact(fetched) == "GET https://vault.example.com/v1/unwrap?state=<REDACTED:env-secret>&ttl=60"
    )
    calls = [
        {"purpose": "response", "systemPrompt": "s", "userPrompt": fetched, "response": "ok"},
        {
            "purpose": "response",
            "systemPrompt": "s",
            "userPrompt": "again",
            "response": f"I used {quote(value)}",
        },
    ]
    trajectory = {"trajectoryId": "t", "steps": [{"llmCalls": calls}], "metadata": {"redirect": nested}}
    strict.redact_sensitive(trajectory)
    text = json.dumps(trajectory)
    assert STRIPE_KEY not in text and quote(value, safe="") not in text and quote(value) not in text
    assert PrivacyFilter("elizaos", env_secrets=(value,)).redact(fetched) == fetched


@pytest.mark.parametrize("gated", [False, True])
def test_environment_secrets_outside_ascii_then_the_rules(gated: bool) -> None:
    """Values replaced first, then the rules over what is left (the gate reading the replaced text's
    UTF-8, kept in step by replacing the values' bytes); with four values or more, a literal gate
    names the values a text holds."""
    values = (
        "mot-de-passe-été",
        "tok-1234567",
        "ключ-секрет-42",
        *(("other-value-1", "other-value-2") if gated else ()),
    )
    privacy = PrivacyFilter("strict", env_secrets=values)
    text = "été — mot-de-passe-été, ключ-секрет-42 puis sk-ant-AbCdEf0123456789xyz et tok-1234567 ✓"
    assert privacy.redact(text) == (
        "été — <REDACTED:env-secret>, <REDACTED:env-secret> puis <REDACTED:anthropic-key> et "
        "<REDACTED:env-secret> ✓"
    )
    counts: dict[str, int] = {}
    replaced, data = privacy._redact_env(text, text.encode(), counts, keep_utf8=True)
    assert data == replaced.encode() and counts == {"env-secret": 3}


def test_repeated_strings_are_redacted_and_counted_every_time() -> None:
    """Short strings' redactions are remembered; the output and the counts are as if they were not."""
    key = "sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXyZ0aBcDeFgHiJkL"
    privacy = PrivacyFilter("strict", env_secrets=("tok-1234567",))
    text = f"key {key} and tok-1234567"
    for _ in range(3):
        assert privacy.redact(text) == "key <REDACTED:openai-key> and <REDACTED:env-secret>"
    assert privacy.stats.redactions == {"openai-key": 3, "env-secret": 3}
    long = text + " " + "filler " * 60  # past the remembered length: the same answer, the same counts
    assert privacy.redact(long).startswith("key <REDACTED:openai-key>")
    assert privacy.stats.redaction_count == 8
    # what one filter remembers is its own: another's secrets are not this one's
    assert PrivacyFilter("strict").redact(text) == "key <REDACTED:openai-key> and tok-1234567"


def _trajectory(text: str, tid: str = "t1") -> dict:
    return {
        "trajectoryId": tid,
        "startTime": 0,
        "steps": [
            {
                "llmCalls": [
                    {"systemPrompt": "s", "userPrompt": text, "response": "ok", "metadata": {"note": text}}
                ]
            }
        ],
        "metadata": {"debug": f"env dump: {text}"},
    }


def test_handles_are_anonymised_and_private_people_dropped(tmp_path: Path) -> None:
    path = tmp_path / "entities.csv"
    path.write_text(
        "platform,handle,entity_id,privacy_level\ndiscord,alice,e-a,public\ntelegram,@heidi,e-h,private\n",
        encoding="utf-8",
    )
    directory = EntityDirectory.load(path)
    privacy = PrivacyFilter("strict", directory)
    kept = _trajectory("hi @alice and @nobody")
    assert privacy.apply(kept)
    assert kept["steps"][0]["llmCalls"][0]["userPrompt"] == "hi <entity:e-a> and @nobody"
    assert not privacy.apply(_trajectory("ping @heidi", "t2"), origin="file:2")
    stats = privacy.stats
    assert (stats.trajectories_in, stats.kept, stats.dropped_private) == (2, 1, 1)
    assert stats.dropped == [{"trajectoryId": "t2", "reason": "entity-private", "origin": "file:2"}]
    assert stats.anonymization_count == 2


def test_strict_also_cleans_metadata_and_other_strings_elizaos_leaves_them() -> None:
    secret = "ghp_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789"
    strict, eliza = _trajectory(secret), _trajectory(secret)
    PrivacyFilter("strict").apply(strict)
    PrivacyFilter("elizaos").apply(eliza)
    assert secret not in json.dumps(strict)
    assert eliza["metadata"]["debug"].endswith(secret)  # elizaOS only filters the three prompt fields


def test_entity_directory_errors_name_the_file(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"handles": ["not a map"]}')
    with pytest.raises(ValueError, match=r"bad\.json"):
        EntityDirectory.load(bad)
    csv = tmp_path / "bad.csv"
    csv.write_text("platform,handle\ndiscord,alice\n")
    with pytest.raises(ValueError, match="missing CSV columns"):
        EntityDirectory.load(csv)


@pytest.mark.parametrize(
    "text",
    [
        "-----BEGIN PRIVATE KEY-----" * 8000,
        "sk-" * 70000,
        "Bearer " * 30000,
        "@" * 200000,
        "a://b:" * 40000,
        "password=" * 25000,
        "aws" * 70000,
        "1234567890:" * 20000,
        "Authorization: " * 15000,
        "eyJ." * 50000,
    ],
)
def test_no_catastrophic_backtracking_on_hostile_200k_texts(text: str) -> None:
    """A guard against exponential regexes, not a speed target (those live in bench/). The credential
    rules' (personal data is Presidio's per window, `test_dense_text_costs_personal_data_linear_time`)."""
    started = time.perf_counter()
    PrivacyFilter("strict", personal_data="none").redact(text)
    PrivacyFilter("elizaos").redact(text)
    assert time.perf_counter() - started < 5


def test_dense_text_costs_personal_data_linear_time() -> None:
    """A text made of candidates (a table of numbers, a log) is read a window at a time: ten times the
    text costs about ten times the time, never a whole text handed to Presidio at once."""
    privacy = PrivacyFilter("strict", personal_data="all", ner_model="")
    privacy.redact("warm up: call +1 415 555 0132")

    def seconds(rows: int) -> float:
        started = time.perf_counter()
        privacy.redact("".join(f"row {n}: 12345{n:05d}:+1 415 555 {n % 10000:04d}\n" for n in range(rows)))
        return time.perf_counter() - started

    small, large = seconds(100), seconds(1000)
    assert large < 20 * small + 1, (small, large)


def test_a_dataset_file_is_validated_and_scanned_in_one_read(tmp_path) -> None:
    from training_pipeline.datasets.validate import inspect_dataset_file
    from training_pipeline.privacy.scan import SecretScanner

    messages = [
        {"role": "system", "content": "s"},
        {"role": "user", "content": "u"},
        {"role": "model", "content": "token ghp_PLANTEDsecretAbCdEfGhIjKlMnOpQrStUvWx"},
    ]
    good = {"messages": messages}
    path = tmp_path / "response_trajectories.jsonl"
    path.write_text(
        json.dumps(good)
        + "\n"
        + "{not json\n"
        + json.dumps({"messages": [{"role": "user", "content": 1}]})
        + "\n"
    )
    validation, scan = inspect_dataset_file(path, SecretScanner())
    assert validation.lines == 3
    assert [e.split(":")[0] for e in validation.errors] == ["line 2", "line 3"]
    assert scan.texts_scanned == 3 and not scan.clean and scan.locations == ["line 1 (model)"]


_M = [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}, {"role": "model", "content": "m"}]


@pytest.mark.parametrize(
    ("record", "problem"),
    [
        ({"messages": _M}, None),
        ([], "key"),
        ({"messages": _M, "x": 1}, "key"),
        ({"message": _M}, "key"),
        ({"messages": _M[:2]}, "roles"),
        ({"messages": [*_M, _M[0]]}, "roles"),
        ({"messages": [_M[1], _M[0], _M[2]]}, "roles"),
        ({"messages": [_M[0], "u", _M[2]]}, "roles"),
        ({"messages": {"a": 1}}, "roles"),
        ({"messages": [_M[0], {"role": "user"}, _M[2]]}, "content"),
        ({"messages": [_M[0], {"role": "user", "content": 1}, _M[2]]}, "content"),
        ({"messages": [_M[0], {**_M[1], "name": "x"}, _M[2]]}, "content"),
        ({"messages": [_M[0], {"role": "user", "text": "u"}, _M[2]]}, "content"),
    ],
)
def test_a_dataset_line_is_told_what_is_wrong_with_it(record: object, problem: str | None) -> None:
    from training_pipeline.datasets.validate import _record_problem

    found = _record_problem(record)
    assert (found is None) == (problem is None)
    assert problem is None or problem in found


def test_a_scanner_finds_the_same_and_has_one_fingerprint_in_every_process(tmp_path: Path) -> None:
    """detect-secrets' plugins (through their gate) and the environment's values are found alike in
    two processes, and the scanner's fingerprint (what the checks' cached inspections are keyed by) is
    the same in both."""
    code = (
        "import sys\nfrom training_pipeline.privacy.scan import SecretScanner\n"
        "scanner = SecretScanner(('hunter2-secret-value',))\n"
        "clean = scanner.find('the weather is fine today\\nnothing to see')\n"
        "before = 'detect_secrets' in sys.modules\n"
        "found = scanner.find('key: AKIAIOSFODNN7EXAMPLF and hunter2-secret-value')\n"
        "print(repr((clean, before, 'detect_secrets' in sys.modules, found, scanner.fingerprint())))"
    )

    def run() -> tuple:
        return ast.literal_eval(fresh_python(code, XDG_CACHE_HOME=str(tmp_path)).strip())

    first, second = run(), run()
    assert first[0] == () and first[2] is True
    assert first[3] == second[3] and ("Environment secret", "hunter2-secret-value") in first[3]
    assert any(kind == "AWS Access Key" for kind, _ in first[3])
    assert first[4] == second[4]


def test_a_secret_value_that_is_not_utf8_is_redacted_and_fingerprinted() -> None:
    """An environment value with bytes that are not UTF-8 reaches Python with lone surrogates: the
    filter and the scanner still take it, and the scanner's fingerprint (a hash of it) still computes."""
    secret = "abc\udcff-secret-value"
    privacy = PrivacyFilter("strict", env_secrets=(secret,))
    assert secret not in privacy.redact(f"x {secret} y")
    scanner = SecretScanner((secret,))
    assert scanner.find(f"x {secret} y") == (("Environment secret", secret),)
    assert scanner.fingerprint() != SecretScanner().fingerprint()


def test_a_repeated_long_prompt_is_redacted_and_counted_every_time_within_a_bounded_memo() -> None:
    """A system prompt repeats in every call of an agent: its redaction is remembered and replayed, each
    occurrence counted as if redacted anew, and what is remembered stays within its bound."""
    from training_pipeline.privacy import memo

    prompt = "You are Eliza. " * 200 + "Deploy with ghp_C3J27XDCG2LmlZGEONYlgCtjfIZ4SOcMz9CP today."
    privacy = PrivacyFilter("strict")
    outputs = {privacy.redact(prompt) for _ in range(3)}
    assert len(outputs) == 1 and "<REDACTED:github-token>" in outputs.pop()
    assert privacy.stats.redactions["github-token"] == 3
    clean = "Nothing secret here. " * 200
    assert privacy.redact(clean) is clean and privacy.redact(clean) is clean
    for index in range(1500):  # 6 MB of distinct prompts: the memo starts over rather than grow
        privacy.redact(f"{index:05d} " + "x" * 4000)
        assert privacy._memo._chars <= memo._BUDGET_CHARS


def test_the_elizaos_profile_does_not_load_the_strict_rule_set() -> None:
    """Reading gitleaks' config and compiling its patterns was a fifth of the CLI's start: a build with
    `elizaos` redacts as before without them, and `strict` still loads them when asked."""

    code = """
import sys
from training_pipeline.privacy.filter import PrivacyFilter
trajectory = {"trajectoryId": "t", "steps": [{"llmCalls": [{"userPrompt": "key sk-" + "a" * 20}]}]}
PrivacyFilter("elizaos").apply(trajectory)
loaded = "training_pipeline.privacy.gitleaks"
print(trajectory["steps"][0]["llmCalls"][0]["userPrompt"], loaded in sys.modules)
print(len(PrivacyFilter("strict").rules.rules) > 200, loaded in sys.modules)
"""
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO)
    assert run.stdout.split("\n")[:2] == ["key <REDACTED:openai-key> False", "True True"]
