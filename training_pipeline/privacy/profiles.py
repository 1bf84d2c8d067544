"""Credential rules, one per family, grouped into the two privacy profiles.

Rules run one after another over the text (as elizaOS's do), each replacing what it matches with
`<REDACTED:label>` so a reader of a dataset can tell which rule fired. Every pattern is linear: bounded or
possessive-free single quantifiers, no nested repetition, so a 200,000-character prompt stays fast.
A rule's regex runs only on text that `prefilter.RuleGate` says it could match.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache, cached_property

from training_pipeline.jscompat import JS_WS_CLASS
from training_pipeline.privacy.credential_rule import _A, CredentialRule, Found, LazyPattern, literal_first
from training_pipeline.privacy.prefilter import RuleGate

_PEM_BEGIN = re.compile(r"-----BEGIN[ A-Z0-9_-]{0,100}PRIVATE KEY(?: BLOCK)?-----", re.ASCII)
_PEM_END = re.compile(r"-----END[ A-Z0-9_-]{0,100}PRIVATE KEY(?: BLOCK)?-----", re.ASCII)
#: With no END line: the base64 lines (and `Proc-Type: ...` headers) right after BEGIN, never prose.
_PEM_BODY = re.compile(
    r"(?:\r?\n(?:\r?\n)?(?:[A-Za-z][A-Za-z-]*: [^\r\n]*|[A-Za-z0-9+/=]+(?=\r?\n|\Z)))*", re.ASCII
)
_PEM_MAX_BODY = 65_536
_PEM_MIN_BODY = 16


class PrivateKeyBlocks(CredentialRule):
    """PEM private keys, from BEGIN to END (or, with no END, through the base64 that follows).

    A scan, not one regex: a lazy `BEGIN.*?END` is quadratic on text with many BEGINs and no END; here
    each END is looked up once and reused by the BEGINs before it, so the cost is linear.
    """

    def __init__(self) -> None:
        super().__init__("private-key", _PEM_BEGIN)

    def strict(self) -> CredentialRule:
        return self

    def redact(self, text: str, found: Found | None = None) -> tuple[str, int]:
        """A key block is found wherever it is, so nothing is added to `found`."""
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
            if end_match is not None and end_match.start() - begin.end() < _PEM_MIN_BODY:
                continue  # `BEGIN … anything … END`: a template, not a key
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


#: a cookie's name that says it holds a login (`sessionid`, `PHPSESSID`, `connect.sid`, `remember_token`)
_LOGIN_COOKIE = re.compile(r"sess|sid|auth|token|jwt|login|remember", re.IGNORECASE)
#: a cookie's value of a token's or a tracking id's shape: long, with a letter and a digit
_TOKEN_VALUE = re.compile(r"=(?=[^;\s\\]*[A-Za-z])(?=[^;\s\\]*\d)[^;\s\\]{12,}")


@dataclass(frozen=True, slots=True)
class CookieRule(CredentialRule):
    """A request's or a response's cookies (`Cookie: a=…; b=…`, `Set-Cookie: …`), every pair, where
    one is a login's by its name or any holds a token's or a tracking id's value: `Cookie: rocky=road`
    in the standard library's examples is nobody's."""

    def secret_span(self, match: re.Match[str], text: str) -> tuple[int, int] | None:
        span = CredentialRule.secret_span(self, match, text)
        if span is None:
            return None
        pairs = text[span[0] : span[1]]
        names = (pair.split("=", 1)[0] for pair in pairs.split(";"))
        if _TOKEN_VALUE.search(pairs) or any(_LOGIN_COOKIE.search(name) for name in names):
            return span
        return None


#: what says a URL is an OAuth redirect: its query's other keys, or its path's words
_OAUTH_REDIRECT = re.compile(
    r"[?&#](?:state|scope|session_state|iss|authuser|prompt)=|/(?:oauth2?|callback|authorize|signin|login)\b",
    re.IGNORECASE,
)


@dataclass(frozen=True, slots=True)
class OAuthCodeRule(CredentialRule):
    """An OAuth authorization code in the redirect that carries it (`/callback?code=…&state=…`): until
    it is exchanged, it is a token for the account that signed in. A `code=` in another URL (a country's,
    a promotion's) is not one."""

    def secret_span(self, match: re.Match[str], text: str) -> tuple[int, int] | None:
        span = CredentialRule.secret_span(self, match, text)
        if span is None:
            return None
        start = max(text.rfind(mark, 0, match.start()) for mark in " \t\n\"'<>(") + 1
        end = min(
            (i for i in (text.find(mark, span[1]) for mark in " \t\n\"'<>)") if i >= 0), default=len(text)
        )
        return span if _OAUTH_REDIRECT.search(text, start, end) else None


#: the path segment before a one-time link's token: a password reset, an e-mail's verification, an
#: account's activation, a sign-in ("magic") link, an invitation
_LINK_PURPOSE = (
    r"(?:reset[-_]?password|password[-_]?reset|reset|verify(?:[-_]?e-?mail)?|verification|"
    r"confirm(?:[-_]?e-?mail|ation)?|activate|activation|magic[-_]?link|(?:e-?mail[-_]?)?login|signin|"
    r"invite|invitation)"
)


@dataclass(frozen=True, slots=True)
class LinkTokenRule(CredentialRule):
    """A one-time link's token in the link's path (`/reset-password/9f8e…`, `/invite/aB3d…`): until it
    is used or expires, it signs in as the account it was sent to. Only a token's shape counts
    (`credential_shaped`): `/docs/reset-password/how-to-reset-it` is a page."""

    def secret_span(self, match: re.Match[str], text: str) -> tuple[int, int] | None:
        # here, not at the module's top: `token_shape` loads gitleaks' rules, which `elizaos` never needs
        from training_pipeline.privacy.token_shape import credential_shaped

        span = CredentialRule.secret_span(self, match, text)
        return span if span is not None and credential_shaped(match.group(self.group)) else None


def _rule(label: str, pattern: str, flags: int = 0, group: int = 0) -> CredentialRule:
    """Compiled when the gate first names the rule (`credential_rule.LazyPattern`), as gitleaks' rules are."""
    return CredentialRule(label, LazyPattern(literal_first(pattern), _A | flags), group)


# elizaOS app-training's five patterns, in its order; the `elizaos` profile is exactly these.
ELIZAOS_RULES: tuple[CredentialRule, ...] = (
    _rule("openai-key", r"\bsk-[A-Za-z0-9_-]{16,}\b"),
    _rule("anthropic-key", r"\bsk-ant-[A-Za-z0-9_-]{16,}\b"),
    _rule("bearer", rf"\bBearer[{JS_WS_CLASS}]+[A-Za-z0-9._-]{{16,}}\b"),
    _rule("github-token", r"\bghp_[A-Za-z0-9]{20,}\b"),
    _rule("aws-access-key", r"\bAKIA[0-9A-Z]{16}\b"),
)

_I = re.IGNORECASE
#: a PostgreSQL password file's line (`host:port:database:user:password`, `*` for any of the first four)
#: up to its user, its host named (a clock's `10:15:30:…` is no line of one); the account recognizer
#: reads the user after it
PGPASS_ENTRY = r"^[ \t]*[\w.*-]*[A-Za-z.*][\w.*-]*:(?:\d{1,5}|\*):[^:\s]+:"
#: The value after `password =` or `Authorization:` in code is often an expression, not a secret.
_NOT_A_CALL = r"(?![A-Za-z0-9_.]*[(\[])"
_AWS_PREFIXES = "A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AIPA|ANPA|ANVA|APKA|AROA|ASCA"

# What gitleaks' rule set does not cover, or covers with an expensive pattern: PEM and PuTTY private
# keys (a linear scan), passwords in URLs, AWS secret keys beside their name, npm's `_authToken`, Azure
# storage account keys, `Authorization`/`Bearer` values, and the keys of the services agents call.
_STRICT_OWN: tuple[CredentialRule, ...] = (
    PrivateKeyBlocks(),
    _rule("private-key", r"PuTTY-User-Key-File-\d:[^\n]*"),
    # `scheme://user:password@`. The pattern starts with the literal `://` (a scheme character checked
    # behind it), so `re` finds it by literal search; starting with the scheme's class, it was tried at
    # every letter of a prompt (the strict profile's slowest rule). `1://u:p@` counts too, and an empty
    # user (Redis' `redis://:password@host`).
    _rule("url-password", r"://(?<=[A-Za-z0-9+.-]://)[^\s/?#@:{}<>]{0,256}:([^\s/?#@{}]{1,256})@", group=1),
    _rule(
        "aws-secret-key",
        r"aws.{0,20}?(?:key|pwd|pw|password|pass|token|secret).{0,20}?['\"=: ]"
        r"([0-9a-zA-Z/+]{40})(?![0-9a-zA-Z/+])",
        _I,
        group=1,
    ),
    _rule("npm-token", r":_authToken=([^\s\"']{8,})", group=1),
    _rule("azure-storage-key", r"AccountKey=([a-zA-Z0-9+/=]{88})", group=1),
    _rule(
        "authorization-header",
        rf"\b(?:proxy-)?authorization[\"']?[{JS_WS_CLASS}]*[:=][{JS_WS_CLASS}]*[\"']?"
        rf"(?:[A-Za-z][A-Za-z-]{{1,20}}[{JS_WS_CLASS}]+)?{_NOT_A_CALL}([A-Za-z0-9._~+/=-]{{8,}})"
        # not a scheme whose credential an earlier rule redacted (`Api-Token <REDACTED:…>`)
        rf"(?![A-Za-z0-9._~+/=-]|[{JS_WS_CLASS}]+<REDACTED:)",
        _I,
        group=1,
    ),
    _rule("bearer", rf"\bBearer[{JS_WS_CLASS}]+([A-Za-z0-9._~+/-]{{16,}}=*)", _I, group=1),
    # a request's or a response's cookies (`Cookie: sessionid=…; csrftoken=…`, `Set-Cookie: auth=…`,
    # `"Cookie": "…"`): a browser's credentials and tracking ids, every pair of the header
    CookieRule(
        "cookie",
        LazyPattern(
            r"\bcookie[\"']?[ \t]*[:=][ \t]*[\"']?"
            r"([^\s\"'=;]{1,64}=[^\s\"';]{1,4096}(?:;[ \t]?[^\s\"';]{1,4096}){0,64})",
            _A | _I,
        ),
        group=1,
    ),
    # a password a command takes as an option: MySQL's and MariaDB's `-p` with the value attached
    # (`mysql -uroot -phunter2`), sshpass' `-p`, redis-cli's `-a`, the MongoDB shell's `-p`, a
    # registry login's (`docker login -u jdoe -p …`, podman's, helm's, oras'), and curl's `-u
    # user:password` (gitleaks' rule takes no `!` or `#` in an unquoted one)
    _rule(
        "command-password",
        r"\b(?:(?:mysql(?:dump|admin|import|check)?|mariadb(?:-dump|-admin)?)\b[^\n|;&]{0,200}?[ \t]-p"
        r"|(?:sshpass[ \t]+-p|redis-cli\b[^\n|;&]{0,200}?[ \t]-a"
        r"|mongo(?:sh)?\b[^\n|;&]{0,200}?[ \t](?:-p|--password(?:[ \t]+|=))"
        r"|(?:docker|podman|buildah|skopeo|nerdctl|oras|helm[ \t]+registry)[ \t]+login\b[^\n|;&]{0,200}?"
        r"[ \t](?:-p|--password)(?:[ \t]+|=)"
        r"|curl\b[^\n|;&]{0,200}?[ \t](?:-u|--user)(?:[ \t]+|=)[\"']?(?P<user>[^\s:\"'`<\[]{1,64}):"
        r"(?!(?P=user)(?:[\s'\"`]|$)))[ \t]*)"
        # not a variable, a placeholder's bracket or word, or the user's name again (`test:test`)
        r"(?![$\-<\[])(?!(?:pass(?:word)?|passwd|token|secret|x+|y+)(?:[\s'\"`;|&]|$))"
        r"([^\s'\"`;|&]{2,256})",
        group=2,  # after the curl user's (`user`)
    ),
    # a password Windows' `net use` takes after its account (`net use Z: \\fs\share /user:CORP\jdoe …`;
    # not `*`, which asks for it, or the next option)
    _rule(
        "command-password",
        r"\bnet[ \t]+use\b[^\n|;&]{0,200}?[ \t]/user:\S+[ \t]+(?![/*$%<\[])([^\s'\"`;|&]{2,256})",
        _I,
        group=1,
    ),
    # a signed URL's signature, which grants what the URL names until it expires: Azure's shared access
    # signature (`?sv=…&sig=…`), and any other service's `sig=`
    _rule("url-signature", r"[?&]sig=([A-Za-z0-9%+/=_-]{16,512})(?=[&#\s\"'<>]|$)", group=1),
    # an OAuth authorization code in the redirect that carries it (`OAuthCodeRule`); the literal first,
    # so `re` finds it by literal search
    OAuthCodeRule(
        "oauth-code",
        LazyPattern(r"code=(?<=[?&#]code=)([A-Za-z0-9._~%/+*-]{16,512})(?=[&#\s\"'<>]|$)", _A),
        group=1,
    ),
    # a one-time link's token in its path (`LinkTokenRule`); in its query, the proximity rule reads it
    LinkTokenRule(
        "link-token",
        LazyPattern(
            rf"/{_LINK_PURPOSE}s?/([A-Za-z0-9_~+=-]{{16,512}})(?=[/?#&\s\"'<>)\]]|$)", _A | re.IGNORECASE
        ),
        group=1,
    ),
    # a PostgreSQL password file's line's password (a `:` in it escaped)
    _rule("pgpass", rf"{PGPASS_ENTRY}[^:\s]+:((?:[^\s:\\]|\\.)+)[ \t]*$", re.MULTILINE, group=1),
    # the services agents call, whose keys an agent's environment and tool calls hold and neither
    # maintained set knows: tracing (LangSmith), retrieval (Pinecone), search (Tavily), crawling
    # (Firecrawl), sandboxes (E2B) and browsers (Browserbase)
    _rule("langsmith-key", r"\blsv2_(?:pt|sk)_[a-f0-9]{32}_[a-f0-9]{10}\b"),
    _rule("pinecone-key", r"\bpcsk_[A-Za-z0-9]{5,6}_[A-Za-z0-9]{63}\b"),
    _rule("tavily-key", r"\btvly-(?:dev-|prod-)?[A-Za-z0-9]{24,64}\b"),
    _rule("firecrawl-key", r"\bfc-[a-f0-9]{32}\b"),
    _rule("e2b-key", r"\be2b_[a-f0-9]{40}\b"),
    _rule("browserbase-key", r"\bbb_live_[A-Za-z0-9_-]{20,64}"),
)


@cache
def strict_rules() -> tuple[CredentialRule, ...]:
    """The strict profile: elizaOS's five (so it redacts all the `elizaos` profile does), our own above,
    every family of gitleaks' and Kingfisher's maintained rule sets, then any value whose key names a
    secret, then any credential-shaped token a credential word or a service's name is near. The first
    rule to match a credential names it.

    Built on first use: reading gitleaks' config and translating its few hundred patterns (each
    compiled when the gate first names its rule, `credential_rule.LazyPattern`) is still tens of milliseconds,
    which a process that filters with `elizaos` (or not at all) does not pay."""
    from training_pipeline.privacy import gitleaks, kingfisher, passwords
    from training_pipeline.privacy.keyed import KEYED_SECRET, KEYED_SPACED
    from training_pipeline.privacy.proximity import KEYWORD_PROXIMITY

    # two maintained sources: gitleaks' vendor families, then Kingfisher's service-named keys; each
    # vendor's own rule before the catch-all shapes of either set
    vendors = sorted(
        (*gitleaks.load_rules(), *kingfisher.load_rules()), key=lambda rule: rule.label.startswith("generic-")
    )
    return (
        # elizaOS checks `sk-` before `sk-ant-`; here the narrower shape goes first, so it names the key.
        # elizaOS's five redact what they match, placeholders too, so strict redacts all `elizaos` does.
        ELIZAOS_RULES[1],
        ELIZAOS_RULES[0],
        *ELIZAOS_RULES[2:],
        *(rule.strict() for rule in _STRICT_OWN),
        *vendors,
        KEYED_SECRET,
        KEYED_SPACED,
        passwords.QUOTED,
        passwords.ASSIGNED,
        passwords.CONFIG_LINE,
        passwords.SAID,
        passwords.POSITIONAL,
        KEYWORD_PROXIMITY,
    )


#: No rule matches, and no environment secret is, fewer characters than this.
MIN_SECRET_LENGTH = 8


class RuleSet:
    """A profile's rules, and which of them a text can trigger at all.

    Which rules apply is decided once per text, before any redaction: an earlier rule's
    `<REDACTED:...>` placeholder never completes a later rule's match. The rules are built and their gate
    compiled on first use, once per process.
    """

    def __init__(self, rules: Callable[[], tuple[CredentialRule, ...]]) -> None:
        self._build = rules
        self._gate: RuleGate | None = None

    @cached_property
    def rules(self) -> tuple[CredentialRule, ...]:
        return self._build()

    def applicable(self, text: str, data: bytes | None = None) -> list[CredentialRule]:
        """The rules `text` could trigger; `data`: its UTF-8, when the caller has it."""
        if len(text) < MIN_SECRET_LENGTH:
            return []
        gate = self._the_gate()
        found = gate.candidates(text) if data is None else gate.candidates_in(data)
        return [self.rules[index] for index in sorted(found)] if found else []

    def _the_gate(self) -> RuleGate:
        if self._gate is None:
            rules = self.rules
            self._gate = RuleGate(lambda: [rule.gate() for rule in rules], len(rules))
        return self._gate

    def build(self) -> None:
        """The rules and the gate built now, not on first use."""
        self._the_gate()


PROFILES: dict[str, RuleSet] = {"elizaos": RuleSet(lambda: ELIZAOS_RULES), "strict": RuleSet(strict_rules)}

#: Environment variable names whose values count as secrets (elizaOS's heuristic, case-insensitive).
SECRET_ENV_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|API|CREDENTIAL", re.IGNORECASE)
#: The strict profile also treats these names as secret-bearing.
STRICT_SECRET_ENV_NAME = re.compile(
    r"KEY|TOKEN|SECRET|PASSWORD|PASSWD|PASSPHRASE|API|CREDENTIAL|AUTH|PRIVATE|DSN", re.IGNORECASE
)
