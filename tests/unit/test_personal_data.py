"""Personal data: found by Presidio (and our recognizers), redacted as typed placeholders numbered per
trajectory, configurable, with a names model when one is installed, and the corpus held to zero leaks."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import REPO, fresh_python
from training_pipeline.privacy.filter import PrivacyFilter
from training_pipeline.privacy.personal import PLACEHOLDER, PersonalDataFinder, kinds_from_setting

ISSUE_MESSAGE = (
    "Hi, I'm Jane Doe. Mail me at jane.doe@example.com or call +1 415-555-0132; my SSN is 078-05-1120, "
    "card 4111 1111 1111 1111, I live at 12 Baker Street. key sk-proj-9zUoCXbJpZDGLpxpUpZEtbB6LSgm"
)
ISSUE_VALUES = (
    "Jane Doe",
    "jane.doe@example.com",
    "415-555-0132",
    "078-05-1120",
    "4111 1111 1111 1111",
    "12 Baker Street",
    "sk-proj-9zUoCXbJpZDGLpxpUpZEtbB6LSgm",
)


def _strict(kinds: str = "all", id_key: bytes | None = None) -> PrivacyFilter:
    return PrivacyFilter("strict", None, (), personal_data=kinds, ner_model="", id_key=id_key)


def test_the_issues_message_comes_out_with_every_value_replaced_by_its_kind() -> None:
    out = _strict().redact(ISSUE_MESSAGE)
    assert [v for v in ISSUE_VALUES if v in out] == []
    assert out == (
        "Hi, I'm <PII:PERSON:1>. Mail me at <PII:EMAIL_ADDRESS:1> or call <PII:PHONE_NUMBER:1>; "
        "my SSN is <PII:US_SSN:1>, card <PII:CREDIT_CARD:1>, I live at <PII:STREET_ADDRESS:1>. "
        "key <REDACTED:openai-key>"
    )


def _trajectory(*messages: tuple[str, str]) -> dict:
    calls = [
        {"systemPrompt": "You are Eliza.", "userPrompt": user, "response": reply, "purpose": "response"}
        for user, reply in messages
    ]
    return {"trajectoryId": "t1", "agentId": "a", "startTime": 1, "steps": [{"llmCalls": calls}]}


def test_the_people_git_and_mail_name_are_redacted_and_groups_are_not() -> None:
    """A coding agent's `git log` and a commit's trailers, a package's author, a mail's display name:
    each person's name goes with the address; a team or a foundation is nobody."""
    text = (
        "commit 3f2a1b7\nAuthor: Jane Doe <jane.doe@example.com>\nDate:   Mon Dec 7 10:00:00 2026\n\n"
        "    Fix the parser\n\n    Signed-off-by: Bob Smith <bob@example.org>\n"
        "    Co-authored-by: Rui Costa <rui@example.pt>\n"
        "__author__ = 'Ka-Ping Yee <ping@example.net>'\n"
        "Assignee: Platform Team\nsee the Python Software Foundation <psf@example.org>"
    )
    out = _strict().redact(text)
    assert out == (
        "commit 3f2a1b7\nAuthor: <PII:PERSON:1> <<PII:EMAIL_ADDRESS:1>>\nDate:   Mon Dec 7 10:00:00 2026\n\n"
        "    Fix the parser\n\n    Signed-off-by: <PII:PERSON:2> <<PII:EMAIL_ADDRESS:2>>\n"
        "    Co-authored-by: <PII:PERSON:3> <<PII:EMAIL_ADDRESS:3>>\n"
        "__author__ = '<PII:PERSON:4> <<PII:EMAIL_ADDRESS:4>>'\n"
        "Assignee: Platform Team\nsee the Python Software Foundation <<PII:EMAIL_ADDRESS:5>>"
    )


def test_a_name_with_an_initial_and_a_name_credited_beside_its_address_are_redacted() -> None:
    """Names with a middle initial (`git log`'s, a sign-off's, a package's quoted author) and the forms
    credits and lists give a name beside its address, `Name (address)`, `Name, address`, `Name -
    address`, and the older mail form `address (Name)`; a notice's `Copyright` and a team beside its
    address stay."""
    text = (
        "Author: Nathaniel J. Smith <njs@example.com>\n"
        "Signed-off-by: Jane Q. Doe <jane@example.com>\n"
        'Author-email: "Eric V. Smith" <eric@example.com>\n'
        "-   Andy McCurdy (andy@example.com) the original author of redis-py.\n"
        "Written in 2015 by Sebastiano Vigna (vigna@example.com)\n"
        "* Lennart Regebro, regebro@example.com\n"
        "Jean-Sebastien Roy - <js@example.com>\n"
        "Port to TypeScript Copyright Isaac Z. Schlueter <i@example.com>\n"
        "Maintainer: Platform Team (platform@example.com)\n"
        "# Written by guido@example.com (Guido van Rossum); ask help@example.com (Help Desk)\n"
        "docs@example.com (Getting Started), Mailing List <list@example.com>"
    )
    assert _strict().redact(text) == (
        "Author: <PII:PERSON:1> <<PII:EMAIL_ADDRESS:1>>\n"
        "Signed-off-by: <PII:PERSON:2> <<PII:EMAIL_ADDRESS:2>>\n"
        'Author-email: "<PII:PERSON:3>" <<PII:EMAIL_ADDRESS:3>>\n'
        "-   <PII:PERSON:4> (<PII:EMAIL_ADDRESS:4>) the original author of redis-py.\n"
        "Written in 2015 by <PII:PERSON:5> (<PII:EMAIL_ADDRESS:5>)\n"
        "* <PII:PERSON:6>, <PII:EMAIL_ADDRESS:6>\n"
        "<PII:PERSON:7> - <<PII:EMAIL_ADDRESS:7>>\n"
        "Port to TypeScript Copyright <PII:PERSON:8> <<PII:EMAIL_ADDRESS:8>>\n"
        "Maintainer: Platform Team (<PII:EMAIL_ADDRESS:9>)\n"
        "# Written by <PII:EMAIL_ADDRESS:10> (<PII:PERSON:9>); ask <PII:EMAIL_ADDRESS:11> (Help Desk)\n"
        "<PII:EMAIL_ADDRESS:12> (Getting Started), Mailing List <<PII:EMAIL_ADDRESS:13>>"
    )


def test_every_person_a_field_lists_is_redacted_and_a_name_written_last_name_first() -> None:
    """A people's field lists several (`Author: A, B`, `Signed-off-by: A, B and C`) and a mail client
    writes a name last name first (`"Doe, Jane" <…>`): each goes; a title after a name and a
    company's `"Acme, Inc"` stay."""
    text = (
        "# Author: Ben Gertzfield, Barry Warsaw\n"
        "Signed-off-by: Jane Doe, John Smith and Ana Lima\n"
        'From: "Doe, Jane" <jane.doe@example.com>\n'
        "Name: Rui Costa, Senior Engineer\n"
        'Reply to "Acme, Inc" <sales@example.com>'
    )
    assert _strict().redact(text) == (
        "# Author: <PII:PERSON:1>, <PII:PERSON:2>\n"
        "Signed-off-by: <PII:PERSON:3>, <PII:PERSON:4> and <PII:PERSON:5>\n"
        'From: "<PII:PERSON:6>" <<PII:EMAIL_ADDRESS:1>>\n'
        "Name: <PII:PERSON:7>, Senior Engineer\n"
        'Reply to "Acme, Inc" <<PII:EMAIL_ADDRESS:2>>'
    )


def test_a_packages_people_set_in_code_or_configuration_are_redacted() -> None:
    """A coding agent reads `setup.py`, `pyproject.toml` and modules' headers: each author or
    maintainer set there goes, every one a list holds; a company or a foundation, and a `name` that is
    no one's, stay."""
    text = (
        "__author__ = 'Ka-Ping Yee, Jane Doe and Ana Lima'\n"
        'setup(name="pkg", author="Bob Smith", version="1")\n'
        'authors = ["Rui Costa", "Lena Berg <lena@example.org>"]\n'
        'maintainers = [{ name = "Omar Haddad", email = "omar@example.org" }]\n'
        "author = 'Google'\n__author__ = 'Python Software Foundation'\nname = \"Data Loader\""
    )
    assert _strict().redact(text) == (
        "__author__ = '<PII:PERSON:1>, <PII:PERSON:2> and <PII:PERSON:3>'\n"
        'setup(name="pkg", author="<PII:PERSON:4>", version="1")\n'
        'authors = ["<PII:PERSON:5>", "<PII:PERSON:6> <<PII:EMAIL_ADDRESS:1>>"]\n'
        'maintainers = [{ name = "<PII:PERSON:7>", email = "<PII:EMAIL_ADDRESS:2>" }]\n'
        "author = 'Google'\n__author__ = 'Python Software Foundation'\nname = \"Data Loader\""
    )


def test_the_name_git_commits_with_an_addressee_and_a_driving_licence_are_redacted() -> None:
    """A coding agent sets git's identity (`git config user.name`, `-c user.name=`, `GIT_AUTHOR_NAME`, a
    `.gitconfig`'s `[user]` section), a letter names its addressee (`Attn:`), a form a driving
    licence: each went to the datasets. A placeholder, a bot's one word and a notice's `Attention:
    Please Read` stay."""
    text = (
        'git config --global user.name "Alex Johnson"\n'
        "git -c user.name='Alex Johnson' commit -m fix\n"
        'GIT_AUTHOR_NAME="Dana Whitfield" git commit\n'
        "[user]\n\temail = ana@example.org\n\tname = Ana Lima\n[core]\n\tname = Main Repo\n"
        "Attn: Maria Rossi\n"
        "driving licence number: MORGA753116SM9IJ\n"
        'git config user.name "$NAME"; git config user.name ci-bot\n'
        "Attention: Please Read"
    )
    assert _strict().redact(text) == (
        'git config --global user.name "<PII:PERSON:1>"\n'
        "git -c user.name='<PII:PERSON:1>' commit -m fix\n"
        'GIT_AUTHOR_NAME="<PII:PERSON:2>" git commit\n'
        "[user]\n\temail = <PII:EMAIL_ADDRESS:1>\n\tname = <PII:PERSON:3>\n[core]\n\tname = Main Repo\n"
        "Attn: <PII:PERSON:4>\n"
        "driving licence number: <PII:NATIONAL_ID:1>\n"
        'git config user.name "$NAME"; git config user.name ci-bot\n'
        "Attention: Please Read"
    )


def test_a_booking_a_quoted_greeting_a_role_and_a_signature_name_their_person() -> None:
    """An assistant books "under the name" someone, a tool call's body greets them, a note names a
    patient or a candidate, a mail signs after `-- `, a form asks a maiden name and an emergency
    contact: each name went to the datasets. A program's "Hello World!", an assistant's "Hey Siri", a
    heading after a role word, "in the name of" and a form's "Last name is Optional" stay."""
    text = (
        'Booked under the name "Chen Wei" for 7pm.\n'
        'send_email(to="x", body="Hi Marcus, the invoice is attached")\n'
        "Interview notes: candidate Sofia Lindqvist, 29, lives nearby.\n"
        "-- \nOliver Schmidt\nSenior Engineer\n"
        "My mother's maiden name is Okafor. Emergency contact: Tom Baker (brother)\n"
        'print("Hello World!"); greet("Hey Siri, play music")\n'
        "See the Employee Handbook Update\nin the name of Science; Last name is Optional\n"
        "the unforgiven name is Sunny"
    )
    assert _strict().redact(text) == (
        'Booked under the name "<PII:PERSON:1>" for 7pm.\n'
        'send_email(to="x", body="Hi <PII:PERSON:2>, the invoice is attached")\n'
        "Interview notes: candidate <PII:PERSON:3>, 29, lives nearby.\n"
        "-- \n<PII:PERSON:4>\nSenior Engineer\n"
        "My mother's maiden name is <PII:PERSON:5>. Emergency contact: <PII:PERSON:6> (brother)\n"
        'print("Hello World!"); greet("Hey Siri, play music")\n'
        "See the Employee Handbook Update\nin the name of Science; Last name is Optional\n"
        "the unforgiven name is Sunny"
    )


def test_a_calendars_a_trackers_and_a_cards_people_and_a_closing_on_one_line_are_redacted() -> None:
    """A calendar tool's organiser and attendees (`displayName`), a tracker's owner, requester and
    reviewer, a mail's sender, a booking's traveller, a card's and a chart's names in capitals, and a
    reply closed on one line ("Thanks, Priya"): each went to the datasets. A team, a bot's display
    name, "Thanks, Team" and a one-word owner stay."""
    text = (
        '{"organizer": {"displayName": "Jane Doe"}, "attendees": [{"displayName": "Bob Smith"}]}\n'
        "Attendees: Alice Wong, Chen Wei\nOwner: Priya Raman\nRequester: Tom Baker\nReviewer: Ana Lima\n"
        "Sender: Olivia Brown\nTraveler: Marcus Lee\nCardholder: JANE A DOE\nPatient: DOE, JANE\n"
        "Sounds good. Thanks, Priya\n"
        "Owner: Platform Team\nReviewer: Bug Watch Updater\nOwner: root\nThanks, Team\nCardholder: N/A"
    )
    assert _strict().redact(text) == (
        '{"organizer": {"displayName": "<PII:PERSON:1>"}, "attendees": [{"displayName": "<PII:PERSON:2>"}]}\n'
        "Attendees: <PII:PERSON:3>, <PII:PERSON:4>\nOwner: <PII:PERSON:5>\nRequester: <PII:PERSON:6>\n"
        "Reviewer: <PII:PERSON:7>\nSender: <PII:PERSON:8>\nTraveler: <PII:PERSON:9>\n"
        "Cardholder: <PII:PERSON:10>\nPatient: <PII:PERSON:11>\n"
        "Sounds good. Thanks, <PII:PERSON:12>\n"
        "Owner: Platform Team\nReviewer: Bug Watch Updater\nOwner: root\nThanks, Team\nCardholder: N/A"
    )


def test_names_and_ids_in_other_languages_fields_and_a_bookings_capitals_are_redacted() -> None:
    """A form's given and family names in French, German, Spanish (`Prénom :`, `Vorname:`), a name
    field's family name first (`Name: Müller, Hans`, `Assignee: Okafor, Chidi`, before a parenthesis:
    `Customer: Garcia, Maria (ID 4471)`), "mi nombre es …", a tax id written in groups of
    three (`Steuer-ID: 65 929 970 489`), a ticket's holder and an airline's `SMITH/JOHN MR` or "booked
    for MR JOHN SMITH": each went to the datasets. GitLab's "MR PIPELINE FAILED", Microsoft's "MS SQL
    SERVER" and a tool list's `Name: Search, Fetch` stay."""
    text = (
        "Prénom : Jean\nNachname: Müller, Vorname: Hans\nName: Doe, Jane\nMi nombre es Lucía Fernández\n"
        "Steuer-ID: 65 929 970 489\nTicket holder: Ana Lima\nPassenger: SMITH/JOHN MR\n"
        "Flight AA123 booked for MR TOM BAKER\nMR PIPELINE FAILED on MS SQL SERVER\nName: Search, Fetch\n"
        "Customer: Garcia, Maria (ID 4471)\nAssignee: Okafor, Chidi"
    )
    assert _strict().redact(text) == (
        "Prénom : <PII:PERSON:1>\nNachname: <PII:PERSON:2>, Vorname: <PII:PERSON:3>\nName: <PII:PERSON:4>\n"
        "Mi nombre es <PII:PERSON:5>\nSteuer-ID: <PII:NATIONAL_ID:1>\nTicket holder: <PII:PERSON:6>\n"
        "Passenger: <PII:PERSON:7>\nFlight AA123 booked for MR <PII:PERSON:8>\n"
        "MR PIPELINE FAILED on MS SQL SERVER\nName: Search, Fetch\n"
        "Customer: <PII:PERSON:9> (ID 4471)\nAssignee: <PII:PERSON:10>"
    )


def test_a_person_named_by_how_the_writer_knows_them_is_redacted() -> None:
    """ "My wife Sarah and I", "contact my manager, Tom Baker": a relation names the person after it.
    An assistant's name and a relation with no name stay."""
    text = (
        "My wife Sarah and I moved. Please contact my manager, Tom Baker. "
        "Ask my assistant Claude or my brother."
    )
    assert _strict().redact(text) == (
        "My wife <PII:PERSON:1> and I moved. Please contact my manager, <PII:PERSON:2>. "
        "Ask my assistant Claude or my brother."
    )


def test_a_chat_platforms_and_a_profiles_people_fields_are_redacted() -> None:
    """Slack's user object (`real_name`, `real_name_normalized`, a handle's `display_name`), Discord's
    (`global_name`), a form's `nickname` and `recipient_name`, a profile's `github_username`: each went
    to the datasets. A last login's time, a count and a notebook kernel's display name stay."""
    text = (
        '{"real_name": "Jane Doe", "profile": {"real_name_normalized": "Jane Doe", '
        '"display_name": "tnguyen"}}\n'
        '"kernelspec": {"display_name": "Python 3 (ipykernel)", "name": "python3"}\n'
        '{"global_name": "Priya", "nickname": "Janey", "recipient_name": "Chen Wei"}\n'
        '{"twitter_username": "janedoe", "github_username": "mkowalski"}\n'
        '{"last_login": "2026-11-02", "login_count": "12"}'
    )
    assert _strict().redact(text) == (
        '{"real_name": "<PII:PERSON:1>", "profile": {"real_name_normalized": "<PII:PERSON:1>", '
        '"display_name": "<PII:USERNAME:1>"}}\n'
        '"kernelspec": {"display_name": "Python 3 (ipykernel)", "name": "python3"}\n'
        '{"global_name": "<PII:PERSON:2>", "nickname": "<PII:PERSON:3>", '
        '"recipient_name": "<PII:PERSON:4>"}\n'
        '{"twitter_username": "<PII:USERNAME:2>", "github_username": "<PII:USERNAME:3>"}\n'
        '{"last_login": "2026-11-02", "login_count": "12"}'
    )


def test_what_a_browser_agent_types_into_a_form_and_git_blames_authors_are_redacted() -> None:
    """A browser agent types a person's name and birth date into labelled boxes (Playwright MCP's
    `{"element": "First name", "ref": …, "text": …}`, a script's `page.fill("#firstName", …)`,
    `locator(…).fill(…)`) or sends them in a URL's query; `git blame` names each line's author; a
    database client and a registry login name the account (`psql -U`, `docker login -u`). A table's
    column names, a header's words and the `postgres` role stay."""
    text = (
        '{"element": "First name textbox", "ref": "e12", "text": "Jane"}\n'
        '{"element": "Date of birth", "ref": "e15", "text": "03/04/1985"}\n'
        'page.fill(\'input[name="lastName"]\', \'Doe\'); page.locator("#full-name").fill("Ana Lima")\n'
        "GET /signup?first_name=Marcus&last_name=Lee&plan=pro\n"
        "3f2a1b7e (Chen Wei     2026-11-02 10:00:00 +0100 12)     return x\n"
        "psql -U mkowalski -h db app; docker login -u tnguyen ghcr.io\n"
        'columns = ["First Name", "Last Name", "Email"]; psql -U postgres'
    )
    assert _strict().redact(text) == (
        '{"element": "First name textbox", "ref": "e12", "text": "<PII:PERSON:1>"}\n'
        '{"element": "Date of birth", "ref": "e15", "text": "<PII:DATE_OF_BIRTH:1>"}\n'
        "page.fill('input[name=\"lastName\"]', '<PII:PERSON:2>'); "
        'page.locator("#full-name").fill("<PII:PERSON:3>")\n'
        "GET /signup?first_name=<PII:PERSON:4>&last_name=<PII:PERSON:5>&plan=pro\n"
        "3f2a1b7e (<PII:PERSON:6>     2026-11-02 10:00:00 +0100 12)     return x\n"
        "psql -U <PII:USERNAME:1> -h db app; docker login -u <PII:USERNAME:2> ghcr.io\n"
        'columns = ["First Name", "Last Name", "Email"]; psql -U postgres'
    )


def test_a_field_that_may_name_a_person_takes_two_words_and_a_tools_name_is_nobodys() -> None:
    """`author`, `assignee` and `name` name people and things alike: a person's name has two words or
    more (`"author": "Google"` is a company's) and a tool's starts with what it does (`Search Web`)."""
    trajectory = _trajectory(("hi", "hello"))
    trajectory["metadata"] = {
        "package": {"author": "Google", "maintainer": "Jane Doe"},
        "issue": {"assignee": "Bob Smith", "reporter": "Platform Team"},
        "tools": [{"name": "Search Web"}, {"name": "Send Email"}],
    }
    _strict().redact_sensitive(trajectory)
    metadata = trajectory["metadata"]
    assert metadata["package"]["author"] == "Google"
    assert metadata["package"]["maintainer"].startswith("<PII:PERSON:")
    assert metadata["issue"]["assignee"].startswith("<PII:PERSON:")
    assert metadata["issue"]["reporter"] == "Platform Team"
    assert metadata["tools"] == [{"name": "Search Web"}, {"name": "Send Email"}]


def test_an_id_with_a_letter_outside_ascii_is_read_without_error() -> None:
    """An id or hash with an accented letter or a superscript digit in it (`…474é`, `AB12²…`) looked
    like an IBAN to `isalnum` and raised in its check digits' base-36 reading: the record's redaction
    failed (found by the batched gate's property test). No base-36 digit is outside ASCII."""
    text = "ref cd566647b5aa6663474é, code AB12²3456789012345, IBAN DE89370400440532013000"
    assert (
        _strict().redact(text) == "ref cd566647b5aa6663474é, code AB12²3456789012345, IBAN <PII:IBAN_CODE:1>"
    )


def test_a_letter_that_folds_into_a_checked_ids_pattern_is_read_without_error() -> None:
    """Presidio's checksums look each character up in a table of capitals and digits, after patterns
    that match case-insensitively: the Kelvin sign (`\\u212a`) folds to `K`, matched an Italian fiscal
    code's shape and raised `KeyError` in its check, and the trajectory was quarantined (found by the
    context-needs property test). A check that cannot read a value answers that it is not valid."""
    text = "order \u212aKACCOUNTSTATUSA 4000079190, codice fiscale RSSMRA85T10A562S"
    assert _strict().redact(text) == (
        "order \u212aKACCOUNTSTATUSA <PII:UK_NHS:1>, codice fiscale <PII:IT_FISCAL_CODE:1>"
    )


def test_a_house_number_with_a_letter_and_a_linkedin_members_profile_are_redacted() -> None:
    """A house numbered with a letter (`221B Baker Street`, `12a High Street`) after a cue the address
    family's gate did not read, and a LinkedIn member's profile address (`/in/…`, a person's alone):
    each went to the datasets. A company's page stays."""
    text = (
        "Ship to: 221B Baker Street, London\nI moved to 12a High Street in May\n"
        "https://www.linkedin.com/in/maria-garcia-4b7a2b1/ works at linkedin.com/company/acme"
    )
    assert _strict().redact(text) == (
        "Ship to: <PII:STREET_ADDRESS:1>, London\nI moved to <PII:STREET_ADDRESS:2> in May\n"
        "https://www.linkedin.com/in/<PII:USERNAME:1>/ works at linkedin.com/company/acme"
    )


def test_an_address_glued_to_a_counter_in_an_id_is_redacted_and_a_version_is_not() -> None:
    """Agent frameworks name runs and sessions after their user (`run-jane.doe@example.com-1`): the
    address is personal data there too, in every field stored; `build@1.2.3-4` has no address in it."""
    trajectory = _trajectory(("hello", "hi"))
    trajectory["trajectoryId"] = "run-jane.doe@example.com-1"
    trajectory["agentId"] = "agent_rui.costa@example.pt_2"
    trajectory["metadata"] = {"session": "s-bob@example.co.uk-7", "build": "build@1.2.3-4"}
    stored = _strict()
    stored.redact_sensitive(trajectory)
    assert stored.apply(trajectory, "o", redacted=True)
    text = json.dumps(trajectory)
    assert "jane.doe" not in text and "rui.costa" not in text and "bob@" not in text
    assert trajectory["metadata"]["build"] == "build@1.2.3-4"
    assert trajectory["trajectoryId"].endswith("-1") and "<PII:EMAIL_ADDRESS:" in trajectory["trajectoryId"]


def test_a_number_dialled_with_its_country_code_is_redacted_in_an_id_and_a_build_number_is_not() -> None:
    """Messaging platforms name users by their number (`whatsapp:+14155550123`) and agent frameworks
    name sessions after them, glued with `-`, `_` or a counter; the run's own numbers are nobody's."""
    trajectory = _trajectory(("hello", "hi"))
    trajectory["trajectoryId"] = "session-+14155550123-2"
    trajectory["agentId"] = "conv_+447911123456"
    trajectory["metadata"] = {
        "thread": "user-+4915112345678_3",
        "build": "build-1.4.2+20261124093015",
        "job": "job_1795478500000_7",
        "order": "order-4155550123",
    }
    stored = _strict()
    stored.redact_sensitive(trajectory)
    assert stored.apply(trajectory, "o", redacted=True)
    text = json.dumps(trajectory)
    assert "14155550123" not in text and "447911123456" not in text and "4915112345678" not in text
    assert trajectory["trajectoryId"] == "session-<PII:PHONE_NUMBER:1>-2"
    assert trajectory["agentId"] == "conv_<PII:PHONE_NUMBER:2>"
    metadata = trajectory["metadata"]
    assert (metadata["build"], metadata["job"], metadata["order"]) == (
        "build-1.4.2+20261124093015",
        "job_1795478500000_7",
        "order-4155550123",
    )


def test_a_redacted_id_gets_a_suffix_only_its_key_makes_and_filtering_again_keeps_it() -> None:
    """Two people's sessions stay two (`privacy.id_key`): the suffix is the same under one key, other
    under another, and a stored trajectory filtered again keeps its id, even where a word before the
    suffix would make its characters a token's (`auth-…`); an id with nobody's data in it is left as it
    is."""
    ids = [
        "session-+14155550123-2",
        "session-+447911123456-2",
        "run-1",
        "auth-+14155550123-2",
        "token-+447911123456",
    ]

    def stored(key: bytes) -> list[str]:
        out = []
        for trajectory_id in ids:
            trajectory = {**_trajectory(("hello", "hi")), "trajectoryId": trajectory_id}
            _strict(id_key=key).redact_sensitive(trajectory)
            again = json.loads(json.dumps(trajectory))
            _strict(id_key=key).redact_sensitive(again)
            assert again == trajectory
            out.append(trajectory["trajectoryId"])
        return out

    first, second = stored(b"a" * 32), stored(b"b" * 32)
    assert first[0] != first[1] and first[2] == second[2] == "run-1"
    assert all(
        i.startswith("session-<PII:PHONE_NUMBER:1>-2~") and len(i.split("~")[1]) == 16 for i in first[:2]
    )
    assert first[:2] != second[:2] and stored(b"a" * 32) == first


def test_the_id_key_is_made_once_for_a_data_folder_even_by_processes_at_once(tmp_path: Path) -> None:
    from training_pipeline.privacy.id_key import KEY_FILE, load_id_key

    script = (
        "import sys\nfrom pathlib import Path\nfrom training_pipeline.privacy.id_key import load_id_key\n"
    )
    script += "print(load_id_key(None, Path(sys.argv[1])).decode())\n"
    started = [
        subprocess.Popen(
            [sys.executable, "-c", script, str(tmp_path)], stdout=subprocess.PIPE, text=True, cwd=REPO
        )
        for _ in range(4)
    ]
    keys = {process.communicate()[0].strip() for process in started}
    assert len(keys) == 1 and all(process.returncode == 0 for process in started)
    made = tmp_path / KEY_FILE
    assert made.stat().st_mode & 0o777 == 0o600 and list(made.parent.iterdir()) == [made]
    assert load_id_key(None, tmp_path).decode() in keys
    configured = "c" * 32
    assert load_id_key(configured, tmp_path) == configured.encode()
    with pytest.raises(ValueError, match="TRAINING_PIPELINE_ID_KEY must be 32 characters or more"):
        load_id_key("short-secret", tmp_path)
    made.write_text("short\n")
    with pytest.raises(ValueError, match="holds no key"):
        load_id_key(None, tmp_path)


def test_the_id_key_is_made_where_the_filesystem_has_no_hard_links(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import os

    from training_pipeline.privacy.id_key import KEY_FILE, load_id_key

    def no_links(source: object, target: object) -> None:
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(os, "link", no_links)
    key = load_id_key(None, tmp_path)
    assert len(key) == 64 and load_id_key(None, tmp_path) == key
    assert [p.name for p in (tmp_path / KEY_FILE).parent.iterdir()] == [KEY_FILE.name]


def test_an_address_or_number_percent_escaped_in_a_url_is_redacted_and_a_git_remote_is_not() -> None:
    """A tool's request stored in the metadata: its query's escapes are read, the finding spans them,
    and the URL's host and path stay; a repository's `git@host` remote is nobody's address."""
    trajectory = _trajectory(("fetch the contact", "done"))
    trajectory["metadata"] = {
        "request": "GET https://api.example.com/v1/contacts?email=jane.doe%40example.com&limit=1",
        "callback": "tel:%2B14155550123",
        "repository": "git@github.com:acme/agent.git",
    }
    _strict().redact_sensitive(trajectory)
    metadata = trajectory["metadata"]
    assert (
        metadata["request"] == "GET https://api.example.com/v1/contacts?email=<PII:EMAIL_ADDRESS:1>&limit=1"
    )
    assert metadata["callback"] == "tel:<PII:PHONE_NUMBER:1>"
    assert metadata["repository"] == "git@github.com:acme/agent.git"


def test_an_address_spelt_out_for_harvesters_is_redacted_and_prose_stays() -> None:
    """A contact page or a README writes its addresses with the `@` and the `.` as words, bracketed
    (`jdoe [at] example [dot] com`, `ahmed(dot)tahri(at)…`, `gershon[AT]cs…`) or not, a mailing list's
    archive (`jdoe at example dot com`): read as the address they spell, each went to the datasets.
    Prose with a bracketed word, an unbracketed "at", and a site said in words stay."""
    text = (
        "Contact: mgarcia [at] corp [dot] com\n"
        "Copyright (C) 2023 <ahmed(dot)tahri(at)cloudnursery.dev> and <gershon[AT]cs.technion.ac.il>\n"
        "From: r.kumar at mail dot example DOT org (Ravi Kumar)\n"
        "meet (at) noon; see the [dot] notation; we are at example dot com; look at it dot by dot"
    )
    assert _strict().redact(text) == (
        "Contact: <PII:EMAIL_ADDRESS:1>\n"
        "Copyright (C) 2023 <<PII:EMAIL_ADDRESS:2>> and <<PII:EMAIL_ADDRESS:3>>\n"
        "From: <PII:EMAIL_ADDRESS:4> (<PII:PERSON:1>)\n"
        "meet (at) noon; see the [dot] notation; we are at example dot com; look at it dot by dot"
    )


def test_a_url_querys_value_under_a_key_that_says_what_it_holds_is_redacted() -> None:
    """A browser agent's or a form's URL sends a person's number as a query value (`?phone=…&`,
    `?card=…`): a value of its own inside the URL. An id's, an order's and a page's numbers stay."""
    text = (
        "https://example.com/signup?phone=4155550123&plan=pro https://x.io/pay?card=4111111111111111\n"
        "GET /api?id=84219374&page=2 https://x.io/track?order=5555555555554444"
    )
    assert _strict().redact(text) == (
        "https://example.com/signup?phone=<PII:PHONE_NUMBER:1>&plan=pro https://x.io/pay?card=<PII:CREDIT_CARD:1>\n"
        "GET /api?id=84219374&page=2 https://x.io/track?order=5555555555554444"
    )


def test_the_number_a_whatsapp_link_opens_a_chat_with_is_redacted() -> None:
    """A support agent's reply or a profile links a chat (`https://wa.me/14155550123`): WhatsApp's link
    takes only a phone number as its path, with no `+` and no label. A number in another site's path
    and a short or glued one stay."""
    text = (
        "Message me on WhatsApp: https://wa.me/14155550123 or [chat](https://wa.me/447911123456?text=hi)\n"
        "https://example.com/orders/14155550188 https://notwa.me/14155550188 wa.me/14155550188abc"
    )
    assert _strict().redact(text) == (
        "Message me on WhatsApp: https://wa.me/<PII:PHONE_NUMBER:1> or "
        "[chat](https://wa.me/<PII:PHONE_NUMBER:2>?text=hi)\n"
        "https://example.com/orders/14155550188 https://notwa.me/14155550188 wa.me/14155550188abc"
    )


def test_an_address_or_number_written_with_html_references_is_redacted_and_the_page_kept() -> None:
    """A browsing agent's tool returns a page whose contacts are written with character references
    (`jane&#64;example.com`, `&commat;`, `&#x2B;1…`), as sites write them against harvesters: each is
    read, the finding spans its references, and the page's other references stay as written."""
    page = (
        "<p>Write to jane&#64;example.com, bob&commat;example&period;org or call &#x2B;14155550123."
        " Q&amp;A&nbsp;below.</p>"
    )
    trajectory = _trajectory(("find the contact page", "done"))
    trajectory["steps"][0]["llmCalls"][0]["toolResult"] = page
    _strict().redact_sensitive(trajectory)
    assert trajectory["steps"][0]["llmCalls"][0]["toolResult"] == (
        "<p>Write to <PII:EMAIL_ADDRESS:1>, <PII:EMAIL_ADDRESS:2> or call <PII:PHONE_NUMBER:1>."
        " Q&amp;A&nbsp;below.</p>"
    )


def test_a_value_is_read_as_its_key_says_and_ids_under_other_keys_stay() -> None:
    """A tool's structured result: a value no one could tell alone (`"Kerry Fisher"`, `"16315551234"`,
    a date, a number) is someone's by its key (`full_name`, `wa_id`, `dob`, `"phone": 14155550123`);
    the same value under another key goes too; ids, counts and times stay. The webhook is WhatsApp's
    Cloud API's documented example."""
    webhook = {
        "object": "whatsapp_business_account",
        "entry": [
            {
                "changes": [
                    {
                        "value": {
                            "messaging_product": "whatsapp",
                            "metadata": {
                                "display_phone_number": "15550783881",
                                "phone_number_id": "106540352242922",
                            },
                            "contacts": [{"profile": {"name": "Kerry Fisher"}, "wa_id": "16315551234"}],
                            "messages": [
                                {
                                    "from": "16315551234",
                                    "id": "wamid.ABGGFlCGg0cvAgo-sJQh43L5Pe4W",
                                    "timestamp": "1603059201",
                                    "text": {"body": "Hello this is an answer"},
                                    "type": "text",
                                }
                            ],
                        }
                    }
                ]
            }
        ],
    }
    record = {
        "fullName": "Jane Doe",
        "dob": "1985-03-14",
        "phone": 14155550123,
        "user_id": 4155550199,
        "order_number": "4155550188",
        "tool": {"name": "get_weather"},
        "promptTokens": 512,
    }
    trajectory = _trajectory(("hi", "hello"))
    trajectory["metadata"] = {"webhook": webhook, "crm": record}
    _strict().redact_sensitive(trajectory)
    text = json.dumps(trajectory)
    for value in ("16315551234", "15550783881", "Kerry Fisher", "Jane Doe", "1985-03-14", "14155550123"):
        assert value not in text
    value = trajectory["metadata"]["webhook"]["entry"][0]["changes"][0]["value"]
    assert value["metadata"]["phone_number_id"] == "106540352242922"
    assert value["messages"][0]["from"] == value["contacts"][0]["wa_id"]
    assert (value["messages"][0]["id"], value["messages"][0]["timestamp"]) == (
        "wamid.ABGGFlCGg0cvAgo-sJQh43L5Pe4W",
        "1603059201",
    )
    crm = trajectory["metadata"]["crm"]
    assert crm["phone"].startswith("<PII:PHONE_NUMBER:")
    assert (crm["user_id"], crm["order_number"], crm["tool"], crm["promptTokens"]) == (
        4155550199,
        "4155550188",
        {"name": "get_weather"},
        512,
    )


def test_a_tables_cells_are_read_as_their_columns_header_says() -> None:
    """A CSV file an agent read, a tool's tab-separated output and a Markdown table name their people
    in cells that say nothing alone (`Maria Garcia`, `4155550123`): each cell under a column its header
    names (`name`, `first_name`, `phone_number`, `dob`) is read as a value under that key is, a quoted
    CSV cell too. A package list's or an error table's `name` column (no other column of a person's),
    a table of no one's columns, JSON's lines and prose with commas stay."""
    text = (
        "name,email,phone\nMaria Garcia,mgarcia@corp.com,4155550123\nTran Nguyen,tn@corp.com,4155550124\n\n"
        "id\tfirst_name\tlast_name\n1\tChidi\tOkafor\n\n"
        'customer_id;full_name;dob\n4471;"Kowalski, Anna";1987-04-12\n\n'
        "| Name | Email |\n|---|:---:|\n| Hana Sato | hs@corp.com |\n\n"
        "name,version\nnumpy,1.26.4\n\n| Code | Name |\n|---|---|\n| 0x01 | Protocol Error |\n\n"
        '"Username": "example",\n"Password": "example",\n\n'
        "city,population\nLyon,522000\n\n"
        "My name, if you ask, is not important,\nand neither is the rest."
    )
    assert _strict().redact(text) == (
        "name,email,phone\n<PII:PERSON:1>,<PII:EMAIL_ADDRESS:1>,<PII:PHONE_NUMBER:1>\n"
        "<PII:PERSON:2>,<PII:EMAIL_ADDRESS:2>,<PII:PHONE_NUMBER:2>\n\n"
        "id\tfirst_name\tlast_name\n1\t<PII:PERSON:3>\t<PII:PERSON:4>\n\n"
        'customer_id;full_name;dob\n4471;"<PII:PERSON:5>";<PII:DATE_OF_BIRTH:1>\n\n'
        "| Name | Email |\n|---|:---:|\n| <PII:PERSON:6> | <PII:EMAIL_ADDRESS:3> |\n\n"
        "name,version\nnumpy,1.26.4\n\n| Code | Name |\n|---|---|\n| 0x01 | Protocol Error |\n\n"
        '"Username": "example",\n"Password": "example",\n\n'
        "city,population\nLyon,522000\n\n"
        "My name, if you ask, is not important,\nand neither is the rest."
    )


def test_a_list_is_read_as_its_key_says_of_each_item() -> None:
    """A contact card's `"phones": [...]`, a config's `"api_keys": [...]`: each item is read as its
    key's singular says (`phone`, `api_key`), numbers among them; a list of tags or ids stays."""
    secret = "Zx8d7f6g5h4j3k2l1qwertyPL"
    trajectory = _trajectory(("hi", "hello"))
    trajectory["metadata"] = {
        "contact": {
            "names": ["Jane Doe"],
            "phones": ["4155550123", 14155550124],
            "emailAddresses": ["jd@example.com"],
        },
        "config": {"api_keys": [secret], "tokens": ["Hello", "world"]},
        "tags": ["Search Web", "4155550125"],
        "ids": ["4155550126"],
    }
    _strict().redact_sensitive(trajectory)
    text = json.dumps(trajectory)
    for value in ("Jane Doe", "4155550123", "14155550124", "jd@example.com", secret):
        assert value not in text
    contact = trajectory["metadata"]["contact"]
    assert [p.startswith("<PII:PHONE_NUMBER:") for p in contact["phones"]] == [True, True]
    assert trajectory["metadata"]["config"] == {
        "api_keys": ["<REDACTED:keyed-secret>"],
        "tokens": ["Hello", "world"],
    }
    assert (trajectory["metadata"]["tags"], trajectory["metadata"]["ids"]) == (
        ["Search Web", "4155550125"],
        ["4155550126"],
    )


def test_a_plural_key_holding_one_value_is_read_as_its_singular() -> None:
    """`"phones": "4155550123"`, `"api_keys": "…"`, `"names": "Jane Doe"`: a plural key often holds one
    value (a form's field, a CSV's column); it is read as its singular says, numbers too, whether the
    rest of the trajectory is walked or not; `"status"`, `"tokens"`, `"ids"` stay."""
    secret = "Zx8d7f6g5h4j3k2l1qwertyPL"
    for extra in ({}, {"prompt": "call Jane Doe at 4155550111"}):
        trajectory = _trajectory(("hi", "hello"))
        trajectory["metadata"] = {
            "contact": {"names": "Jane Doe", "phones": "4155550123", "emails": 14155550124},
            "config": {"api_keys": secret, "tokens": "Hello world"},
            "status": "4155550125",
            "ids": "4155550126",
            **extra,
        }
        _strict().redact_sensitive(trajectory)
        text = json.dumps(trajectory)
        for value in ("Jane Doe", "4155550123", secret):
            assert value not in text, (value, extra)
        metadata = trajectory["metadata"]
        assert metadata["contact"]["phones"].startswith("<PII:PHONE_NUMBER:")
        assert metadata["config"]["api_keys"].startswith("<REDACTED:")
        assert (metadata["config"]["tokens"], metadata["status"], metadata["ids"]) == (
            "Hello world",
            "4155550125",
            "4155550126",
        )


def test_an_objects_keys_are_redacted_too_and_no_value_is_lost() -> None:
    """A tool's result keyed by its people's addresses and numbers, a config keyed by a live key: the
    keys are stored redacted, in their order, with every value; two keys redacted alike stay two."""
    from tests.planted_secrets import STRIPE_KEY

    trajectory = _trajectory(("look up the team", "done"))
    trajectory["steps"][0]["llmCalls"][0]["toolResult"] = {
        "jane.doe@example.com": {"phone": "+14155550123"},
        "bob.smith@example.org": {"phone": "+447911123456"},
    }
    trajectory["metadata"] = {
        "contacts": {"+4915112345678": "on call"},
        STRIPE_KEY: True,
        "sk_live_" + "x1" * 12: 2,
    }
    privacy = _strict()
    privacy.redact_sensitive(trajectory)
    text = json.dumps(trajectory)
    for value in ("jane.doe", "bob.smith", "4155550123", "7911123456", "15112345678", STRIPE_KEY, "x1x1"):
        assert value not in text
    result = trajectory["steps"][0]["llmCalls"][0]["toolResult"]
    assert sorted(result) == ["<PII:EMAIL_ADDRESS:1>", "<PII:EMAIL_ADDRESS:2>"]
    phones = [v["phone"] for v in result.values()]
    assert len(set(phones)) == 2 and all(p.startswith("<PII:PHONE_NUMBER:") for p in phones)
    metadata = trajectory["metadata"]
    assert list(metadata["contacts"].values()) == ["on call"]
    assert [metadata[k] for k in list(metadata)[1:]] == [True, 2]
    assert list(metadata)[2] == list(metadata)[1] + " (2)"
    again = json.loads(text)
    _strict().redact_sensitive(again)
    assert again == trajectory


def test_a_stored_value_keeps_every_entry_whose_keys_are_redacted_alike() -> None:
    from training_pipeline.privacy.stored import safe_value

    stored = safe_value({"jane@example.com": 1, "bob@example.org": 2})
    assert stored == {"<PII:EMAIL_ADDRESS:1>": 1, "<PII:EMAIL_ADDRESS:1> (2)": 2}


def test_a_value_is_one_placeholder_throughout_a_trajectory_and_another_gets_the_next_number() -> None:
    trajectory = _trajectory(
        ("My name is Jane Doe, mail me at jane.doe@example.com", "Noted, Jane Doe."),
        (
            "Also cc my colleague at bob.smith@example.org please",
            "Sure, I will mail jane.doe@example.com too.",
        ),
    )
    trajectory["metadata"] = {"contact": "JANE.DOE@example.com"}
    privacy = _strict()
    assert privacy.apply(trajectory)
    first, second = trajectory["steps"][0]["llmCalls"]
    assert first["userPrompt"] == "My name is <PII:PERSON:1>, mail me at <PII:EMAIL_ADDRESS:1>"
    assert first["response"] == "Noted, <PII:PERSON:1>."  # found once by its cue, the name is spread
    assert second["userPrompt"] == "Also cc my colleague at <PII:EMAIL_ADDRESS:2> please"
    assert second["response"] == "Sure, I will mail <PII:EMAIL_ADDRESS:1> too."
    assert trajectory["metadata"] == {"contact": "<PII:EMAIL_ADDRESS:1>"}  # one address, however written
    assert privacy.stats.redactions["PII:EMAIL_ADDRESS"] == 4
    assert privacy.stats.redactions["PII:PERSON"] == 2


def test_values_found_in_one_text_are_redacted_in_a_long_log_elsewhere_in_the_trajectory() -> None:
    """A tool's log of thousands of lines is looked through once for every value the trajectory's
    redaction found (`literals.Literals`), not once per value: each of forty people named with a cue in
    the prompt, and each of forty keys a rule found there, is redacted where the log repeats it bare."""
    people = [f"{first} {last}" for first in ("Jane", "Omar", "Ines", "Kofi") for last in _SURNAMES]
    keys = [f"sk-proj-{index:02d}9zUoCXbJpZDGLpxpUpZEtbB6LSgm" for index in range(40)]
    prompt = "\n".join(
        f"My name is {person}, my key is {key}" for person, key in zip(people, keys, strict=True)
    )
    log = "".join(f"{i:06d} ok {people[i % 40]} ran job-{i}\n" for i in range(3000))
    log += "".join(f"{person} closed with {key}\n" for person, key in zip(people, keys, strict=True))
    trajectory = _trajectory((prompt, "ok"))
    trajectory["steps"][0]["llmCalls"][0]["response"] = log
    assert len(log) > 65_536
    privacy = _strict()
    assert privacy.apply(trajectory)
    redacted = trajectory["steps"][0]["llmCalls"][0]["response"]
    assert not [person for person in people if person in redacted]
    assert not [key for key in keys if key in redacted]
    assert redacted.count("<PII:PERSON:") == 3040  # every line's person, each where it is
    assert "000017 ok <PII:PERSON:18> ran job-17\n" in redacted


_SURNAMES = (
    "Doe",
    "Okafor",
    "Lindqvist",
    "Haddad",
    "Moreau",
    "Tanaka",
    "Silva",
    "Novak",
    "Kowalski",
    "Brennan",
)


def test_reading_a_log_of_distinct_ids_leaves_the_processs_vocabulary_as_it_was() -> None:
    """Each token Presidio's spaCy pipeline meets would stay in its vocabulary for the process's life:
    a worker reading a day of logs would grow with every id in them. What the analyses add goes with
    them (spaCy's memory zones)."""
    finder = PersonalDataFinder(kinds_from_setting("all"))
    finder.spans("call me at 415-555-0132, account 4000079190")  # loaded, its first words met
    strings = finder._analyzer.nlp_engine.nlp["en"].vocab.strings
    before = len(strings)
    log = "\n".join(f"account {5_000_000_000 + 7919 * i} opened by req-{i:08d}" for i in range(500))
    assert finder.spans(log)  # read, and found what a checksum makes a national id
    assert len(strings) == before


def test_the_account_a_role_or_an_event_names_is_redacted_and_a_speaker_and_a_company_are_not() -> None:
    """A tracker's, a repository's and an audit log's people given by their accounts: quoted in a tool's
    JSON text, as an object's key in the metadata, and as a table's column; `user` only as JSON writes
    it (a transcript's `User: hi` is a speaker). A capitalised word under a role is a company's, and an
    owner or a sender as often an organisation's or a service's (AWS's `"Owner": "amazon"`)."""
    text = (
        '{"actor": "octocat", "event": "push", "author": "JaneDoe42", "assignee": "mkumar", '
        '"user": "jdoe", "committer": "Google", "reviewer": "unassigned", "Owner": "amazon", '
        '"scheme": {"user": "posix_user"}}'
    )
    trajectory = _trajectory((text, "User: hi\nAssistant: hello"))
    trajectory["metadata"] = {
        "user": "ssato",
        "createdBy": "lwei",
        "role": "user",
        "pr": {"reviewer": "amina"},
    }
    table = "id,assignee,status\n7,pnovak,open\n8,Platform,closed"
    trajectory["steps"][0]["llmCalls"].append(
        {"purpose": "response", "systemPrompt": "s", "userPrompt": table, "response": "ok"}
    )
    privacy = _strict()
    assert privacy.apply(trajectory)
    first, second = trajectory["steps"][0]["llmCalls"]
    assert first["userPrompt"] == (
        '{"actor": "<PII:USERNAME:1>", "event": "push", "author": "<PII:USERNAME:2>", '
        '"assignee": "<PII:USERNAME:3>", "user": "<PII:USERNAME:4>", "committer": "Google", '
        '"reviewer": "unassigned", "Owner": "amazon", "scheme": {"user": "posix_user"}}'
    )
    assert first["response"] == "User: hi\nAssistant: hello"
    assert trajectory["metadata"] == {
        "user": "<PII:USERNAME:6>",
        "createdBy": "<PII:USERNAME:7>",
        "role": "user",
        "pr": {"reviewer": "<PII:USERNAME:8>"},
    }
    assert second["userPrompt"] == "id,assignee,status\n7,<PII:USERNAME:5>,open\n8,Platform,closed"


def test_the_account_an_authentication_log_or_a_structured_log_names_is_redacted() -> None:
    """An operations agent reads `auth.log` and the journal: sshd's and PAM's accounts are someone's;
    so is a structured log's `user=` among the line's other fields, and a URL query's. A probe's guess
    at a system account stays, as does code's keyword argument."""
    text = (
        "sshd[812]: Accepted publickey for jdoe from 10.0.0.5 port 51234 ssh2\n"
        "sshd[813]: Failed password for invalid user mkumar from 203.0.113.9 port 22 ssh2\n"
        "sshd[814]: Invalid user oracle from 203.0.113.9 port 40022\n"
        "pam_unix(sshd:session): session opened for user lwei(uid=1001) by (uid=0)\n"
        'level=info ts=2026-12-07T10:00:00Z user=ssato msg="logged in"\n'
        "GET /api/items?username=amina&page=2 200\n"
        "client = Client(user=user, password=secret_from_vault)"
    )
    lines = _strict().redact(text).splitlines()
    assert lines == [
        "sshd[812]: Accepted publickey for <PII:USERNAME:1> from 10.0.0.5 port 51234 ssh2",
        "sshd[813]: Failed password for invalid user <PII:USERNAME:2> from 203.0.113.9 port 22 ssh2",
        "sshd[814]: Invalid user oracle from 203.0.113.9 port 40022",
        "pam_unix(sshd:session): session opened for user <PII:USERNAME:3>(uid=1001) by (uid=0)",
        'level=info ts=2026-12-07T10:00:00Z user=<PII:USERNAME:4> msg="logged in"',
        "GET /api/items?username=<PII:USERNAME:5>&page=2 200",
        "client = Client(user=user, password=secret_from_vault)",
    ]


def test_a_stored_text_redacts_a_value_wherever_it_holds_it_as_a_trajectory_does() -> None:
    """A quarantined line or a log message is one text: an account told by its key there is the same
    account in a URL, a path and a sentence of that text, as it would be across a trajectory."""
    from training_pipeline.privacy.stored import safe_text

    line = (
        '{"login": "jdoe-dev", "html_url": "https://github.com/jdoe-dev", '
        '"note": "ask jdoe-dev, /home/jdoe-dev"}'
    )
    assert safe_text(line) == (
        '{"login": "<PII:USERNAME:1>", "html_url": "https://github.com/<PII:USERNAME:1>", '
        '"note": "ask <PII:USERNAME:1>, /home/<PII:USERNAME:1>"}'
    )


def test_a_name_found_in_a_prompt_is_redacted_in_metadata_no_gate_would_walk() -> None:
    trajectory = _trajectory(("My name is Dana Whitfield, please help", "Sure."))
    trajectory["metadata"] = {"assignee": "Dana Whitfield", "queue": "billing"}
    privacy = _strict()
    privacy.apply(trajectory)
    assert trajectory["metadata"] == {"assignee": "<PII:PERSON:1>", "queue": "billing"}


def test_numbers_are_per_trajectory_never_carried_to_the_next() -> None:
    privacy = _strict()
    one = _trajectory(("write to a@example.com and b@example.com", "ok"))
    two = _trajectory(("write to b@example.com", "ok"))
    privacy.apply(one)
    privacy.apply(two)
    first = one["steps"][0]["llmCalls"][0]["userPrompt"]
    assert first == "write to <PII:EMAIL_ADDRESS:1> and <PII:EMAIL_ADDRESS:2>"
    assert two["steps"][0]["llmCalls"][0]["userPrompt"] == "write to <PII:EMAIL_ADDRESS:1>"


@pytest.mark.parametrize(
    "text",
    [
        "upgraded to v2.14.1 (build 4.2.0.1187); version 1.2.3.4 fixed it",
        "order 112-4823954-2243981 shipped; see ticket #48213994 and JIRA-4411",
        '{"created_at": "2026-11-03T12:04:55Z", "ts": 1733308800, "ts_ms": 1733308800123}',
        "request 123e4567-e89b-12d3-a456-426614174000 failed; "
        "commit 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b",
        "the plan costs $1,299.00 a year, or 1.149,90 € in Europe; p99 latency 34288 ms, 4716341 tokens",
        "for i in range(926034380):\n    total += i * 439249939 % 1000000007",
        "Set EMAIL=<your-email> and use 192.0.2.10, 10.0.0.12 or 2001:db8::1 for the test network",
        "Dear Customer, your request has been received. Hi Team, the deploy is done.",
        "I'm sorry, I'm not sure. This is Great.",
        "| Llama 2 | 7/18/2023 | 7B, 13B, 70B | 4K |; released 2023/7/18",
        "Requires-Dist: pycurl<7.45.4,>=7.43.0.5; python_version >= '3.9'",
        "Only the bit sequences `00000000001` to `11111111110` are allowed.",
        "await page.getByRole('button', { name: 'Sign In' }).click(); name: Log Out",
        "`http://user:changeme@example.org/` now shares cookies with `http://example.org/`",
        "    name: Build Docker\n    steps:\n      - name: Checkout Repository\n      - name: Set Up Python\n"
        "      - name: Run Tests\n      - name: Install Nginx\n"
        '{"name": "Monthly Report", "type": "dashboard"}',
    ],
)
def test_text_that_only_looks_like_personal_data_is_left_alone(text: str) -> None:
    assert _strict().redact(text) == text


def test_the_kinds_are_a_setting_and_an_unknown_kind_is_an_error_naming_the_known_ones() -> None:
    assert _strict("none").redact(ISSUE_MESSAGE).count("<PII:") == 0
    only_email = _strict("EMAIL_ADDRESS").redact(ISSUE_MESSAGE)
    assert PLACEHOLDER.findall(only_email) == [("EMAIL_ADDRESS", "1")]
    with pytest.raises(ValueError, match="unknown personal-data kind EMAIL: use all, none, or some of"):
        kinds_from_setting("EMAIL")
    assert PrivacyFilter("elizaos").personal is None  # the reference's filter, byte for byte


def test_a_misspelt_kind_fails_the_settings_with_the_variables_name() -> None:
    from training_pipeline.settings import SettingsError, load_settings

    with pytest.raises(SettingsError, match="TRAINING_PIPELINE_PERSONAL_DATA"):
        load_settings({"TRAINING_PIPELINE_PERSONAL_DATA": "EMAIL"})
    assert load_settings({"TRAINING_PIPELINE_PERSONAL_DATA": "none"}).personal_data == "none"


def test_the_environment_setting_reaches_the_filter(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRAINING_PIPELINE_PERSONAL_DATA", "PHONE_NUMBER, CREDIT_CARD")
    assert PrivacyFilter("strict").personal.kinds == {"PHONE_NUMBER", "CREDIT_CARD"}  # type: ignore[union-attr]
    monkeypatch.setenv("TRAINING_PIPELINE_PERSONAL_DATA", "none")
    assert PrivacyFilter("strict").personal is None


def _names_pipeline(folder: Path) -> Path:
    """A real spaCy pipeline on disk that tags two people by name, as an installed NER model would."""
    import spacy

    nlp = spacy.blank("en")
    ruler = nlp.add_pipe("entity_ruler")
    ruler.add_patterns(  # type: ignore[attr-defined]
        [
            {"label": "PERSON", "pattern": [{"TEXT": "Ada"}, {"TEXT": "Lovelace"}]},
            {"label": "PERSON", "pattern": [{"TEXT": "Grace"}, {"TEXT": "Hopper"}]},
        ]
    )
    nlp.to_disk(folder)
    return folder


def test_a_configured_ner_model_finds_names_no_cue_introduces(tmp_path: Path) -> None:
    text = "Yesterday Ada Lovelace called about the invoice; Grace Hopper will follow up."
    assert PersonalDataFinder(frozenset({"PERSON"})).spans(text) == []  # no cue, no model: not found
    model = str(_names_pipeline(tmp_path / "names"))
    out = PrivacyFilter("strict", None, (), personal_data="PERSON", ner_model=model).redact(text)
    assert out == "Yesterday <PII:PERSON:1> called about the invoice; <PII:PERSON:2> will follow up."


def test_a_ner_model_that_is_not_installed_is_an_error_never_a_download(tmp_path: Path) -> None:
    finder = PersonalDataFinder(frozenset({"PERSON"}), ner_model="en_core_web_lg_missing")
    with pytest.raises(ValueError, match="neither an installed spaCy pipeline nor a folder"):
        finder.spans("Ada Lovelace")


def test_the_cli_redacts_personal_data_and_an_unknown_kind_is_one_line(tmp_path: Path) -> None:
    source = tmp_path / "day.jsonl"
    source.write_text(json.dumps(_trajectory((ISSUE_MESSAGE, "Thanks Jane Doe!"))) + "\n")
    run = [sys.executable, "-m", "training_pipeline", "build-datasets", str(source)]
    done = subprocess.run([*run, str(tmp_path / "out")], capture_output=True, text=True, cwd=REPO)
    assert done.returncode == 0, done.stderr[-2000:]
    written = (tmp_path / "out" / "response_trajectories.jsonl").read_text()
    assert [v for v in ISSUE_VALUES if v in written] == []
    assert "Thanks <PII:PERSON:1>!" in written
    wrong = subprocess.run(
        [*run, str(tmp_path / "out2"), "--personal-data", "EMAILS"], capture_output=True, text=True, cwd=REPO
    )
    assert wrong.returncode == 2 and "Traceback" not in wrong.stderr
    [error] = [line for line in wrong.stderr.splitlines() if "error" in line]
    assert "unknown personal-data kind EMAILS: use all, none, or some of" in error


def test_the_corpus_leaks_nothing_and_over_redacts_at_most_five_percent() -> None:
    """`bench/data/personal_corpus.jsonl` (`bench/build_personal_corpus.py`): Faker's people in eleven
    locales, each value in a chat line, a JSON payload, a signature and a support ticket, and near
    misses that are nobody's data."""
    sys.path.insert(0, str(REPO / "bench"))
    try:
        from personal_coverage import measure
    finally:
        sys.path.remove(str(REPO / "bench"))
    result = measure()
    leaks = [(leak["kind"], leak["context"], leak["locale"], leak["out"]) for leak in result["leaks"]]
    assert leaks == []
    near = sum(result["near_total"].values())
    assert near >= 400 and len(result["over"]) <= 0.05 * near, result["over"][:5]
    assert {kind for kind, _ in result["totals"]} >= {
        "EMAIL_ADDRESS",
        "PHONE_NUMBER",
        "CREDIT_CARD",
        "IBAN_CODE",
        "NATIONAL_ID",
        "IP_ADDRESS",
        "STREET_ADDRESS",
        "DATE_OF_BIRTH",
        "PASSPORT",
        "CRYPTO",
        "PERSON",
    }


def test_a_home_folders_user_name_is_redacted_wherever_the_trajectory_says_it() -> None:
    """A coding agent's commands, tracebacks and working folder name its user's account (`/Users/…`,
    `/home/…`, `C:\\Users\\…`): one placeholder per account across the trajectory, `whoami`'s answer
    too, under the roots other systems keep homes in (`/usr/home`, `/var/home`); CI and system
    accounts, placeholders, a URL's `/home/` page and an app's `home` folder stay."""
    trajectory = _trajectory(
        ("run whoami", "janedoe"),
        ("ls /Users/janedoe/src", "ok, janedoe owns it"),
        (
            'File "/home/mkowalski/.venv/lib/python3.11/site-packages/x.py", line 3',
            r"saved to C:\Users\Jane Doe\Documents\report.docx",
        ),
        ("PATH=/home/mkowalski/bin:/home/mkowalski/.local/bin", "see https://example.com/home/about"),
        ("open file:///home/tnguyen/notes.txt", "cd /mnt/c/Users/rpatel/Desktop"),
        ("/home/runner/work/repo and /Users/Shared/x", "/home/$USER/x, /home/ubuntu/app, /srv/home/bob/x"),
        ("cd /usr/home/afischer && ls /var/home/afischer", "vim /app/src/home/views.py"),
    )
    trajectory["metadata"] = {"cwd": "/Users/janedoe/src"}
    _strict().redact_sensitive(trajectory)
    text = json.dumps(trajectory)
    for value in ("janedoe", "mkowalski", "Jane Doe", "tnguyen", "rpatel", "afischer"):
        assert value not in text
    calls = [call for step in trajectory["steps"] for call in step["llmCalls"]]
    assert calls[0]["response"] == "<PII:USERNAME:1>"
    assert calls[1]["userPrompt"] == "ls /Users/<PII:USERNAME:1>/src"
    assert calls[3]["userPrompt"] == "PATH=/home/<PII:USERNAME:2>/bin:/home/<PII:USERNAME:2>/.local/bin"
    assert trajectory["metadata"]["cwd"] == "/Users/<PII:USERNAME:1>/src"
    assert calls[3]["response"] == "see https://example.com/home/about"
    assert calls[5]["userPrompt"] == "/home/runner/work/repo and /Users/Shared/x"
    assert calls[5]["response"] == "/home/$USER/x, /home/ubuntu/app, /srv/home/bob/x"
    assert calls[6]["response"] == "vim /app/src/home/views.py"  # a web app's `home` view


def test_an_account_name_in_a_key_a_login_or_an_arn_is_redacted_and_service_accounts_stay() -> None:
    """A coding agent prints its public key, logs in to hosts and asks AWS who it is: each names the
    user's account (`mkowalski@laptop`, `ssh mkowalski@10.0.4.17`, `…:user/rpatel`), which then goes
    wherever else the trajectory says it. `git`, `deploy` and `ec2-user`, a package's `react@18`, a
    URL's password and git's `HEAD@{1}` stay."""
    trajectory = _trajectory(
        (
            "cat ~/.ssh/id_ed25519.pub",
            "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGm5Z1HwW3TnVf0F8s2c8fQq mkowalski@laptop",
        ),
        ("ssh -i prod.pem mkowalski@10.0.4.17 uptime; scp a.tgz tnguyen@build-01:/tmp/", "done, mkowalski"),
        ("aws sts get-caller-identity", '{"Arn": "arn:aws:iam::123456789012:user/rpatel"}'),
        ("gh auth status", "Logged in to github.com account afischer (keyring); logged in as the admin"),
        (
            "ssh git@github.com; rsync -a ./ deploy@web-1:/srv/; ssh ec2-user@10.0.0.9",
            "npm i react@18.2.0; git checkout HEAD@{1}; sftp://user:pw@host/f",
        ),
    )
    _strict().redact_sensitive(trajectory)
    calls = [call for step in trajectory["steps"] for call in step["llmCalls"]]
    text = json.dumps(trajectory)
    for value in ("mkowalski", "tnguyen", "rpatel", "afischer"):
        assert value not in text
    assert calls[0]["response"].endswith(" <PII:USERNAME:1>@laptop")
    assert calls[1]["response"] == "done, <PII:USERNAME:1>"
    assert calls[2]["response"] == '{"Arn": "arn:aws:iam::123456789012:user/<PII:USERNAME:3>"}'
    assert calls[3]["response"] == (
        "Logged in to github.com account <PII:USERNAME:4> (keyring); logged in as the admin"
    )
    assert (
        calls[4]["userPrompt"] == "ssh git@github.com; rsync -a ./ deploy@web-1:/srv/; ssh ec2-user@10.0.0.9"
    )
    assert calls[4]["response"] == (
        "npm i react@18.2.0; git checkout HEAD@{1}; sftp://user:<REDACTED:url-password>@host/f"
    )


def test_a_shell_prompts_account_and_a_devices_owner_are_redacted_and_system_prompts_stay() -> None:
    """A pasted terminal starts each command with its prompt (`jdoe@host:~/src$`, zsh's `jdoe@Host ~
    %`, Red Hat's `[jdoe@host src]$`, Git Bash's `… MINGW64`), whose account then goes wherever the
    trajectory says it; Ubuntu names the host after the account, a Mac after its owner
    (`Janes-MacBook-Pro`, `Jane's MacBook Pro`). `root`'s and `ubuntu`'s prompts, a git remote, a
    product's "Apple's iPhone" and "Today's iPad" stay."""
    trajectory = _trajectory(
        ("(base) mchen@mchen-ThinkPad-X1:~/src/app$ git status", "ok mchen, clean"),
        ("jdoe@Janes-MacBook-Pro ~ % ls", "[rpatel@web-01 logs]$ tail app.log"),
        ("JaneDoe@DESKTOP-4K2 MINGW64 ~/repo (main)", "AirDrop to Jane Doe's iPhone failed"),
        (
            "root@ip-10-0-1-5:/# ls; ubuntu@build:~$ make; git@github.com:acme/app.git",
            "Apple's iPhone 15 and Today's iPad deals; Work-MacBook-Pro",
        ),
    )
    _strict().redact_sensitive(trajectory)
    calls = [call for step in trajectory["steps"] for call in step["llmCalls"]]
    text = json.dumps(trajectory)
    for value in ("mchen", "jdoe", "Janes", "rpatel", "JaneDoe", "Jane Doe"):
        assert value not in text
    assert (
        calls[0]["userPrompt"] == "(base) <PII:USERNAME:1>@<PII:USERNAME:1>-ThinkPad-X1:~/src/app$ git status"
    )
    assert calls[0]["response"] == "ok <PII:USERNAME:1>, clean"
    assert calls[1]["userPrompt"] == "<PII:USERNAME:2>@<PII:PERSON:1>-MacBook-Pro ~ % ls"
    assert calls[1]["response"] == "[<PII:USERNAME:3>@web-01 logs]$ tail app.log"
    assert calls[2]["response"] == "AirDrop to <PII:PERSON:2>'s iPhone failed"
    assert (
        calls[3]["userPrompt"] == "root@ip-10-0-1-5:/# ls; ubuntu@build:~$ make; git@github.com:acme/app.git"
    )
    assert calls[3]["response"] == "Apple's iPhone 15 and Today's iPad deals; Work-MacBook-Pro"


def test_a_files_owner_ids_user_and_the_environments_account_are_redacted() -> None:
    """`ls -l` names each file's owner (and Linux its own group), `id` the user, `env` and a tool's
    environment the account (`USER=`, `LOGNAME=`, `{"USER": …}`) and a CI run its person
    (`GITHUB_ACTOR=`); each went to the datasets. `root`, `www-data`, a shared group (`staff`), a
    command substitution and code reading the variable stay."""
    trajectory = _trajectory(
        (
            "ls -la",
            "-rw-r--r--@  1 jdoe  staff   1.2K Dec  7 09:12 notes.md\n"
            "drwxr-xr-x  5 mkowalski mkowalski 4096 src",
        ),
        ("id; env", "uid=501(tnguyen) gid=20(staff)\nLOGNAME=afischer\nGITHUB_ACTOR=octocat-jane"),
        ("printenv", '{"USER": "rpatel", "PATH": "/usr/bin"}'),
        (
            "drwxr-xr-x 2 www-data www-data 4096 Dec 7 html; uid=0(root) gid=0(root)",
            'export USER=$(whoami); USER = os.environ["USER"]',
        ),
    )
    _strict().redact_sensitive(trajectory)
    calls = [call for step in trajectory["steps"] for call in step["llmCalls"]]
    text = json.dumps(trajectory)
    for value in ("jdoe", "mkowalski", "tnguyen", "afischer", "octocat-jane", "rpatel"):
        assert value not in text
    assert calls[0]["response"] == (
        "-rw-r--r--@  1 <PII:USERNAME:1>  staff   1.2K Dec  7 09:12 notes.md\n"
        "drwxr-xr-x  5 <PII:USERNAME:2> <PII:USERNAME:2> 4096 src"
    )
    assert calls[1]["response"] == (
        "uid=501(<PII:USERNAME:3>) gid=20(staff)\nLOGNAME=<PII:USERNAME:4>\nGITHUB_ACTOR=<PII:USERNAME:5>"
    )
    assert calls[2]["response"] == '{"USER": "<PII:USERNAME:6>", "PATH": "/usr/bin"}'
    assert calls[3]["userPrompt"] == "drwxr-xr-x 2 www-data www-data 4096 Dec 7 html; uid=0(root) gid=0(root)"
    assert calls[3]["response"] == 'export USER=$(whoami); USER = os.environ["USER"]'


def test_a_patients_name_as_fhir_writes_it_is_redacted() -> None:
    """A health record's API (FHIR) gives a person's name in parts, `{"family": …, "given": […]}`, in a
    tool's JSON result, the trajectory's metadata or pasted into a prompt; each part is a name, and
    said in a prompt it is the same person. A font's `family` is no one's."""
    patient = {
        "resourceType": "Patient",
        "name": [
            {"use": "official", "family": "Chalmers", "given": ["Peter", "James"], "text": "Peter Chalmers"}
        ],
    }
    trajectory = {
        "trajectoryId": "t",
        "steps": [
            {
                "llmCalls": [
                    {"userPrompt": "Summarise Mr Chalmers's record"},
                    {"userPrompt": 'Compare with {"family": "Okafor", "given": ["Ngozi"]} please'},
                    {"userPrompt": '{"given": "Peter", "city": "Boston"}'},
                ],
                "toolResult": json.dumps(patient),
            }
        ],
        "metadata": {"patient": patient, "style": {"family": "Roboto", "size": 12}},
    }
    _strict().redact_sensitive(trajectory)
    stored = json.dumps(trajectory)
    assert not any(name in stored for name in ("Chalmers", "Peter", "James", "Okafor", "Ngozi"))
    assert "Boston" in stored
    (name,) = json.loads(trajectory["steps"][0]["toolResult"])["name"]
    assert name["family"].startswith("<PII:PERSON:") and name["given"][0].startswith("<PII:PERSON:")
    assert trajectory["metadata"]["patient"]["name"][0]["family"] == name["family"]
    assert trajectory["metadata"]["style"]["family"] == "Roboto"


def test_a_timestamp_in_micro_or_nanoseconds_is_no_card_number() -> None:
    """A trace's or a log's time since the epoch in milliseconds, microseconds or nanoseconds passes a
    card's checksum one time in ten (these four do): it was redacted as a card number. Cards, typed
    whole or in groups, still are."""
    text = (
        "span start_us=1733600100780963 dur=12\ntimestamp_us: 1733600030437866\n"
        "t=1733600225432 end_ns=1733600225437259007\ncard 4111111111111111, 5555 5555 5555 4444"
    )
    redacted = _strict().redact(text)
    assert redacted.splitlines()[:3] == text.splitlines()[:3]
    assert redacted.splitlines()[3] == "card <PII:CREDIT_CARD:1>, <PII:CREDIT_CARD:2>"


def test_a_time_in_seconds_or_of_the_day_is_no_national_id_or_phone_number() -> None:
    """A float's whole part is no identifier: a record's `"createdAt": 1466801808.595` (as AWS and
    Python's logging write a time in seconds) passes the NHS checksum, and was a UK NHS number. A time
    of day's seconds, fraction and offset (`38.034000-06`, as `datetime.isoformat()` writes a local time)
    were a phone number's three groups. An NHS number and a phone number said as one still are."""
    times = '{"createdAt": 1466801808.595, "updatedAt": "2025-01-21T11:32:38.034000-06:00"}'
    said = "My NHS number is 9434765919. Call me at 10:30: 415-555-0132."
    redacted = _strict().redact(f"{times}\n{said}")
    assert redacted.splitlines() == [
        times,
        "My NHS number is <PII:UK_NHS:1>. Call me at 10:30: <PII:PHONE_NUMBER:1>.",
    ]


def test_an_active_directory_account_is_redacted() -> None:
    """An agent administering Windows reads accounts from Active Directory: LDIF's and PowerShell's
    `sAMAccountName` (a list's `SamAccountName : jdoe`, JSON's), and the account `Get-ADUser` and its
    kin are given; a query by filter names no one, and `Administrator` and the built-in groups and
    accounts (`sAMAccountName` names groups too) stay."""
    text = (
        "dn: CN=Tam Nguyen,OU=Staff,DC=corp,DC=example\nsAMAccountName: tnguyen\n"
        "PS> Get-ADUser -Identity rpatel -Properties *\nSamAccountName    : rpatel\n"
        'Set-ADUser "afischer" -Title Engineer\n{"sAMAccountName": "mkowalski"}\n'
        'Get-ADUser -Filter * -SearchBase "OU=Staff,DC=corp"\nsamaccountname: Administrator\n'
        '"SAMAccountName": "Replicator", "SAMAccountName": "krbtgt"'
    )
    assert _strict().redact(text) == (
        "dn: CN=<PII:PERSON:1>,OU=Staff,DC=corp,DC=example\nsAMAccountName: <PII:USERNAME:1>\n"
        "PS> Get-ADUser -Identity <PII:USERNAME:2> -Properties *\nSamAccountName    : <PII:USERNAME:2>\n"
        'Set-ADUser "<PII:USERNAME:3>" -Title Engineer\n{"sAMAccountName": "<PII:USERNAME:4>"}\n'
        'Get-ADUser -Filter * -SearchBase "OU=Staff,DC=corp"\nsamaccountname: Administrator\n'
        '"SAMAccountName": "Replicator", "SAMAccountName": "krbtgt"'
    )


def test_a_process_listings_an_open_files_and_an_ssh_configs_account_are_redacted() -> None:
    """A coding agent diagnosing a port or a login prints `ps aux` (USER before the PID), `lsof` (USER
    after it), `stat` (`Uid: ( 501/ jdoe)`), `ssh-add -l` (the key's comment) and `~/.ssh/config` (a
    host's `User`, however many of its options come before); `root`'s rows stay."""
    text = (
        "USER       PID  %CPU %MEM      VSZ    RSS   TT  STAT STARTED      TIME COMMAND\n"
        "tnguyen  41237  12.3  1.4 412345 234567   ??  S    9:12AM   0:03.21 node server.js\n"
        "root         1   0.0  0.1 123456   1234   ??  Ss   8:00AM   0:01.00 /sbin/launchd\n"
        "node    41237  rpatel   23u  IPv4 0x1234      0t0  TCP *:3000 (LISTEN)\n"
        "Access: (0644/-rw-r--r--)  Uid: (  501/   afischer)   Gid: (   20/   staff)\n"
        "256 SHA256:Xk9mQ2LpZr8T5vB3nW7yC4dF6gH1jK0sA2eR5tY8uIo jdoe@laptop (ED25519)\n"
        "Host prod\n  HostName 10.0.4.17\n  User mkowalski\n  IdentityFile ~/.ssh/id_ed25519\n"
        "Host build\n  HostName build.internal\n  Port 2222\n  IdentityFile ~/.ssh/id_build\n"
        "  IdentitiesOnly yes\n  ForwardAgent yes\n  User tnguyen"
    )
    assert _strict().redact(text) == (
        "USER       PID  %CPU %MEM      VSZ    RSS   TT  STAT STARTED      TIME COMMAND\n"
        "<PII:USERNAME:1>  41237  12.3  1.4 412345 234567   ??  S    9:12AM   0:03.21 node server.js\n"
        "root         1   0.0  0.1 123456   1234   ??  Ss   8:00AM   0:01.00 /sbin/launchd\n"
        "node    41237  <PII:USERNAME:2>   23u  IPv4 0x1234      0t0  TCP *:3000 (LISTEN)\n"
        "Access: (0644/-rw-r--r--)  Uid: (  501/   <PII:USERNAME:3>)   Gid: (   20/   staff)\n"
        "256 SHA256:Xk9mQ2LpZr8T5vB3nW7yC4dF6gH1jK0sA2eR5tY8uIo <PII:USERNAME:4>@laptop (ED25519)\n"
        "Host prod\n  HostName 10.0.4.17\n  User <PII:USERNAME:5>\n  IdentityFile ~/.ssh/id_ed25519\n"
        "Host build\n  HostName build.internal\n  Port 2222\n  IdentityFile ~/.ssh/id_build\n"
        "  IdentitiesOnly yes\n  ForwardAgent yes\n  User <PII:USERNAME:1>"
    )


def test_a_database_connections_account_is_redacted_and_code_and_service_accounts_stay() -> None:
    """A coding agent connecting to a database writes the account into a libpq connection string
    (`psql "host=… user=jdoe …"`, before or after the other keywords), a database URL's query (JDBC's
    `?user=`, MongoDB's `&username=`) or an ODBC or ADO.NET string (`…;User ID=jdoe;…`, `UID=…;`). A
    service account (`postgres`, SQL Server's `sa`), code's keyword arguments (`user=DB_USER,`,
    `user='demo',`) and statements (`var uid = uid;`) and `user=` alone stay."""
    text = (
        'psql "host=db.internal port=5432 user=jdoe dbname=app sslmode=require"\n'
        'pg_dump "host=db dbname=app user=afischer" > app.sql\n'
        'connect("user=rpatel password=hunter22 host=10.0.0.5 dbname=orders")\n'
        "DATABASE_URL=jdbc:postgresql://db:5432/app?user=mchen&ssl=true\n"
        "mongodb://db.example.com/app?authSource=admin&username=kwong\n"
        "host=db user=postgres dbname=app\n"
        "connect(host=DB_HOST, user=DB_USER, port=5432)\n"
        "filesystem('ftp', host='test.rebex.net', user='demo', port=21)\n"
        "Host=db.internal;Username=mchen;Password=x;Database=app\n"
        "UID=tnguyen;Trusted_Connection=yes;Server=db\n"
        "Data Source=db;Initial Catalog=app;User Id=sa;Password=x;\n"
        "var host = opts.host; var uid = uid;\n"
        "user=lmorgan"
    )
    assert _strict().redact(text) == (
        'psql "host=db.internal port=5432 user=<PII:USERNAME:1> dbname=app sslmode=require"\n'
        'pg_dump "host=db dbname=app user=<PII:USERNAME:2>" > app.sql\n'
        'connect("user=<PII:USERNAME:3> password=<REDACTED:keyed-secret> host=10.0.0.5 dbname=orders")\n'
        "DATABASE_URL=jdbc:postgresql://db:5432/app?user=<PII:USERNAME:4>&ssl=true\n"
        "mongodb://db.example.com/app?authSource=admin&username=<PII:USERNAME:5>\n"
        "host=db user=postgres dbname=app\n"
        "connect(host=DB_HOST, user=DB_USER, port=5432)\n"
        "filesystem('ftp', host='test.rebex.net', user='demo', port=21)\n"
        "Host=db.internal;Username=<PII:USERNAME:4>;Password=x;Database=app\n"
        "UID=<PII:USERNAME:6>;Trusted_Connection=yes;Server=db\n"
        "Data Source=db;Initial Catalog=app;User Id=sa;Password=x;\n"
        "var host = opts.host; var uid = uid;\n"
        "user=lmorgan"
    )


def test_a_urls_account_is_redacted_with_its_password_and_service_accounts_stay() -> None:
    """A connection URL names its account before the password (`postgres://jdoe:…@db`), which the
    credential rule redacts and leaves the account; an SSH URL names it alone (`ssh://jdoe@buildbox`).
    Service and token accounts (`app`, `x-access-token`, `guest`), a URL with a port and an address in
    its query stay accounts of nobody."""
    text = (
        "DATABASE_URL=postgres://jdoe:S3cretPassw0rd42@db.example.com:5432/app\n"
        "curl https://jane.smith:tok3nV4lue99@api.example.com/v1\n"
        "ssh://mchen@buildbox:22/srv\n"
        "postgresql+psycopg2://app:qpFnjjdgeZXPDPjSGRnhHcxpxoMK@db.internal/app\n"
        "https://x-access-token:ghs_16C7e42F292c6912E7710c838347Ae178B4a@github.com/o/r.git\n"
        "amqp://guest:guest@localhost:5672/\n"
        "http://localhost:8080?next=/inbox&ref=@home"
    )
    assert _strict().redact(text) == (
        "DATABASE_URL=postgres://<PII:USERNAME:1>:<REDACTED:url-password>@db.example.com:5432/app\n"
        "curl https://<PII:USERNAME:2>:<REDACTED:url-password>@api.example.com/v1\n"
        "ssh://<PII:USERNAME:3>@buildbox:22/srv\n"
        "postgresql+psycopg2://app:<REDACTED:url-password>@db.internal/app\n"
        "https://x-access-token:<REDACTED:url-password>@github.com/o/r.git\n"
        "amqp://guest:<REDACTED:url-password>@localhost:5672/\n"
        "http://localhost:8080?next=/inbox&ref=@home"
    )


def test_a_urls_account_after_its_windows_domain_is_redacted_and_the_domain_stays() -> None:
    """SMB writes a domain account as `smb://CORP;jdoe@host`, a connection URL as `CORP\\jdoe`, mostly
    percent-encoded (`CORP%5Cjdoe`): the account goes, the organisation's domain and a workgroup's
    guest stay."""
    text = (
        "mount smb://CORP;mgarcia@fileserver/share\n"
        "sqlserver://CORP%5Ctnguyen:S3cretPassw0rd42@db.example.com/app\n"
        "sqlserver://corp.example.com\\okafor@db/app\n"
        "smb://WORKGROUP;guest@nas/public"
    )
    assert _strict().redact(text) == (
        "mount smb://CORP;<PII:USERNAME:1>@fileserver/share\n"
        "sqlserver://CORP%5C<PII:USERNAME:2>:<REDACTED:url-password>@db.example.com/app\n"
        "sqlserver://corp.example.com\\<PII:USERNAME:3>@db/app\n"
        "smb://WORKGROUP;guest@nas/public"
    )


def test_a_text_quoting_a_string_with_backslash_escapes_is_read_as_the_string_reads() -> None:
    """A traceback quotes a Windows path with its backslashes doubled (Python's `repr`), PHP's JSON
    escapes every slash (`postgres:\\/\\/…`), a JSON text may write `@` as `\\u0040`: each is read as
    the string it quotes, and what is found there is redacted as written. Code's own escapes stay."""
    text = (
        "FileNotFoundError: [Errno 2] No such file: 'C:\\\\Users\\\\mgarcia\\\\data.csv'\n"
        '{"dsn":"postgres:\\/\\/tnguyen:S3cretPassw0rd42@db.example.com\\/app","to":"okafor\\u0040example.com"}\n'
        'print("a \\"quoted\\" word", re.findall(r"\\\\d+", line))'
    )
    assert _strict().redact(text) == (
        "FileNotFoundError: [Errno 2] No such file: 'C:\\\\Users\\\\<PII:USERNAME:1>\\\\data.csv'\n"
        '{"dsn":"postgres:\\/\\/<PII:USERNAME:2>:<REDACTED:url-password>@db.example.com\\/app",'
        '"to":"<PII:EMAIL_ADDRESS:1>"}\n'
        'print("a \\"quoted\\" word", re.findall(r"\\\\d+", line))'
    )


def test_an_account_a_terminals_commands_name_is_redacted_and_code_and_prose_stay() -> None:
    """A coding agent's terminal names accounts in its commands and in SSH's answers: the account a
    command runs as, switches to, makes or gives a file to, a home folder by its account (`~jdoe/`),
    PowerShell's prompt, SSH's `jdoe@10.0.0.5:` and `jdoe@host's password:`, `who`'s and `last`'s
    session before its terminal, a web server's access log's account. Service accounts, code's
    `self.passwd` and `~mask/2`, prose about the commands and Spanish prose's "su" stay."""
    text = (
        "$ sudo -u mgarcia psql\n"
        "crontab -u okafor -l\n"
        "su - tnguyen\n"
        "sudo usermod -aG docker akowalski\n"
        "chown -R lpetrov:staff src/\n"
        "cd ~hsato/projects\n"
        "PS C:\\Users\\mgarcia> python main.py\n"
        "okafor@10.0.0.5: Permission denied (publickey).\n"
        "tnguyen@buildbox's password:\n"
        "rmendes  pts/0        2026-12-07 10:00 (10.0.0.7)\n"
        '10.0.0.7 - ayilmaz [07/Dec/2026:10:00:01 +0100] "GET /admin HTTP/1.1" 200 512\n'
        '10.0.0.7 - - [07/Dec/2026:10:00:02 +0100] "GET / HTTP/1.1" 200 512\n'
        "sudo -u postgres psql; chown root:root /etc/hosts; git@10.0.0.5: denied\n"
        "self.passwd = passwd; x = ~mask/2\n"
        "adduser gives you more configuration than useradd, and fs: fix chown abort in\n"
        "the console is on tty1 and it works\n"
        "Juan le dio el libro a su amigo"
    )
    assert _strict().redact(text) == (
        "$ sudo -u <PII:USERNAME:1> psql\n"
        "crontab -u <PII:USERNAME:2> -l\n"
        "su - <PII:USERNAME:3>\n"
        "sudo usermod -aG docker <PII:USERNAME:4>\n"
        "chown -R <PII:USERNAME:5>:staff src/\n"
        "cd ~<PII:USERNAME:6>/projects\n"
        "PS C:\\Users\\<PII:USERNAME:1>> python main.py\n"
        "<PII:USERNAME:2>@10.0.0.5: Permission denied (publickey).\n"
        "<PII:USERNAME:3>@buildbox's password:\n"
        "<PII:USERNAME:7>  pts/0        2026-12-07 10:00 (10.0.0.7)\n"
        '10.0.0.7 - <PII:USERNAME:8> [07/Dec/2026:10:00:01 +0100] "GET /admin HTTP/1.1" 200 512\n'
        '10.0.0.7 - - [07/Dec/2026:10:00:02 +0100] "GET / HTTP/1.1" 200 512\n'
        "sudo -u postgres psql; chown root:root /etc/hosts; git@10.0.0.5: denied\n"
        "self.passwd = passwd; x = ~mask/2\n"
        "adduser gives you more configuration than useradd, and fs: fix chown abort in\n"
        "the console is on tty1 and it works\n"
        "Juan le dio el libro a su amigo"
    )


def test_a_directorys_calendars_and_certificates_people_are_redacted_and_its_groups_stay() -> None:
    """An IT agent's directory listing names people by their common name (`CN=Jane Doe,OU=…`, Active
    Directory's `CN=Doe\\, Jane`) and LDAP accounts by `uid=`; a calendar invitation its attendees
    (`ATTENDEE;CN=…`), a certificate its subject (`CN = …`), a vCard its `FN` and `N`. A directory's
    groups (`CN=Domain Admins`, `CN=Remote Desktop Users`) and a host's certificate stay."""
    text = (
        "DistinguishedName : CN=Maria Garcia,OU=Staff,DC=corp,DC=example,DC=com\n"
        "CN=Okafor\\, Chidi,OU=Staff,DC=corp,DC=com\n"
        "uid=tnguyen,ou=people,dc=example,dc=com\n"
        'ATTENDEE;CN="Hana Sato";ROLE=REQ-PARTICIPANT:mailto:hs@corp.com\n'
        "subject=C = US, O = Acme, CN = Anna Kowalski\n"
        "BEGIN:VCARD\nFN:Lars Petrov\nN:Petrov;Lars;;;\nEND:VCARD\n"
        "CN=Domain Admins,CN=Users,DC=corp,DC=com; CN=Remote Desktop Users,CN=Builtin\n"
        "subject=CN = www.example.com"
    )
    assert _strict().redact(text) == (
        "DistinguishedName : CN=<PII:PERSON:1>,OU=Staff,DC=corp,DC=example,DC=com\n"
        "CN=<PII:PERSON:2>,OU=Staff,DC=corp,DC=com\n"
        "uid=<PII:USERNAME:1>,ou=people,dc=example,dc=com\n"
        'ATTENDEE;CN="<PII:PERSON:3>";ROLE=REQ-PARTICIPANT:mailto:<PII:EMAIL_ADDRESS:1>\n'
        "subject=C = US, O = Acme, CN = <PII:PERSON:4>\n"
        "BEGIN:VCARD\nFN:<PII:PERSON:5>\nN:<PII:PERSON:6>;<PII:PERSON:7>;;;\nEND:VCARD\n"
        "CN=Domain Admins,CN=Users,DC=corp,DC=com; CN=Remote Desktop Users,CN=Builtin\n"
        "subject=CN = www.example.com"
    )


def test_a_password_files_and_a_windows_commands_credentials_and_accounts_are_redacted() -> None:
    """A PostgreSQL password file's line (`host:port:db:user:password`), git's credential helper's
    answer (`username=…` on its line), Windows' `net use … /user:CORP\\jdoe password` and `runas
    /user:`: the password went to the datasets, and the account with it. A clock's colons, `net use`'s
    `*` (it asks for the password) and code's `username=self.username,` stay."""
    text = (
        "db.example.com:5432:app:mgarcia:S3cr3tP4ssw0rd\n"
        "protocol=https\nhost=github.com\nusername=tnguyen\n"
        "net use Z: \\\\fs\\share /user:CORP\\okafor Wint3rIsC0ming\n"
        "runas /user:CORP\\hsato cmd\n"
        "net use Y: \\\\fs\\public /user:CORP\\okafor * /persistent:yes\n"
        "10:15:30:123:message here\n"
        "    username=self.username,"
    )
    assert _strict().redact(text) == (
        "db.example.com:5432:app:<PII:USERNAME:1>:<REDACTED:pgpass>\n"
        "protocol=https\nhost=github.com\nusername=<PII:USERNAME:2>\n"
        "net use Z: \\\\fs\\share /user:CORP\\<PII:USERNAME:3> <REDACTED:command-password>\n"
        "runas /user:CORP\\<PII:USERNAME:4> cmd\n"
        "net use Y: \\\\fs\\public /user:CORP\\<PII:USERNAME:3> * /persistent:yes\n"
        "10:15:30:123:message here\n"
        "    username=self.username,"
    )


def test_a_downloads_account_and_a_signed_urls_signature_are_redacted() -> None:
    """`curl -u jdoe:…` and `wget --user=jdoe` kept the account (their passwords were redacted); an
    Azure shared access signature (`?sv=…&sig=…`) grants what its URL names until it expires. Service
    accounts (`neo4j`, `SRVC_JENKINS`), a placeholder's `myusername` and a variable stay."""
    text = (
        "curl -u mgarcia:S3cr3tP4ssw0rd https://api.example.com\n"
        "wget --user=tnguyen --ask-password https://files.example.com/a.zip\n"
        "https://acct.blob.core.windows.net/c/f.txt?sv=2022-11-02&sp=r&sig=Qx3bZ9p%2FkL7mN2vR8sT4uW6yA1cE5%3D\n"
        'curl --user neo4j:x http://db:7474/; curl -u "myusername" http://x; curl -u "SRVC_JENKINS:${APPID}"'
    )
    assert _strict().redact(text) == (
        "curl -u <PII:USERNAME:1>:<REDACTED:command-password> https://api.example.com\n"
        "wget --user=<PII:USERNAME:2> --ask-password https://files.example.com/a.zip\n"
        "https://acct.blob.core.windows.net/c/f.txt?sv=2022-11-02&sp=r&sig=<REDACTED:url-signature>\n"
        'curl --user neo4j:x http://db:7474/; curl -u "myusername" http://x; curl -u "SRVC_JENKINS:${APPID}"'
    )


def test_whoamis_answer_in_a_transcript_is_redacted_and_roots_stays() -> None:
    """A terminal's transcript asks who the user is (`$ whoami`, `npm whoami`, `echo $USER`, Windows'
    `PS C:\\> whoami`, which answers after the machine's name) and prints the account on the next line;
    `root`'s answer and prose about the command stay."""
    text = (
        "$ whoami\njdoe\n$ npm whoami\nnpm-jane\necho $USER\nmkowalski\n"
        "PS C:\\Users\\x> whoami\ndesktop-7k2l9q\\tnguyen\n"
        "# whoami\nroot\nthe whoami command\nprints your name"
    )
    assert _strict().redact(text) == (
        "$ whoami\n<PII:USERNAME:1>\n$ npm whoami\n<PII:USERNAME:2>\necho $USER\n<PII:USERNAME:3>\n"
        "PS C:\\Users\\x> whoami\ndesktop-7k2l9q\\<PII:USERNAME:4>\n"
        "# whoami\nroot\nthe whoami command\nprints your name"
    )


def test_an_accounts_field_and_a_login_beside_its_password_are_redacted_and_types_stay() -> None:
    """GitHub's API names every pull request's, issue's and commit's person by `"login"`, a config and a
    form by `username`, a support reply gives `Login: … Password: …`: each account went to the
    datasets. A bot, a service account (`admin`, `dagster`), a type (`username: str`, `login: String!`),
    code's variable (`username = self.username`) or sentinel (`"current"`) and a log's "Login: failed"
    stay."""
    text = (
        '{"user": {"login": "octocat-jane", "id": 583231}, "author": {"login": "dependabot[bot]"}}\n'
        "username: mkowalski\n"
        'user_name = "tnguyen"\n'
        "Here you go - Login: rpatel42 Password: hunter22\n"
        '"username": "admin"\n    username: Optional[str] = None\nusername: str\n  login: String!\n'
        "username = self.username\nLogin: failed\n"
        'username = "current"\n    username="dagster",'
    )
    assert _strict().redact(text) == (
        '{"user": {"login": "<PII:USERNAME:1>", "id": 583231}, "author": {"login": "dependabot[bot]"}}\n'
        "username: <PII:USERNAME:2>\n"
        'user_name = "<PII:USERNAME:3>"\n'
        "Here you go - Login: <PII:USERNAME:4> Password: <REDACTED:keyed-secret>\n"
        '"username": "admin"\n    username: Optional[str] = None\nusername: str\n  login: String!\n'
        "username = self.username\nLogin: failed\n"
        'username = "current"\n    username="dagster",'
    )


def test_a_number_an_organisation_files_a_person_under_is_redacted_and_references_stay() -> None:
    """A patient's medical record number, a health plan member's, a policy's, an employee's and a
    student's, given as one (HIPAA's identifiers beside the national ids), and a national id after
    "Tax ID:" or "National ID:" (which read as a reference's `id:`); a bare `id:`, an order's id, a
    retry policy and a table's small `employee_id` stay."""
    text = (
        "Patient MRN: 00482913, admitted 2026-11-02\nMedical record number: A0049281\n"
        "Member ID: XJH449201833; policy no. HX-4491-2210-77\nEmployee ID: E-204918, student id 20194487\n"
        "Tax ID: 94-1234567\nNational ID: 8812049931\n"
        'id: 88120499, order id: 88120499, retry policy: 3, {"employee_id": 25}'
    )
    assert _strict().redact(text) == (
        "Patient MRN: <PII:RECORD_NUMBER:1>, admitted 2026-11-02\n"
        "Medical record number: <PII:RECORD_NUMBER:2>\n"
        "Member ID: <PII:RECORD_NUMBER:3>; policy no. <PII:RECORD_NUMBER:4>\n"
        "Employee ID: <PII:RECORD_NUMBER:5>, student id <PII:RECORD_NUMBER:6>\n"
        "Tax ID: <PII:NATIONAL_ID:1>\nNational ID: <PII:NATIONAL_ID:2>\n"
        'id: 88120499, order id: 88120499, retry policy: 3, {"employee_id": 25}'
    )


def test_a_window_our_recognizers_could_find_nothing_in_holds_nothing_of_theirs() -> None:
    """The finder skips Presidio's analysis of a window when each recognizer of its kinds says none of
    its patterns matches there (`could_find`): over the corpus's texts, with their values and near
    misses, and each text's halves, whatever one of ours finds it was told it could."""
    from training_pipeline.privacy.personal.engine import PHONE_REGIONS
    from training_pipeline.privacy.personal.recognizers import own_recognizers

    texts = [json.loads(line)["text"] for line in (REPO / "bench/data/personal_corpus.jsonl").open()]
    texts += [half for text in texts for half in (text[: len(text) // 2], text[len(text) // 2 :])]
    found = 0
    for recognizer in own_recognizers(PHONE_REGIONS):
        if not hasattr(recognizer, "could_find"):
            continue
        entities = list(recognizer.supported_entities)
        for text in texts:
            if recognizer.analyze(text, entities):
                found += 1
                assert recognizer.could_find(text, entities), (type(recognizer).__name__, text)
    assert found > 1000


def _analyses(finder: PersonalDataFinder, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The texts `finder`'s Presidio analyzer is given from now on, each as it is analysed."""
    analyzer = finder._analyzer
    analysed: list[str] = []
    real = analyzer.analyze
    monkeypatch.setattr(analyzer, "analyze", lambda text, **kw: analysed.append(text) or real(text, **kw))
    return analysed


def test_a_window_whose_values_are_all_no_ones_costs_no_analysis(monkeypatch: pytest.MonkeyPatch) -> None:
    """A cue opens a window (`postgres://…@`), and Presidio's analysis of it (a spaCy pass over it)
    runs only where a recognizer finds a value it accepts there: a service account's URL, in every
    trajectory of a day, does not pay for it; a person's does, and is found."""
    finder = PersonalDataFinder(frozenset({"USERNAME"}))
    analysed = _analyses(finder, monkeypatch)
    service = "connect to postgres://app:<REDACTED:url-password>@db.internal:5432/orders, then migrate"
    assert finder.spans(service) == []
    assert analysed == []
    person = service.replace("://app:", "://rpatel:")
    assert [person[start:end] for start, end, _ in finder.spans(person)] == ["rpatel"]
    assert len(analysed) == 1


def test_a_redactions_placeholder_costs_no_analysis(monkeypatch: pytest.MonkeyPatch) -> None:
    """A placeholder is made of words cues are made of (`USERNAME:`, `EMAIL_ADDRESS`), and each text a
    trajectory's redaction changed is read again by the datasets' checks: a placeholder opens no
    window. A cue beside one still does, and its value is found."""
    finder = PersonalDataFinder(kinds_from_setting("all"))
    analysed = _analyses(finder, monkeypatch)
    text = "erin: <PII:USERNAME:1>, can you mail <PII:EMAIL_ADDRESS:2> the report for <PII:PERSON:1>?"
    assert finder.spans(text) == []
    assert analysed == []
    cued = text + ' {"login": "rpatel"}'
    assert [cued[start:end] for start, end, _ in finder.spans(cued)] == ["rpatel"]


def test_a_long_tables_column_costs_a_few_analyses_not_one_a_row(monkeypatch: pytest.MonkeyPatch) -> None:
    """A tool's CSV of 300 people: every name and phone under its column is found, and Presidio
    analyses a column a window of rows at a time; one analysis a cell made a large table cost seconds."""
    finder = PersonalDataFinder(frozenset({"PERSON", "PHONE_NUMBER"}))
    analysed = _analyses(finder, monkeypatch)
    first, last = ["Maria", "Chidi", "Hana", "Lars", "Anna"], ["Garcia", "Okafor", "Sato", "Petrov", "Novak"]
    rows = [f"{first[i % 5]} {last[i // 5 % 5]},{4155550000 + i},Lyon" for i in range(300)]
    text = "name,phone,city\n" + "\n".join(rows)
    found = [text[start:end] for start, end, _ in finder.spans(text)]
    assert found == [value for row in rows for value in row.split(",")[:2]]
    assert len(analysed) < 60


@pytest.mark.parametrize("built_before_fork", [False, True], ids=["workers' own", "built before fork"])
def test_a_day_with_personal_data_gives_the_same_datasets_on_one_process_and_on_the_pool(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, built_before_fork: bool
) -> None:
    """Placeholders are numbered per trajectory, so how the day is split across workers (small shares
    here) changes nothing: the files are byte for byte those of one process. The workers' analyzer is
    built by the build's process before they are forked for a large input (forced here), by each
    worker for a small one (the build's process then never builds it)."""
    from training_pipeline.datasets import build
    from training_pipeline.datasets.build import build_datasets
    from training_pipeline.privacy.personal import engine

    if built_before_fork:
        monkeypatch.setattr(build, "SHARED_FILTER_FROM_BYTES", 0)

    people = [("Jane Doe", "jane.doe@example.com"), ("Rui Costa", "rui.costa@example.pt")]
    lines = []
    for n in range(40):
        name, email = people[n % 2]
        trajectory = _trajectory(
            (f"My name is {name}, mail me at {email} or call +1 415 555 01{n:02d}", f"Thanks {name}!"),
            (f"also cc {people[(n + 1) % 2][1]}", f"Done, {email} and the other are on it."),
        )
        # a session named after its user's number: redacted, and kept apart by the key on every worker
        trajectory["trajectoryId"] = f"t{n}" if n % 4 else f"session-+1415555{n:04d}"
        lines.append(json.dumps(trajectory))
    source = tmp_path / "day.jsonl"
    source.write_text("\n".join(lines) + "\n")
    one, pool = tmp_path / "one", tmp_path / "pool"
    key = b"k" * 32
    build_datasets(source, one, _strict(id_key=key), workers=1)
    engine.analyzer.cache_clear()
    build_datasets(source, pool, _strict(id_key=key), workers=2, span_bytes=2048)
    assert engine.analyzer.cache_info().currsize == int(built_before_fork)
    files = sorted(p.name for p in one.iterdir())
    assert files == sorted(p.name for p in pool.iterdir())
    for name in files:
        if name == "trajectory_dataset_summary.json":  # says when it was made
            made = [json.loads((folder / name).read_text()) for folder in (one, pool)]
            assert [{k: v for k, v in m.items() if k != "generatedAt"} for m in made] == [
                {k: v for k, v in made[0].items() if k != "generatedAt"}
            ] * 2
            continue
        assert (one / name).read_bytes() == (pool / name).read_bytes(), name
    written = (one / "response_trajectories.jsonl").read_text()
    assert "jane.doe" not in written and "Rui Costa" not in written
    assert "<PII:EMAIL_ADDRESS:2>" in written  # the colleague's address, second in each trajectory
    # elizaOS's summary counts distinct trajectory ids: the ten sessions' redacted ids are ten
    summary = json.loads((one / "trajectory_dataset_summary.json").read_text())
    assert summary["taskMetrics"]["response"]["sourceTrajectoryCount"] == 40


def test_a_log_line_of_dates_ids_and_counts_never_brings_presidio_into_the_process() -> None:
    """Every stored text goes through the strict filter (`stored.safe_text`): a Dagster run's log lines
    hold days, run ids, paths and counts, and importing Presidio and spaCy for them would cost every
    run process seconds. Only a place that could hold someone's data is given to Presidio."""
    script = (
        "import sys\n"
        "from training_pipeline.privacy.stored import safe_text\n"
        "for line in [\n"
        "    'materialised 2026-11-24: 1,204 records in var/data/datasets/2026-11-24/response.jsonl',\n"
        "    'run 6f1c2a9e-4b7d-4e8a-9c3f-2d5b7a1e0c44 took 1733308800123 ms (step 12 of 40)',\n"
        "    'partition 2026-11-24 backfill 20261124-0001 at 2026-11-24T12:00:01Z, 98.4% done',\n"
        "]:\n"
        "    assert safe_text(line) == line, line\n"
        "print('presidio_analyzer' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=REPO)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "False"


def test_presidio_is_imported_without_transformers_which_stays_importable() -> None:
    """Presidio's package imports `transformers` where it is installed (seconds of CPU in every process
    that meets personal data, for an engine the filter never uses): the engine keeps it out, finds
    personal data all the same, and a later import of `transformers` still works."""
    pytest.importorskip("transformers")
    code = (
        "import sys\nfrom training_pipeline.privacy.filter import PrivacyFilter\n"
        "out = PrivacyFilter('strict', None, (), personal_data='all', ner_model='')"
        ".redact('mail jane.doe@example.com')\n"
        "print(out, 'transformers' in sys.modules)\n"
        "import transformers\nprint(bool(transformers.__version__))"
    )
    printed = fresh_python(code).split()
    assert printed == ["mail", "<PII:EMAIL_ADDRESS:1>", "False", "True"]
