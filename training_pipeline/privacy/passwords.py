"""Passwords people choose, wherever they are written: a short word or a phrase (`hunter2`, `1234`,
`correct horse battery staple`) that no test of length or randomness tells from prose, found by what
says it is a password: a field's key (an object's, a quoted JSON field's, a config file's line, an
assignment, a command's option, a connection string's), a login's arguments in code, a sentence that
says so. The keyed rule (`keyed`) finds the random values a secret's key holds; these rules find
what it leaves, with the same label, `keyed-secret`."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from training_pipeline.privacy.credential_rule import CredentialRule, LazyPattern, is_placeholder
from training_pipeline.privacy.token_shape import KEY_WORD, PLACEHOLDER_VALUE, is_reference

__all__ = [
    "ASSIGNED",
    "CONFIG_LINE",
    "POSITIONAL",
    "QUOTED",
    "SAID",
    "PasswordFieldRule",
    "chosen_password",
    "password_key",
]

#: what a reader of a dataset sees where a password was
LABEL = "keyed-secret"

#: the last word of a key whose value a person chose
_PASSWORD_WORDS = {"password", "passwd", "pwd", "passphrase"}
#: what a password's field holds when it holds none: a type, a state, a setting's switch
#: (`PuttyPassword=0`, `SavePassword=yes`); `password` and `secret` are people's passwords too
_NOT_A_PASSWORD = {
    "string",
    "str",
    "required",
    "optional",
    "hidden",
    "yes",
    "no",
    "on",
    "off",
}


#: the word before a key's `pass` when the key holds a password: an account's or a service's (`db_pass`,
#: `smtpPass`, `$admin_pass`, `dbpass`); another `pass` is a render's, a test's or a boarding pass,
#: and nginx's `proxy_pass` a URL
_ACCOUNTS = """
    db database sql mysql pg postgres mongo redis ldap smtp mail email imap pop ftp sftp ssh user admin
    root login account wifi vpn amqp rabbit rabbitmq sasl bind
    """
_ACCOUNT_WORDS = frozenset(_ACCOUNTS.split())


@lru_cache(maxsize=4096)  # an object's keys come back in every trajectory
def password_key(key: str) -> bool:
    """Whether a key's last word names a password (or ends with its name, `PGPASSWORD`), or an
    environment variable's `_PASS` does (`DB_PASS`, `SMTP_PASS`), or an account's `pass` (`db_pass`,
    `userPass`, `dbpass`: a lower-case `pass` is as often a pass of something, `first_pass`); the
    shell's `PWD` is its working directory."""
    words = KEY_WORD.findall(key)
    if not words or key == "PWD":
        return False
    last = words[-1].lower()
    if last in _PASSWORD_WORDS or last.endswith(("password", "passwd")):  # `PGPASSWORD`, `newpassword`
        return True
    if key.isupper() and key.endswith("_PASS"):
        return True
    if last == "pass":
        return len(words) > 1 and words[-2].lower() in _ACCOUNT_WORDS
    return last.endswith("pass") and last[:-4] in _ACCOUNT_WORDS


#: the name of a variable that holds a login's other part (`userpass = username`): a value that is one
#: of these whole is code's, where a password such as `user123` is not
_LOGIN_NAMES = {"user", "username", "user_name", "userid", "user_id", "login"}
#: after an unquoted value: more code (a call's next argument or its end, a tuple's next item, a
#: chained assignment), where a bare word is a variable
_CODE_AFTER = re.compile(r"[ \t]*[,)=]")


def _code_variable(key: str, value: str, text: str, start: int, end: int) -> bool:
    """Whether an unquoted value set under a password's key (at `start`; the value ends at `end`) is
    code's variable, not a password: a reference (`self.password`), a name that says it holds one or a
    login's other part (`passwd`, `password_mgr`, `username`), an argument or a tuple's item
    (`connect(password=pw)`, `user, password = credentials`), or what an object's attribute is set to
    (`self.password = credentials`). A `.env` file, a command and a connection string write none of
    these."""
    return (
        is_reference(value)
        or any(word.lower() in _PASSWORD_WORDS for word in KEY_WORD.findall(value))
        or value.lower() in _LOGIN_NAMES
        or _CODE_AFTER.match(text, end) is not None
        or text[max(0, start - 8) : start].rstrip(" \t").endswith(",")
        or key.lower().startswith(("self.", "this.", "cls."))
    )


def _said_password(value: str, word: str, quoted: bool = False, owned: bool = False) -> bool:
    """Whether a token said (after `word`) to be a password in prose is one, not the sentence going on
    (`my password is incorrect`, `is 12 characters long`, code's `is self.password`): five characters
    or more with a digit or a symbol beside a letter, or five digits (`hunter2`, `P@ss!word`,
    `123456`); a PIN's or a passcode's four digits (`My PIN is 4821`). Quoted (`the password is
    'dragon'`), or said as someone's or as the one (`my password is letmein`, `the password is
    letmein`), a word of letters is one too, unless it is one a sentence about a password goes on with
    (`incorrect`, `expired`, `different`, `given`)."""
    if is_reference(value):
        return False
    if value.isdigit():
        return len(value) >= (4 if word.lower().replace(" ", "") in ("pin", "passcode") else 5)
    letters = any(c.isalpha() for c in value)
    digits = sum(c.isdigit() for c in value)
    symbols = any(not c.isalnum() and c not in "-'" for c in value)
    if len(value) >= (4 if owned else 5) and letters and (digits > 0 or symbols):
        return True  # (said as someone's or as the one, four will do: `my password is abc1`)
    lowered = value.lower()
    if lowered in _SAID_OF_A_PASSWORD or lowered.endswith(_SAID_ENDINGS):
        return False
    return (quoted and len(value) >= 3) or (owned and len(value) >= 5 and value.isalpha())


#: what a sentence about a password goes on with, which no one's password is taken for
_SAID_WORDS = """
    incorrect wrong invalid correct right fine weak strong required missing empty blank secure insecure
    safe unsafe simple complex short long too not still already here there somewhere nowhere below above
    attached enclosed following hidden visible unknown unset none null working broken locked
    compromised gone lost stuck old new default temporary same different ignored optional mandatory
    case sensitive also now just really always never being what which that this the your their mine
    ours yours easy hard good bad great okay over under then reset valid random unique plaintext
    cleartext longer shorter stronger weaker better worse about after before within inside either
    neither something anything whatever given known taken written chosen shown stolen forgotten spoken
    """
_SAID_OF_A_PASSWORD = frozenset(_SAID_WORDS.split())
#: endings of the words a sentence goes on with (`expired`, `working`, `easily`, `guessable`)
_SAID_ENDINGS = ("ed", "ing", "ly", "able", "ible", "ive", "ous", "ful", "less", "ent", "ant")


@lru_cache(maxsize=1024)
def chosen_password(value: str) -> bool:
    """Whether a value under a password's key (`{"username": "bob", "password": "hunter2"}`, a login
    tool's arguments) is one. People choose short words and phrases (`hunter2`, `correct horse battery
    staple`) that no test of length or randomness tells from prose, but an object's field, a quoted
    field or a config file's line says what it holds, as prose's `the password: …` does not: anything
    but a mask, a placeholder, a type or a switch (one character, `yes`, `off`) is one."""
    stripped = value.strip()
    return (
        len(stripped) > 1
        and not is_placeholder(stripped)
        and PLACEHOLDER_VALUE.search(stripped) is None
        and stripped.lower() not in _NOT_A_PASSWORD
        and stripped.strip("*•") != ""
    )


#: a key that may name a password (`password_key` decides): its run of key characters up to the word
_PASSWORD_KEY = r"(?P<key>[A-Za-z0-9_.-]{0,40}?(?:password|passwd|pwd|passphrase|pass))"
#: a password's field written out in a text, JSON's or a Python dict's (`"password": "hunter2"`), both
#: quoted: the value is whole whatever it holds, spaces too, and the other quote (`"it's mine"`)
_QUOTED = LazyPattern(
    rf"[\"']{_PASSWORD_KEY}[\"'][ \t]{{0,4}}:[ \t]{{0,4}}"
    r"(?P<quote>[\"'])(?P<value>(?:(?!(?P=quote))[^\\\r\n]){1,256})(?P=quote)",
    re.IGNORECASE | re.ASCII,
)
#: a value as a password's field sets it: quoted, whole (the other quote too); unquoted, one whole
#: token with no bracket or separator, so a call, a subscript or a type annotation is not taken
#: (`password = getpass()`)
_SET_VALUE = (
    r"(?:(?P<quote>[\"'])(?P<value>(?:(?!(?P=quote))[^\r\n]){1,256})(?P=quote)"
    r"|(?P<bare>[^\s\"'#()\[\]{}<>,;&|`]{1,256})(?=[\s\"'#)\]{}<>,;&|`]|$))"
)
#: a password set with `=` wherever it is: a `.env` file's line, a shell's `PGPASSWORD=… psql`, a
#: command's `--password=…`, a connection string's `Password=…;`, libpq's `password=… dbname=…`, a
#: keyword argument or a subscript in code (`password="s3cr3t"`, `os.environ["DB_PASSWORD"] = "…"`)
_ASSIGNED = LazyPattern(
    rf"(?<![A-Za-z0-9_.-])(?:--)?{_PASSWORD_KEY}(?:[\"']\])?[ \t]*=[ \t]*{_SET_VALUE}",
    re.IGNORECASE | re.ASCII,
)
#: a config's line that sets a password with `:`, YAML's or a JavaScript object's, a line of its own as
#: an agent's `cat` of the file shows it (`  password: hunter2`, `password: "s3cr3t",`); not prose's
#: `Password: Forgot password?`
_CONFIG_LINE = LazyPattern(
    rf"^[ \t]*(?:-[ \t]+)?{_PASSWORD_KEY}[ \t]*:[ \t]*{_SET_VALUE}[ \t]*,?[ \t]*(?:(?:#|//)[^\r\n]*)?$",
    re.IGNORECASE | re.ASCII | re.MULTILINE,
)
#: a password said in prose (`my password is hunter2`, `the passphrase was "Tr0ub4dor!"`, a line's
#: `Username: jdoe Password: hunter22`): one token,
#: which must look like no word of the sentence (`_said_password`), unless it is quoted or said as
#: someone's or as the one (`my wifi password is letmein`, `the default password is admin`, `your
#: password is: sunshine`)
_SAID = LazyPattern(
    r"(?:(?<![A-Za-z0-9_.-])(?P<owner>my|our|your|his|her|their|the)[ \t]+(?:[A-Za-z-]{1,20}[ \t]+)?)?"
    r"(?<![A-Za-z0-9_.-])(?P<word>password|passwd|passphrase|pass ?code|pin)"
    r"(?:[ \t]+(?:is|was):?|[ \t]*(?P<colon>:))[ \t]+"
    r"(?P<quote>[\"'“‘`])?(?P<value>[^\s\"'”’`]{3,255}?[^\s\"'”’`.,;:!?)])[\"'”’`]?(?=[.,;:!?)]*(?:\s|$))",
    re.IGNORECASE,
)
#: what a labelled password (`Password: …`) never holds but code after a `:` does
_CODE_TOKEN = re.compile(r"[()\[\]{}<>]")
#: after an annotation's type: a union's next type or the default
_TYPE_AFTER = re.compile(r"[ \t]*[|=]")
#: a password passed to a login by position, in code: requests' and aiohttp's `auth=("bob", "…")`,
#: `HTTPBasicAuth("bob", "…")`, smtplib's, imaplib's and ftplib's `.login("bob", "…")`
_POSITIONAL = LazyPattern(
    r"(?:\bauth[ \t]*=[ \t]*\(|\b(?:HTTPBasicAuth|HTTPDigestAuth|BasicAuth)\(|\.login\()[ \t]*"
    r"[\"'][^\"'\r\n]{0,256}[\"'][ \t]*,[ \t]*[\"'](?P<value>[^\"'\r\n]{1,256})[\"']",
)


@dataclass(frozen=True, slots=True)
class PasswordFieldRule(CredentialRule):
    """A password's field written out in a text (a prompt that shows a login tool's arguments, an
    agent's `cat .env`): a value that is one by `chosen_password`, which the keyed rule's tests of
    length and randomness leave (`"password": "hunter2"`, `DB_PASSWORD=hunter2`); unquoted, not code's
    variable (`_code_variable`).

    With no key (`_POSITIONAL`) the form alone says it is a password."""

    #: said in prose (`_SAID`): the value must also look like no word
    said: bool = False

    def secret_span(self, match: re.Match[str], text: str) -> tuple[int, int] | None:
        groups = match.groupdict()
        group = "value" if groups["value"] is not None else "bare"
        value, key = groups[group], groups.get("key")
        if not chosen_password(value) or (key is not None and not password_key(key)):
            return None
        if group == "bare" and _code_variable(key or "", value, text, match.start(), match.end("bare")):
            return None
        # after a label's colon a sentence may go on ("On resetting my password: passwords are…"): a word
        # of letters is taken only when said (`is`, `was`) as someone's
        if self.said and not _said_password(
            value,
            groups["word"],
            groups["quote"] is not None,
            groups["owner"] is not None and not groups["colon"],
        ):
            return None
        if groups.get("colon") and (_CODE_TOKEN.search(value) or _TYPE_AFTER.match(text, match.end(group))):
            return None  # a label's value, not code's annotation (`password: Optional[str]`, `: T | None`)
        return match.span(group)


#: a quoted field's (`"password": "hunter2"`), an assignment's (`DB_PASSWORD=…`, `--password=…`,
#: `Password=…;`), a config line's (`  password: …`), a sentence's (`my password is …`) and a login's
#: in code (`auth=("bob", "…")`), in the strict profile's order
QUOTED = PasswordFieldRule(LABEL, _QUOTED)
ASSIGNED = PasswordFieldRule(LABEL, _ASSIGNED)
CONFIG_LINE = PasswordFieldRule(LABEL, _CONFIG_LINE)
SAID = PasswordFieldRule(LABEL, _SAID, said=True)
POSITIONAL = PasswordFieldRule(LABEL, _POSITIONAL)
