"""Make the personal-data corpus: people's data as agents' users write it, and text that only looks like it.

    python bench/build_personal_corpus.py [--out bench/data/personal_corpus.jsonl] [--per-kind N]

Values come from Faker (a maintained fake-data library) in eleven locales; each is put in four contexts
an agent meets (a chat line, a JSON payload a tool returned, an email signature, a support ticket), and
e-mail addresses and phone numbers in an id (`session-+14155550123-2`) and percent-escaped in a URL. A
record is `{"kind", "locale", "context", "text", "values"}`: every string in `values` is personal data the
strict profile must not let through. Near misses (`kind` starting `near-miss:`) hold `keep`: strings that
are nobody's data (versions, order and ticket numbers, timestamps, UUIDs, hashes, prices, code,
documentation placeholders, run and build ids, URLs and git remotes) and must come out unchanged.

Seeded: the same command writes the same file. `tests/unit/test_personal_data.py` and
`bench/personal_coverage.py` read it.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
from collections.abc import Callable, Iterator
from datetime import date
from pathlib import Path
from urllib.parse import quote

import phonenumbers
from faker import Faker

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "bench" / "data" / "personal_corpus.jsonl"
LOCALES = ("en_US", "en_GB", "de_DE", "fr_FR", "es_ES", "it_IT", "nl_NL", "pl_PL", "pt_BR", "sv_SE", "en_IN")
_B58 = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"


def _bitcoin(rng: random.Random) -> str:
    """A pay-to-pubkey-hash address with a valid checksum (Faker makes none)."""
    payload = bytes([0]) + rng.randbytes(20)
    raw = payload + hashlib.sha256(hashlib.sha256(payload).digest()).digest()[:4]
    number = int.from_bytes(raw, "big")
    out = ""
    while number:
        number, digit = divmod(number, 58)
        out = _B58[digit] + out
    return "1" * (len(raw) - len(raw.lstrip(b"\0"))) + out


def _national_id(fake: Faker, locale: str) -> tuple[str, str] | None:
    """(label as people write it, value) of the locale's personal id, where Presidio knows the country."""
    if locale == "en_US":
        return "SSN", fake.ssn()
    if locale == "es_ES":
        return ("DNI", fake.nif()) if fake.random.random() < 0.5 else ("NIE", fake.nie())
    if locale == "it_IT":
        return "codice fiscale", fake.ssn()
    if locale == "pl_PL":
        return "PESEL", fake.pesel()
    if locale == "sv_SE":
        return "personnummer", fake.ssn()
    if locale == "en_IN":
        return "Aadhaar", fake.aadhaar_id()
    return None


def _values(fake: Faker, locale: str, rng: random.Random) -> dict[str, list[tuple[str, str]]]:
    """kind -> (how the value is introduced, value) options for one person."""
    # between fixed dates (Faker's `date_of_birth` counts from today: the file would change each day)
    dob = fake.date_between_dates(date(1936, 1, 1), date(2008, 12, 31))
    values: dict[str, list[tuple[str, str]]] = {
        "EMAIL_ADDRESS": [("email", fake.email())],
        "PHONE_NUMBER": [("phone", fake.phone_number())],
        "CREDIT_CARD": [
            ("card", fake.credit_card_number(card_type=rng.choice(["visa16", "mastercard", "amex"])))
        ],
        "IBAN_CODE": [("IBAN", fake.iban())],
        "IP_ADDRESS": [("IP", fake.ipv4_public())],
        "STREET_ADDRESS": [("address", fake.street_address().replace("\n", ", "))],
        "DATE_OF_BIRTH": [
            (
                "date of birth",
                rng.choice([dob.isoformat(), dob.strftime("%d.%m.%Y"), dob.strftime("%B %d, %Y")]),
            )
        ],
        "PASSPORT": [("passport number", fake.passport_number())],
        "CRYPTO": [("bitcoin wallet", _bitcoin(rng)), ("ETH address", "0x" + rng.randbytes(20).hex())],
    }
    national = _national_id(fake, locale)
    if national is not None:
        values["NATIONAL_ID"] = [national]
    return values


def _contexts(name: str, label: str, value: str, rng: random.Random) -> dict[str, tuple[str, list[str]]]:
    """context -> (text, values that must not survive): the person's name is in some of them too."""
    ticket = rng.randint(10000, 99999)
    return {
        "chat": (
            rng.choice(
                [
                    f"hey, my {label} is {value} if you need it for the booking",
                    f"sure, {label}: {value}",
                    f"Can you update my {label} to {value}? thanks",
                ]
            ),
            [value],
        ),
        "json": (
            json.dumps(
                {"customer": {"full_name": name, label.replace(" ", "_").lower(): value}}, ensure_ascii=False
            ),
            [name, value],
        ),
        "signature": (
            f"Thanks for the quick fix!\n\nBest regards,\n{name}\n{label.capitalize()}: {value}",
            [name, value],
        ),
        "ticket": (
            f"Ticket #{ticket} (priority P2)\nCustomer: {name}\n"
            "Issue: cannot log in after the 2.14.1 update.\n"
            f"Customer's {label}: {value}\nAgent note: verified the account, escalated to tier 2.",
            [name, value],
        ),
    }


_NEAR_MISSES: dict[str, Callable[[random.Random], tuple[str, list[str]]]] = {}


def _near_miss(kind: str) -> Callable[[Callable[[random.Random], tuple[str, list[str]]]], Callable]:
    def register(make: Callable[[random.Random], tuple[str, list[str]]]) -> Callable:
        _NEAR_MISSES[kind] = make
        return make

    return register


@_near_miss("version")
def _version(rng: random.Random) -> tuple[str, list[str]]:
    v = f"{rng.randint(1, 30)}.{rng.randint(0, 40)}.{rng.randint(0, 200)}"
    four = f"{rng.randint(1, 9)}.{rng.randint(0, 9)}.{rng.randint(0, 9)}.{rng.randint(1, 9999)}"
    return f"upgraded the client to v{v} (build {four}); version {four} fixed the leak", [v, four]


@_near_miss("order-number")
def _order(rng: random.Random) -> tuple[str, list[str]]:
    a = f"{rng.randint(100, 999)}-{rng.randint(1000000, 9999999)}-{rng.randint(1000000, 9999999)}"
    b = str(rng.randint(10**8, 10**10))
    return f"order {a} shipped; order #{b} is still pending", [a, b]


@_near_miss("ticket-number")
def _ticket(rng: random.Random) -> tuple[str, list[str]]:
    a, b = str(rng.randint(10**5, 10**9)), f"JIRA-{rng.randint(100, 99999)}"
    return f"see ticket #{a} and {b} for the history", [a, b]


@_near_miss("timestamp")
def _timestamp(rng: random.Random) -> tuple[str, list[str]]:
    epoch = rng.randint(1_600_000_000, 1_800_000_000)
    day = f"2026-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"
    iso = f"{day}T{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:00Z"
    ms = str(epoch * 1000 + rng.randint(0, 999))
    return f'{{"created_at": "{iso}", "ts": {epoch}, "ts_ms": {ms}}}', [iso, str(epoch), ms]


@_near_miss("uuid")
def _uuid(rng: random.Random) -> tuple[str, list[str]]:
    u = "-".join(rng.randbytes(n).hex() for n in (4, 2, 2, 2, 6))
    return f"request {u} failed with 502", [u]


@_near_miss("hash")
def _hash(rng: random.Random) -> tuple[str, list[str]]:
    sha1, sha256 = rng.randbytes(20).hex(), rng.randbytes(32).hex()
    return f"commit {sha1}\nsha256: {sha256}", [sha1, sha256]


@_near_miss("price")
def _price(rng: random.Random) -> tuple[str, list[str]]:
    a = f"${rng.randint(1, 99)},{rng.randint(100, 999)}.{rng.randint(0, 99):02d}"
    b = f"{rng.randint(1000, 999999):,}".replace(",", ".") + f",{rng.randint(0, 99):02d} €"
    return f"the plan costs {a} a year, or {b} in Europe", [a, b]


@_near_miss("code")
def _code(rng: random.Random) -> tuple[str, list[str]]:
    n, m = rng.randint(10**6, 10**9), rng.randint(10**6, 10**9)
    code = f"for i in range({n}):\n    total += i * {m} % 1000000007"
    return f"```python\n{code}\n```", [code]


@_near_miss("placeholder")
def _placeholder(rng: random.Random) -> tuple[str, list[str]]:
    options = [
        "Set EMAIL=<your-email> and PHONE=+1-XXX-XXX-XXXX in .env",
        "curl -H 'X-User: {{user_email}}' http://192.0.2.10/api",
        "Use 2001:db8::1 or 10.0.0.12 for the test network",
        "Dear Customer, your request has been received.",
        "Hi Team, the deploy is done. Best,\nThe Support Team",
        "My name is not important, I just need the report.",
    ]
    text = rng.choice(options)
    return text, [text]


@_near_miss("measurement")
def _measurement(rng: random.Random) -> tuple[str, list[str]]:
    a = f"{rng.randint(1000, 99999)} ms"
    b = f"{rng.randint(10, 999)}.{rng.randint(100, 999)} MB"
    c = f"{rng.randint(100000, 9999999)} tokens"
    return f"p99 latency {a}, memory {b}, {c} processed", [a, b, c]


@_near_miss("url")
def _url(rng: random.Random) -> tuple[str, list[str]]:
    """URLs and remotes with escapes and `@` that hold nobody's data."""
    search = f"https://shop.example.com/search?q={rng.randint(10, 90)}%25%20off&page={rng.randint(2, 9)}"
    package = rng.choice(["%40babel%2Fcore", "%40types%2Fnode", "%40angular%2Fcli"])
    remote = f"git@github.com:org-{rng.randint(1, 99)}/repo.git"
    return f"{search} https://registry.npmjs.org/{package} {remote}", [search, package, remote]


@_near_miss("id")
def _run_id(rng: random.Random) -> tuple[str, list[str]]:
    day = f"2026{rng.randint(1, 12):02d}{rng.randint(1, 28):02d}"
    run = f"run-{day}-{rng.randint(0, 999999):06d}"
    version = f"{rng.randint(1, 9)}.{rng.randint(0, 30)}.{rng.randint(0, 99)}"
    build = f"build-{version}+{day}{rng.randint(0, 235959):06d}"
    job = f"job_{rng.randint(1_600_000_000_000, 1_800_000_000_000)}_{rng.randint(1, 99)}"
    order = f"order-{rng.randint(10**9, 10**10 - 1)}"
    first = rng.choice([run, build])
    return f"{first} {job} {order}", [first, job, order]


def _e164(fake: Faker, locale: str) -> str | None:
    """One of the locale's phone numbers as dialled with its country code, when libphonenumber finds one
    valid in a few draws (Faker's are not all valid)."""
    for _ in range(10):
        try:
            number = phonenumbers.parse(fake.phone_number(), locale.split("_")[1])
        except phonenumbers.NumberParseException:
            continue
        if phonenumbers.is_valid_number(number):
            return phonenumbers.format_number(number, phonenumbers.PhoneNumberFormat.E164)
    return None


def _ids(per_kind: int, seed: int) -> Iterator[dict[str, object]]:
    """People's addresses and numbers in ids, as messaging platforms and agent frameworks make them
    (`session-+14155550123-2`, `run-jane.doe@example.com-1`): with their own random source, so the
    records before them stay as they were."""
    rng = random.Random(seed + 1)
    for index in range(per_kind):
        locale = LOCALES[index % len(LOCALES)]
        fake = Faker(locale)
        fake.seed_instance(seed + 1 + index)
        prefix = rng.choice(["session", "run", "conv", "chat", "user", "thread", "whatsapp", "sms"])
        for kind, value in (("EMAIL_ADDRESS", fake.email()), ("PHONE_NUMBER", _e164(fake, locale))):
            if value is None:
                continue
            counter = rng.randint(1, 99)
            text = rng.choice(
                [
                    f"{prefix}-{value}-{counter}",
                    f"{prefix}_{value}",
                    f"{prefix}:{value}",
                    f"{prefix}-{value}_{counter}",
                ]
            )
            yield {"kind": kind, "locale": locale, "context": "id", "text": text, "values": [value]}
            # in a URL an agent's tool called, percent-escaped (`%40`, `%2B`)
            escaped = quote(value, safe="")
            name = "email" if kind == "EMAIL_ADDRESS" else "phone"
            url = f"GET https://api.example.com/v1/contacts?{name}={escaped}&limit={counter}"
            yield {"kind": kind, "locale": locale, "context": "url", "text": url, "values": [value, escaped]}


def records(per_kind: int, seed: int = 20261205) -> Iterator[dict[str, object]]:
    rng = random.Random(seed)
    for index in range(per_kind):
        locale = LOCALES[index % len(LOCALES)]
        fake = Faker(locale)
        fake.seed_instance(seed + index)
        name = fake.name()
        for kind, options in _values(fake, locale, rng).items():
            label, value = rng.choice(options)
            for context, (text, must_go) in _contexts(name, label, value, rng).items():
                yield {"kind": kind, "locale": locale, "context": context, "text": text, "values": must_go}
        intro = rng.choice([f"Hi, I'm {name}.", f"My name is {name} and I need help.", f"Dear {name},"])
        yield {"kind": "PERSON", "locale": locale, "context": "chat", "text": intro, "values": [name]}
    for _ in range(per_kind):
        for kind, make in _NEAR_MISSES.items():
            if kind not in ("id", "url"):
                text, keep = make(rng)
                yield {
                    "kind": f"near-miss:{kind}",
                    "locale": "",
                    "context": "text",
                    "text": text,
                    "keep": keep,
                }
    yield from _ids(per_kind, seed)
    near_ids = random.Random(seed + 2)
    for _ in range(per_kind):
        text, keep = _run_id(near_ids)
        yield {"kind": "near-miss:id", "locale": "", "context": "id", "text": text, "keep": keep}
    near_urls = random.Random(seed + 3)
    for _ in range(per_kind):
        text, keep = _url(near_urls)
        yield {"kind": "near-miss:url", "locale": "", "context": "url", "text": text, "keep": keep}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--per-kind", type=int, default=44, help="people per kind (44: four per locale)")
    args = parser.parse_args()
    rows = list(records(args.per_kind))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows), encoding="utf-8")
    print(f"wrote {len(rows)} records to {args.out}")


if __name__ == "__main__":
    main()
