"""Credential rules, one per family, grouped into the two privacy profiles.

Rules run one after another over the text (as elizaOS's do), each replacing what it matches with
`<REDACTED:label>` so a reader of a dataset can tell which rule fired. Every pattern is linear: bounded or
possessive-free single quantifiers, no nested repetition, so a 200,000-character prompt stays fast.
A rule's regex runs only on text that `prefilter.RuleGate` says it could match.
"""

from __future__ import annotations

import re

from training_pipeline.jscompat import JS_WS_CLASS
from training_pipeline.privacy import gitleaks
from training_pipeline.privacy.prefilter import RuleGate
from training_pipeline.privacy.rule import _A, CredentialRule, literal_first

_PEM_BEGIN = re.compile(r"-----BEGIN[ A-Z0-9_-]{0,100}PRIVATE KEY(?: BLOCK)?-----", re.ASCII)
_PEM_END = re.compile(r"-----END[ A-Z0-9_-]{0,100}PRIVATE KEY(?: BLOCK)?-----", re.ASCII)
#: With no END line: the base64 lines (and `Proc-Type: ...` headers) right after BEGIN, never prose.
_PEM_BODY = re.compile(
    r"(?:\r?\n(?:\r?\n)?(?:[A-Za-z][A-Za-z-]*: [^\r\n]*|[A-Za-z0-9+/=]+(?=\r?\n|\Z)))*", re.ASCII
)
_PEM_MAX_BODY = 65_536


class PrivateKeyBlocks(CredentialRule):
    """PEM private keys, from BEGIN to END (or, with no END, through the base64 that follows).

    A scan, not one regex: a lazy `BEGIN.*?END` is quadratic on text with many BEGINs and no END; here
    each END is looked up once and reused by the BEGINs before it, so the cost is linear.
    """

    def __init__(self) -> None:
        super().__init__("private-key", _PEM_BEGIN)

    def redact(self, text: str) -> tuple[str, int]:
        parts: list[str] = []
        position = hits = 0
        end_match: re.Match[str] | None = None
        no_end_after = len(text) + 1  # set once a search from some point finds no END at all
        for begin in _PEM_BEGIN.finditer(text):
            if begin.start() < position:
                continue
            if end_match is None or end_match.start() < begin.end():
                end_match = None if begin.end() >= no_end_after else _PEM_END.search(text, begin.end())
                if end_match is None:
                    no_end_after = min(no_end_after, begin.end())
            if end_match is not None and end_match.start() - begin.end() <= _PEM_MAX_BODY:
                stop = end_match.end()
            else:
                stop = _PEM_BODY.match(text, begin.end(), begin.end() + _PEM_MAX_BODY).end()
            parts += (text[position : begin.start()], f"<REDACTED:{self.label}>")
            position, hits = stop, hits + 1
        if not hits:
            return text, 0
        parts.append(text[position:])
        return "".join(parts), hits


def _rule(label: str, pattern: str, flags: int = 0, group: int = 0) -> CredentialRule:
    return CredentialRule(label, re.compile(literal_first(pattern), _A | flags), group)


# elizaOS app-training's five patterns, in its order; the `elizaos` profile is exactly these.
ELIZAOS_RULES: tuple[CredentialRule, ...] = (
    _rule("openai-key", r"\bsk-[A-Za-z0-9_-]{16,}\b"),
    _rule("anthropic-key", r"\bsk-ant-[A-Za-z0-9_-]{16,}\b"),
    _rule("bearer", rf"\bBearer[{JS_WS_CLASS}]+[A-Za-z0-9._-]{{16,}}\b"),
    _rule("github-token", r"\bghp_[A-Za-z0-9]{20,}\b"),
    _rule("aws-access-key", r"\bAKIA[0-9A-Z]{16}\b"),
)

_I = re.IGNORECASE
#: The value after `password =` or `Authorization:` in code is often an expression, not a secret.
_NOT_A_CALL = r"(?![A-Za-z0-9_.]*[(\[])"
_AWS_PREFIXES = "A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AIPA|ANPA|ANVA|APKA|AROA|ASCA"

# The families gitleaks' and detect-secrets' default rules know. Order matters: multi-part and more
# specific shapes first, so a key inside a URL or header gets its own label.
_STRICT_EXTRA: tuple[CredentialRule, ...] = (
    PrivateKeyBlocks(),
    _rule("private-key", r"PuTTY-User-Key-File-\d:[^\n]*"),
    _rule(
        "url-password",
        r"[A-Za-z][A-Za-z0-9+.-]{0,31}://[^\s/?#@:{}]{1,256}:([^\s/?#@{}]{1,256})@",
        group=1,
    ),
    _rule(
        "slack-webhook",
        r"https://hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9+/_-]{8,}",
    ),
    _rule("anthropic-key", r"\bsk-ant-[A-Za-z0-9_-]{16,}"),
    _rule("openai-key", r"\bsk-[A-Za-z0-9_-]{16,}"),
    _rule("github-token", r"\b(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9_]{20,}"),
    _rule("github-token", r"\bgithub_pat_[A-Za-z0-9_]{22,}"),
    _rule(
        "gitlab-token",
        r"\b(?:glpat|gldt|glft|glsoat|glrt|glcbt|glimt|glptt|glagent|gloas)-[A-Za-z0-9_-]{20,1024}",
    ),
    _rule("gitlab-token", r"\bGR1348941[A-Za-z0-9_-]{20,}"),
    _rule("aws-access-key", rf"\b(?:{_AWS_PREFIXES})[0-9A-Z]{{16}}"),
    _rule(
        "aws-secret-key",
        r"aws.{0,20}?(?:key|pwd|pw|password|pass|token|secret).{0,20}?['\"=: ]"
        r"([0-9a-zA-Z/+]{40})(?![0-9a-zA-Z/+])",
        _I,
        group=1,
    ),
    _rule("stripe-key", r"\b(?:sk|rk)_(?:live|test)_[0-9a-zA-Z]{10,}"),
    _rule("stripe-webhook-secret", r"\bwhsec_[A-Za-z0-9+/=]{24,}"),
    _rule("slack-token", r"\bxox[abposre]-[A-Za-z0-9-]{10,}", _I),
    _rule("slack-token", r"\bxapp-\d-[A-Za-z0-9-]{10,}"),
    _rule("google-api-key", r"\bAIza[0-9A-Za-z_-]{35}"),
    _rule("google-oauth-secret", r"\bGOCSPX-[A-Za-z0-9_-]{28}"),
    _rule("huggingface-token", r"\b(?:hf_|api_org_)[A-Za-z0-9]{30,}"),
    _rule("npm-token", r"\bnpm_[A-Za-z0-9]{36,}"),
    _rule("npm-token", r":_authToken=[^\s\"']{8,}"),
    _rule("pypi-token", r"\bpypi-AgE[A-Za-z0-9_-]{50,}"),
    _rule("sendgrid-key", r"\bSG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}"),
    _rule("twilio-key", r"(?:AC|SK)[a-z0-9]{32}"),
    _rule("jwt", r"\beyJ[A-Za-z0-9_=-]{4,}\.[A-Za-z0-9_=-]{4,}\.?[A-Za-z0-9_.+/=-]*"),
    _rule("discord-bot-token", r"\b[MNO][A-Za-z0-9_-]{23,25}\.[A-Za-z0-9_-]{6}\.[A-Za-z0-9_-]{27,}"),
    _rule("telegram-bot-token", r"\d{8,10}:[0-9A-Za-z_-]{35}"),
    _rule("mailchimp-key", r"[0-9a-z]{32}-us[0-9]{1,2}"),
    _rule("square-secret", r"\bsq0(?:csp|atp)-[0-9A-Za-z\\_-]{22,43}"),
    _rule("azure-storage-key", r"AccountKey=[a-zA-Z0-9+/=]{88}"),
    # not after a letter or digit; the lookbehind follows the literal so `re` can search for the literal
    _rule("artifactory-token", r"AKC(?<![A-Za-z0-9]AKC)[a-zA-Z0-9]{10,}"),
    _rule("artifactory-token", r"AP(?<![A-Za-z0-9]AP)[0-9A-F][a-zA-Z0-9]{8,}(?![A-Za-z0-9])"),
    _rule(
        "authorization-header",
        rf"\b(?:proxy-)?authorization[\"']?[{JS_WS_CLASS}]*[:=][{JS_WS_CLASS}]*[\"']?"
        rf"(?:(?:bearer|basic|token|digest|apikey)[{JS_WS_CLASS}]+)?{_NOT_A_CALL}([A-Za-z0-9._~+/=-]{{8,}})",
        _I,
        group=1,
    ),
    _rule("bearer", rf"\bBearer[{JS_WS_CLASS}]+[A-Za-z0-9._~+/-]{{16,}}=*", _I),
    _rule(
        "secret-assignment",
        r"\b(?:api[_-]?key|apikey|secret[_-]?key|client[_-]?secret|access[_-]?token|auth[_-]?token"
        r"|password|passwd|pwd)[\"']?[ \t]{0,4}[:=][ \t]{0,4}[\"']?"
        rf"{_NOT_A_CALL}(?=[^\s\"',;<>()]*[0-9!@#$%^&*+=/?~])([^\s\"',;<>()]{{8,}})",
        _I,
        group=1,
    ),
)

#: The hand-kept families above (elizaOS's and the shapes they label precisely) first, then every family
#: of gitleaks' maintained rule set, for what those miss.
STRICT_RULES: tuple[CredentialRule, ...] = _STRICT_EXTRA + gitleaks.load_rules()

#: No rule matches, and no environment secret is, fewer characters than this.
MIN_SECRET_LENGTH = 8


class RuleSet:
    """A profile's rules, and which of them a text can trigger at all.

    Which rules apply is decided once per text, before any redaction: an earlier rule's
    `<REDACTED:...>` placeholder never completes a later rule's match. The gate is compiled on first use,
    once per process.
    """

    def __init__(self, rules: tuple[CredentialRule, ...]) -> None:
        self.rules = rules
        self._gate: RuleGate | None = None

    def applicable(self, text: str) -> list[CredentialRule]:
        if len(text) < MIN_SECRET_LENGTH:
            return []
        if self._gate is None:
            self._gate = RuleGate([rule.pattern for rule in self.rules])
        found = self._gate.candidates(text)
        return [rule for index, rule in enumerate(self.rules) if index in found] if found else []


PROFILES: dict[str, RuleSet] = {"elizaos": RuleSet(ELIZAOS_RULES), "strict": RuleSet(STRICT_RULES)}

#: Environment variable names whose values count as secrets (elizaOS's heuristic, case-insensitive).
SECRET_ENV_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|API|CREDENTIAL", re.IGNORECASE)
#: The strict profile also treats these names as secret-bearing.
STRICT_SECRET_ENV_NAME = re.compile(
    r"KEY|TOKEN|SECRET|PASSWORD|PASSWD|PASSPHRASE|API|CREDENTIAL|AUTH|PRIVATE|DSN", re.IGNORECASE
)
