"""The privacy filter: redact credentials and personal data, anonymise handles, drop trajectories of
private people.

The `elizaos` profile reproduces elizaOS app-training's filter exactly (its five patterns, then the
environment's secret values, on `systemPrompt`, `userPrompt` and `response`). The `strict` profile, the
default, adds every credential family in `profiles.strict_rules`, redacts secret values first (so they get
their precise label), then the personal data it is set to (`personal`: emails, phones, cards, ids,
addresses, names…) as typed placeholders numbered per trajectory, and does both in every other string of
the trajectory too, since the filtered trajectories are stored and shared as well.
"""

from __future__ import annotations

import fnmatch
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any, Literal

import hyperscan

from training_pipeline.environment import (
    ner_model_setting,
    personal_data_setting,
    process_environment,
    redaction_budget_seconds,
)
from training_pipeline.jscompat import utf16_len
from training_pipeline.privacy.budget import budget
from training_pipeline.privacy.credential_rule import Found, is_placeholder
from training_pipeline.privacy.entities import EntityDirectory
from training_pipeline.privacy.escapes import unescaped
from training_pipeline.privacy.id_key import apart, detached
from training_pipeline.privacy.literals import Literals
from training_pipeline.privacy.memo import MEMO_MAX_CHARS, TextMemo
from training_pipeline.privacy.personal import (
    ANALYZER_MODULE,
    PersonalDataFinder,
    Pseudonyms,
    Span,
    key_cue,
    kinds_from_setting,
    role_account_key,
)
from training_pipeline.privacy.prefilter import PatternDatabase
from training_pipeline.privacy.profiles import (
    PROFILES,
    SECRET_ENV_NAME,
    STRICT_SECRET_ENV_NAME,
    RuleSet,
)
from training_pipeline.privacy.strings import TEXT_FIELDS, Slot, TrajectoryStrings
from training_pipeline.trajectories.models import is_trace, iter_llm_calls

Profile = Literal["elizaos", "strict"]
HANDLE = re.compile(r"@[a-zA-Z0-9_.-]{2,}")
ENV_SECRET_LABEL = "env-secret"
_ENV_PLACEHOLDER = f"<REDACTED:{ENV_SECRET_LABEL}>"
_ENV_PLACEHOLDER_BYTES = _ENV_PLACEHOLDER.encode()
#: From this many environment secrets on, a text is cleared of them all by one Hyperscan scan: below it,
#: a `str.replace` pass per secret costs less than the scan's call.
_GATED_SECRETS = 4


def secret_env_values(
    profile: Profile, environ: Mapping[str, str] | None = None, names: str = "*"
) -> tuple[str, ...]:
    """Values of environment variables that look like secrets (8+ UTF-16 units, as elizaOS counts).

    `names` is a glob restricting which variables are considered at all (the reference runner only
    looks at `REFERENCE_SECRET_*`).
    """
    environ = process_environment() if environ is None else environ
    marker = SECRET_ENV_NAME if profile == "elizaos" else STRICT_SECRET_ENV_NAME
    values = [
        value
        for key, value in environ.items()
        if fnmatch.fnmatchcase(key, names) and marker.search(key) and utf16_len(value) >= 8
    ]
    if profile == "strict":  # longest first, so a value containing another is redacted whole
        values = sorted(dict.fromkeys(values), key=len, reverse=True)
    return tuple(values)


@dataclass
class FilterStats:
    """Counts that add up: `trajectories_in == kept + dropped_private`, and the per-rule redactions sum
    to `redaction_count` (which, as in elizaOS, includes redactions inside dropped trajectories)."""

    trajectories_in: int = 0
    kept: int = 0
    dropped_private: int = 0
    redactions: Counter[str] = field(default_factory=Counter)
    anonymization_count: int = 0
    dropped: list[dict[str, str]] = field(default_factory=list)

    def merge(self, other: FilterStats) -> None:
        """Add another filter's counts (e.g. a worker process's) to these."""
        self.trajectories_in += other.trajectories_in
        self.kept += other.kept
        self.dropped_private += other.dropped_private
        self.redactions.update(other.redactions)
        self.anonymization_count += other.anonymization_count
        self.dropped.extend(other.dropped)

    @property
    def redaction_count(self) -> int:
        return sum(self.redactions.values())

    def as_report(self) -> dict[str, Any]:
        return {
            "trajectoriesIn": self.trajectories_in,
            "kept": self.kept,
            "droppedPrivate": self.dropped_private,
            "redactionCount": self.redaction_count,
            "redactionsByRule": dict(sorted(self.redactions.items())),
            "anonymizationCount": self.anonymization_count,
            "dropped": self.dropped,
        }


class PrivacyFilter:
    def __init__(
        self,
        profile: Profile = "strict",
        directory: EntityDirectory | None = None,
        env_secrets: tuple[str, ...] = (),
        personal_data: str | frozenset[str] | None = None,
        ner_model: str | None = None,
        id_key: bytes | None = None,
    ) -> None:
        """`personal_data`: the kinds `strict` redacts (`kinds.kinds_from_setting`: `all`, `none` or a
        list; None: `TRAINING_PIPELINE_PERSONAL_DATA`, else all); `ner_model`: a spaCy pipeline that also
        finds names (None: `TRAINING_PIPELINE_NER_MODEL`, else none). `elizaos` redacts no personal data.
        `id_key`: what keeps trajectory ids the redaction changed apart (`id_key`; None: they may merge)."""
        if profile not in PROFILES:
            raise ValueError(f"unknown privacy profile {profile!r}; choose one of {sorted(PROFILES)}")
        self.profile = profile
        kinds = (
            frozenset()
            if profile == "elizaos"
            else (
                personal_data
                if isinstance(personal_data, frozenset)
                else kinds_from_setting(
                    personal_data if personal_data is not None else personal_data_setting()
                )
            )
        )
        #: what finds personal data (None: nothing is looked for)
        self.personal = (
            PersonalDataFinder(kinds, ner_model if ner_model is not None else ner_model_setting())
            if kinds
            else None
        )
        self.rules: RuleSet = PROFILES[profile]
        #: strict: the keyed rule, which tells a value a secret by the key it is held under
        #: (`keyed.secret_under`; imported here, as it brings the strict rule set's modules along, which
        #: `elizaos` never needs)
        self._keyed: ModuleType | None = None
        if profile == "strict":
            from training_pipeline.privacy import keyed

            self._keyed = keyed
        self.directory = directory
        self.env_secrets = env_secrets
        self.id_key = id_key
        self._secret_bytes = tuple(secret.encode("utf-8", "surrogatepass") for secret in env_secrets)
        # Many secret values are looked for in one scan, not a search each through every text (an
        # agent's environment holds a key or token per service it talks to). In memory only: it holds
        # the values.
        self._secret_gate = (
            PatternDatabase(
                list(self._secret_bytes),
                [hyperscan.HS_FLAG_SINGLEMATCH] * len(env_secrets),
                literal=True,
                cached=False,
            )
            if len(env_secrets) >= _GATED_SECRETS
            else None
        )
        # Replacing a value leaves `<REDACTED:env-secret>`, and a value the text did not hold can appear
        # only across or inside it: none can when no value holds `<` or `>` or lies inside it. Then the
        # values the gate found in a text are all there is to replace, whatever is replaced first.
        self._gate_names_all = not any(
            "<" in secret or ">" in secret or secret in _ENV_PLACEHOLDER for secret in env_secrets
        )
        self.stats = FilterStats()
        #: how long redacting one trajectory may take (`budget`)
        self.budget_seconds = redaction_budget_seconds()
        #: text -> (its redaction, or None when unchanged; the counts by rule; the secrets found); where
        #: a text's personal data is, the finder remembers
        self._memo: TextMemo[_Remembered] = TextMemo()
        #: key -> the key its values are read under (`_key_of_items`); a trajectory's keys repeat
        self._keys_of_items: TextMemo[str | None] = TextMemo()

    def recipe(
        self,
    ) -> tuple[Profile, EntityDirectory | None, tuple[str, ...], frozenset[str], str, bytes | None]:
        """What a worker process needs to build the same filter (`start_worker_filter`)."""
        personal = self.personal
        kinds, model = (frozenset(), "") if personal is None else (personal.kinds, personal.ner_model)
        # "" (no model), not None: a worker reads no setting of its own
        return self.profile, self.directory, self.env_secrets, kinds, model or "", self.id_key

    @property
    def worker_modules(self) -> list[str]:
        """What a pool's fork server imports for this filter's workers, so they share it: Presidio's
        and spaCy's modules when personal data is looked for, else nothing."""
        return [ANALYZER_MODULE] if self.personal is not None else []

    def build_for_forked_workers(self) -> None:
        """Import and build here what workers forked from this process build for this filter on its
        first window of personal data (Presidio's analyzers), so that they share its pages."""
        if self.personal is not None:
            self.personal.load()

    @property
    def only_redacts(self) -> bool:
        """Whether `apply` after `redact_sensitive` leaves every trajectory as it is and keeps it: with
        no entity directory there is no handle to anonymise and nobody to drop."""
        return self.directory is None

    def apply(self, trajectory: dict[str, Any], origin: str = "", redacted: bool = False) -> bool:
        """Filter `trajectory` in place; False when it must be dropped (a private entity takes part).
        `redacted`: this filter has already redacted its credentials (the ingest's fused pass)."""
        stats = self.stats
        if not redacted:
            self.redact_sensitive(trajectory)  # may raise OverBudget: then the record is not counted in
        stats.trajectories_in += 1
        entities: set[str] = set()
        if self.directory is not None:
            for call in iter_llm_calls(trajectory):
                for name in TEXT_FIELDS:
                    value = call.get(name)
                    if isinstance(value, str):
                        call[name] = self._anonymise(value, entities)
        if self.directory is not None and any(self.directory.is_private(e) for e in entities):
            stats.dropped_private += 1
            stats.dropped.append(
                {
                    "trajectoryId": str(trajectory.get("trajectoryId")),
                    "reason": "entity-private",
                    "origin": origin,
                }
            )
            return False
        stats.kept += 1
        return True

    def redact_sensitive(self, trajectory: dict[str, Any]) -> int:
        """The redacting half of `apply`, in place: credentials, then personal data, in the prompt
        fields, and under `strict` every other string. Idempotent, so a trajectory stored redacted
        (`ingest`) and filtered again counts each once. Returns how many it redacted; raises `OverBudget`
        when the redaction ran past `budget_seconds` (the caller quarantines the record: it is then
        partly redacted)."""
        before = self.stats.redaction_count
        original_id = trajectory.get("trajectoryId")
        keyed = self.id_key is not None and isinstance(original_id, str)
        if keyed:
            head = detached(original_id)
            trajectory["trajectoryId"] = head  # put back below when the redaction leaves it
        strings = TrajectoryStrings(trajectory, self._key_of_items)
        slots = strings.slots
        # strict redacts every string; a trace's conversations, tools and steps are all redacted, whatever
        # the profile: the elizaos profile's narrower reach is elizaOS's contract for its own export format
        if self.profile == "strict" or is_trace(trajectory):
            strings.walk()
        found: dict[str, str] = {}
        with budget(self.budget_seconds):
            for container, key, text in slots:
                container[key], secrets = self._redacted(text)
                found.update(secrets)
                if (
                    self._keyed is not None
                    and not secrets
                    and isinstance(key, str)
                    and isinstance(container, dict)
                    and self._keyed.secret_under(key, container[key])
                ):  # `{"api_key": "…"}`: the value is a secret by its key, as the keyed rule reads it
                    label = self._keyed.KEYED_SECRET.label
                    found[container[key]] = label
                    container[key] = f"<REDACTED:{label}>"
                    self.stats.redactions[label] += 1
            # a secret told by its key in a JSON text (`"api_key": …`)
            for *_, parsed, text in strings.embedded:
                probed: Found = []
                self._redact(text, {}, probed)
                # a rule may take the JSON string's quotes with the value: the value is what the strings hold
                values = {secret.strip("\"'"): label for secret, label in probed if secret.strip("\"'")}
                found.update(values)
                # one too short to look for everywhere (`_SPREAD_LENGTH`) is still this JSON's own value
                short = {secret: label for secret, label in values.items() if len(secret) < _SPREAD_LENGTH}
                if short:
                    self._redact_values(parsed, short)
            if found:
                self._redact_found_everywhere(found, slots)
            if self.personal is not None:
                self._redact_personal(slots, [text for *_, text in strings.embedded])
        strings.finish()
        if keyed:
            redacted_id = trajectory["trajectoryId"]
            trajectory["trajectoryId"] = (
                original_id if redacted_id == head else apart(str(redacted_id), original_id, self.id_key)
            )
        return self.stats.redaction_count - before

    def _redact_personal(self, slots: list[Slot], probes: Sequence[str] = ()) -> None:
        """Personal data in every slot, as placeholders numbered across the trajectory; then each value
        found is redacted wherever else the trajectory holds it (`Pseudonyms.spread`: a name said with a
        cue in a prompt is the same person in the metadata's `"assignee": "Jane Doe"`). `probes` are
        JSON texts whose strings are slots: what is found in them whole (a name told by its key,
        `"full_name": "…"`) is spread into their strings, and counted there."""
        pseudonyms = Pseudonyms()
        for text in probes:
            spans = self._personal_spans(text)
            if spans:
                pseudonyms.replace(text, spans, {})
        counts: dict[str, int] = {}
        for container, key, _ in slots:
            text = container[key]
            spans = self._personal_spans(text)
            if not spans and isinstance(key, str) and isinstance(container, dict):
                spans = self._read_under(key, text)
            if spans:
                container[key] = pseudonyms.replace(text, spans, counts)
        if pseudonyms.found_any:
            for container, key, _ in slots:
                container[key] = pseudonyms.spread(container[key], counts)
        self.stats.redactions.update(counts)

    def _read_under(self, key: str, text: str) -> list[Span]:
        """An object's value read as its key says it is: after the key's cue as a line says it
        (`"full_name": "Jane Doe"` as `full name: Jane Doe`), or, where the key names the account of
        the user an event is for (`"user": "jdoe"`, which as a line is a transcript's speaker), as JSON
        writes it."""
        readings = []
        cue = key_cue(key)
        if cue is not None:
            readings.append((f"{cue}: ", ""))
        said = role_account_key(key)
        if said is not None:
            readings.append((f'"{said}": "', '"'))
        for before, after in readings:
            spans = [
                (s - len(before), e - len(before), k)
                for s, e, k in self._personal_spans(before + text + after)
                if s >= len(before) and e <= len(before) + len(text)
            ]
            if spans:
                return spans
        return []

    def _personal_spans(self, text: str) -> list[Span]:
        return [] if self.personal is None else self.personal.spans(text)

    def _redact_found_everywhere(self, found: dict[str, str], slots: list[Slot]) -> None:
        """A secret found once is redacted wherever else the trajectory holds it: a rule that knows a
        key by the service's name beside it (`airbrake key = …`) does not see the agent repeat the key
        alone three calls later."""
        secrets = _spreadable(found)
        if not secrets:
            return
        for container, key, _ in slots:
            container[key] = _replace_found(container[key], secrets, self.stats.redactions)

    def redact(self, text: str) -> str:
        """`text` with its credentials redacted, then its personal data (numbered within the text), each
        counted (`_redacted`). A value found once is redacted wherever else the text holds it, as in a
        trajectory (`Pseudonyms.spread`): a quarantined line's `"login": "jdoe"` and its `/home/jdoe`."""
        text = self._redacted(text)[0]
        spans = self._personal_spans(text)
        if not spans:
            return text
        counts: dict[str, int] = {}
        pseudonyms = Pseudonyms()
        text = pseudonyms.spread(pseudonyms.replace(text, spans, counts), counts)
        self.stats.redactions.update(counts)
        return text

    def _redacted(self, text: str) -> tuple[str, Iterable[tuple[str, str]]]:
        """`text` with its credentials redacted, each counted, and the secrets found (`Found`).

        A trajectory repeats its strings in every call (model names, step kinds, the agent's name,
        its system prompt, often kilobytes) and so does the next one; under `strict` the short ones
        are a third of every string walked. Redaction depends on the text alone, so a string's result
        and its counts are remembered and replayed (`TextMemo`; a string it has not seen costs one hash
        more)."""
        if len(text) < 4:  # shorter than any rule's match or any secret (8 UTF-16 units, 4 astral chars)
            return text, ()
        if len(text) > MEMO_MAX_CHARS:
            found: Found = []
            return self._redact(text, self.stats.redactions, found), found
        remembered = self._memo.get(text)
        if remembered is None:
            # a plain dict: a Counter costs more to make than most texts cost to redact
            counts: dict[str, int] = {}
            found = []
            redacted = self._redact(text, counts, found)
            remembered = (None if redacted == text else redacted, tuple(counts.items()), tuple(found))
            self._memo.remember(text, remembered)
        changed, hits, secrets = remembered
        for label, count in hits:
            self.stats.redactions[label] += count
        return (text if changed is None else changed), secrets

    def _redact(self, text: str, counts: dict[str, int], found: Found) -> str:
        """Both gates scan the text's UTF-8, encoded once. Under `strict`, `found` gets the secrets the
        rules redacted, and each is redacted wherever else the text holds it."""
        data = _utf8(text)
        if self.profile == "elizaos":
            original = text
            for rule in self.rules.applicable(text, data):
                text, hits = rule.redact(text)
                if hits:
                    counts[rule.label] = counts.get(rule.label, 0) + hits
            return self._redact_env(text, data if text is original else None, counts)[0]
        text = self._redact_strict(text, data, counts, found)
        return self._redact_escaped(text, counts, found)

    def _redact_strict(self, text: str, data: bytes | None, counts: dict[str, int], found: Found) -> str:
        text, data = self._redact_env(text, data, counts, keep_utf8=True)
        for rule in self.rules.applicable(text, data):
            known = len(found)
            text, hits = rule.redact(text, found)
            if hits:
                counts[rule.label] = counts.get(rule.label, 0) + hits
            if len(found) > known:
                # redacted wherever else the text holds it before the next rule reads the text: a
                # weaker rule would take a piece of it (`(key=secret)`'s part after `=`) and leave the rest
                text = _replace_found(text, _spreadable(dict(found[known:])), counts)
        return text

    def _redact_escaped(self, text: str, counts: dict[str, int], found: Found) -> str:
        """Strict: the secrets `text` holds as it reads with its escapes read (`escapes`), each
        redacted where it is written, escapes and all; and added to `found`, so they are redacted
        wherever else the trajectory holds them."""
        unescaped_text = unescaped(text)
        if unescaped_text is None:
            return text
        plain, starts = unescaped_text
        inner: Found = []
        self._redact_strict(plain, _utf8(plain), {}, inner)
        inner += [(secret, ENV_SECRET_LABEL) for secret in self.env_secrets if secret in plain]
        written: dict[str, str] = {}  # each secret as `text` writes it -> its label
        for secret, label in inner:
            at = plain.find(secret)
            while at != -1 and secret:
                written[text[starts[at] : starts[at + len(secret)]]] = label
                at = plain.find(secret, at + len(secret))
        if not written:
            return text
        found += written.items()
        longest_first = sorted(written.items(), key=lambda item: len(item[0]), reverse=True)
        return _replace_found(
            text, Literals([(w, label) for w, label in longest_first if not is_placeholder(w)]), counts
        )

    def _redact_env(
        self, text: str, data: bytes | None, counts: dict[str, int], keep_utf8: bool = False
    ) -> tuple[str, bytes | None]:
        """The text with the values replaced, and its UTF-8 (None: not known). `data`: the text's UTF-8
        (None: not known, or the text holds a lone surrogate), from which the secret gate tells which
        values it holds: only those are searched for.

        One pass per secret, not two (a count, then a replace): the occurrences replaced are told by
        how much the text shrank or grew, each by the same length. With `keep_utf8` (the rules scan
        the result), the UTF-8 follows by replacing the value's bytes, not by encoding the text again:
        in valid UTF-8 a value's bytes start
        and end only where characters do, so the bytes replaced are the characters replaced."""
        indexes: Iterable[int] = range(len(self.env_secrets))
        if self._secret_gate is not None and data is not None:
            found = self._secret_gate.matching(data)
            if not found:
                return text, data
            if self._gate_names_all:
                indexes = sorted(found)
        for index in indexes:
            secret = self.env_secrets[index]
            replaced = text.replace(secret, _ENV_PLACEHOLDER)
            if replaced is text:  # nothing found: the very same string comes back
                continue
            change = len(secret) - len(_ENV_PLACEHOLDER)
            hits = (len(text) - len(replaced)) // change if change else text.count(secret)
            if hits:
                counts[ENV_SECRET_LABEL] = counts.get(ENV_SECRET_LABEL, 0) + hits
                text = replaced
                if keep_utf8 and data is not None:
                    data = data.replace(self._secret_bytes[index], _ENV_PLACEHOLDER_BYTES)
                else:
                    data = None
        return text, data

    def _anonymise(self, text: str, entities: set[str]) -> str:
        directory = self.directory
        if directory is None or "@" not in text:
            return text

        def replace(match: re.Match[str]) -> str:
            entity = directory.resolve(match.group()[1:])
            if entity is None:
                return match.group()
            self.stats.anonymization_count += 1
            entities.add(entity)
            return f"<entity:{entity}>"

        return HANDLE.sub(replace, text)

    def _redact_values(self, node: Any, secrets: dict[str, str]) -> None:
        """The strings of a parsed JSON value that are exactly one of `secrets`, redacted, counted."""
        stack = [node]
        while stack:
            item = stack.pop()
            for key, value in item.items() if isinstance(item, dict) else enumerate(item):
                if isinstance(value, str) and value in secrets:
                    item[key] = f"<REDACTED:{secrets[value]}>"
                    self.stats.redactions[secrets[value]] += 1
                elif isinstance(value, dict | list):
                    stack.append(value)

    def _key_of_items(self, key: str) -> str | None:
        """The key a value is read under when its key says what it is: the key itself (`"phone"`) or
        its singular (`"phones"`, `"api_keys"`, `"emailAddresses"`: a list's items, or one value, as
        a form's or a CSV's plural field often holds); None for any other key. Remembered."""
        known = self._keys_of_items.get(key, _UNKNOWN)
        if known is not _UNKNOWN:
            return known
        forms = [key]
        if key.endswith("s"):
            forms.append(key[:-1])
        if key.endswith("es"):
            forms.append(key[:-2])
        said = None
        for form in forms:
            if (self.personal is not None and key_cue(form) is not None) or (
                self._keyed is not None
                and self._keyed.secret_key(form)
                and not self._keyed.names_something_else(key)
            ):
                said = form
                break
        self._keys_of_items.remember(key, said)
        return said


#: a key `_key_of_items` has not met yet (what it remembers of a key may be None)
_UNKNOWN: Any = object()

#: a redaction remembered: the text redacted (None: unchanged), the counts by rule, the secrets found
_Remembered = tuple[str | None, tuple[tuple[str, int], ...], tuple[tuple[str, str], ...]]
#: a secret found this long or longer is redacted wherever else it appears; a shorter one (a URL's
#: password `pw`) could be a word of the text
_SPREAD_LENGTH = 10


def _spreadable(found: dict[str, str]) -> Literals[str]:
    """The secrets found (secret -> label) worth looking for elsewhere, longest first, so a secret
    holding another is redacted whole."""
    return Literals(
        sorted(
            ((s, label) for s, label in found.items() if len(s) >= _SPREAD_LENGTH and not is_placeholder(s)),
            key=lambda item: len(item[0]),
            reverse=True,
        )
    )


def _replace_found(text: str, secrets: Literals[str], counts: dict[str, int]) -> str:
    """`text` with each of `secrets` (secret, label) redacted wherever it holds it, each counted."""
    for secret, label in secrets.held_by(text):
        if secret in text:
            counts[label] = counts.get(label, 0) + text.count(secret)
            text = text.replace(secret, f"<REDACTED:{label}>")
    return text


def _utf8(text: str) -> bytes | None:
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate
        return None


#: the filter of a worker process of the pool (`training_pipeline.workers`), built once when it starts
_worker_filter: PrivacyFilter | None = None


def start_worker_filter(
    profile: Profile,
    directory: EntityDirectory | None,
    env_secrets: tuple[str, ...],
    personal_data: frozenset[str],
    ner_model: str,
    id_key: bytes | None,
) -> None:
    """A pool's initializer: this worker's filter, built once (its gates load from the cache)."""
    global _worker_filter
    _worker_filter = PrivacyFilter(profile, directory, env_secrets, personal_data, ner_model, id_key)


def worker_filter() -> PrivacyFilter:
    if _worker_filter is None:
        raise RuntimeError("not a worker of the pool: start_worker_filter never ran here")
    return _worker_filter
