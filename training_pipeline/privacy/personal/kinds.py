"""Which kinds of personal data the strict profile redacts, and what each is replaced by.

The names are Presidio's entity types where Presidio has a recognizer (`EMAIL_ADDRESS`, `US_SSN`, …) and
our own where it has none (`STREET_ADDRESS`, `DATE_OF_BIRTH`, `PASSPORT`, `PERSON` found by cue,
`USERNAME` where a command or a tool writes an account's name, `RECORD_NUMBER`): a
placeholder says what was there, `<PII:EMAIL_ADDRESS:1>`, and its number tells one value from another
within a trajectory, never what the value was.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

__all__ = [
    "CONTACT",
    "DEFAULT_KINDS",
    "FINANCIAL",
    "NATIONAL_IDS",
    "NUMBERS",
    "PLACEHOLDER",
    "kinds_from_setting",
    "placeholder",
]

CONTACT = ("EMAIL_ADDRESS", "PHONE_NUMBER", "IP_ADDRESS", "STREET_ADDRESS")
FINANCIAL = ("CREDIT_CARD", "IBAN_CODE", "US_BANK_NUMBER", "CRYPTO")
#: people's own identity numbers for the regions Presidio knows (business, vehicle and postal codes are
#: not a person's and are left out); each is validated by its checksum where the number has one
NATIONAL_IDS = (
    "US_SSN",
    "US_ITIN",
    "US_PASSPORT",
    "US_DRIVER_LICENSE",
    "UK_NHS",
    "UK_NINO",
    "UK_PASSPORT",
    "ES_NIF",
    "ES_NIE",
    "ES_PASSPORT",
    "IT_FISCAL_CODE",
    "IT_IDENTITY_CARD",
    "IT_PASSPORT",
    "PL_PESEL",
    "FI_PERSONAL_IDENTITY_CODE",
    "SE_PERSONNUMMER",
    "DE_TAX_ID",
    "DE_ID_CARD",
    "DE_PASSPORT",
    "IN_AADHAAR",
    "IN_PAN",
    "IN_PASSPORT",
    "IN_VOTER",
    "SG_NRIC_FIN",
    "AU_TFN",
    "AU_MEDICARE",
    "CA_SIN",
    "KR_RRN",
    "KR_PASSPORT",
    "TH_TNIN",
    "TR_NATIONAL_ID",
    "NG_NIN",
    "ZA_ID_NUMBER",
    "ZA_PASSPORT",
    "PH_UMID",
    "PH_PASSPORT",
    "PASSPORT",
    # any country's id number, given as one ("DNI: …", "my BSN is …"): `LabelledValueRecognizer`
    "NATIONAL_ID",
)
#: a person's name (said to be one), birth date, account name (a home folder's: `/Users/janedoe`), and
#: the number an organisation files them under, given as one (`MRN: …`, `Employee ID: …`)
PEOPLE = ("PERSON", "DATE_OF_BIRTH", "USERNAME", "RECORD_NUMBER")
#: the kinds found in runs of digits, or of capitals and digits (the finder's gate reads these)
NUMBERS = ("PHONE_NUMBER", "CREDIT_CARD", "IBAN_CODE", "US_BANK_NUMBER", *NATIONAL_IDS)
#: what `strict` redacts unless the deployment says otherwise
DEFAULT_KINDS: frozenset[str] = frozenset((*CONTACT, *FINANCIAL, *NATIONAL_IDS, *PEOPLE))

#: what a redaction leaves: the kind and the value's number within its trajectory (or text)
PLACEHOLDER = re.compile(r"<PII:([A-Z_]+):(\d+)>")


def placeholder(kind: str, number: int) -> str:
    return f"<PII:{kind}:{number}>"


def kinds_from_setting(value: str | Iterable[str] | None) -> frozenset[str]:
    """The kinds a setting names: `all` (or nothing said: every default kind), `none`, or a comma-separated
    list of kinds. An unknown kind is an error naming the known ones, not a kind silently ignored."""
    if value is None:
        return DEFAULT_KINDS
    written = isinstance(value, str)
    names = [name for name in (part.strip() for part in (value.split(",") if written else value)) if name]
    if names == ["all"] or (written and not names):  # an empty setting is one not made
        return DEFAULT_KINDS
    if names == ["none"] or not names:
        return frozenset()
    unknown = sorted(set(names) - DEFAULT_KINDS)
    if unknown:
        raise ValueError(
            f"unknown personal-data kind {', '.join(unknown)}: use all, none, or some of "
            f"{', '.join(sorted(DEFAULT_KINDS))}"
        )
    return frozenset(names)
