"""A trajectory's strings as the privacy filter redacts them: each a slot (where it lives, a container
and its key, and the text as it was) that the filter writes back in place, in the order redacted.

The prompt fields of the LLM calls are slotted first, for every profile; `walk` adds every other string
(strict, and any trace): the objects' keys, a number or a list's items under a key that says what they
are, and the strings of a JSON text one by one; `finish` renames the keys the redaction changed and
writes the JSON texts back."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from training_pipeline.trajectories.models import iter_llm_calls

__all__ = ["TEXT_FIELDS", "Slot", "TrajectoryStrings", "free_key"]

#: an LLM call's prompt fields, which every profile redacts
TEXT_FIELDS = ("systemPrompt", "userPrompt", "response")
#: where a string lives (a container and its key) and the string as it was slotted
Slot = tuple[Any, Any, str]
#: a structured name's parts (FHIR's `HumanName`), as a text says each
_NAME_PARTS = {"family": "family name", "given": "given name", "text": "full name"}


class TrajectoryStrings:
    """The slots of one trajectory's redaction. `key_of_items(key)`: the key a value is read under when
    its key (or its singular) says what it is (the filter's, as it depends on what it looks for)."""

    def __init__(self, trajectory: dict[str, Any], key_of_items: Callable[[str], str | None]) -> None:
        self.trajectory = trajectory
        self.slots: list[Slot] = []
        #: JSON texts whose strings are slotted one by one
        self.embedded: list[_Embedded] = []
        #: the objects' keys, slotted too
        self.keys: list[_Key] = []
        self._key_of_items = key_of_items
        self._calls: set[int] = set()
        for call in iter_llm_calls(trajectory):
            self._calls.add(id(call))
            for name in TEXT_FIELDS:
                value = call.get(name)
                if isinstance(value, str):
                    self.slots.append((call, name, value))

    def walk(self) -> None:
        """The other strings of the trajectory (metadata, tool output, provider data...) added to the
        slots. An object's keys are slotted too (a tool's result
        keyed by its people's addresses, a config keyed by a token), each in a holder of its own, and
        renamed by `finish`. A number under a key that says what it is (`"phone": 14155550123`,
        `key_of_items`) is slotted as text, and so is each item of a list under such a key or its plural
        (`"phones": […]`, `"api_keys": […]`) and a string under its plural (`"phones": "…"`), in a
        `_Held` under the key that says what it is.

        A string that is itself a JSON object or array (a tool call's `arguments`, a tool's JSON result)
        is read as JSON and its strings are slotted one by one, then it is written back (`embedded`):
        inside the JSON text a newline is `\\n` and a quote `\\"`, so the cues a name or a date of
        birth is told by (`Best regards,` and a line break, `"full_name": "…"`) would not be seen."""
        slots, embedded, keys = self.slots, self.embedded, self.keys
        stack: list[tuple[Any, str | None]] = [(self.trajectory, None)]  # a node, and what its items are
        while stack:
            node, said = stack.pop()
            items = node.items() if isinstance(node, dict) else enumerate(node)
            is_call = isinstance(node, dict) and id(node) in self._calls
            # a person's name in parts, as FHIR writes one: `{"family": "Doe", "given": ["Jane"]}`
            # (`family` alone is a font's as often)
            human_name = isinstance(node, dict) and "family" in node and "given" in node
            for key, value in items:
                if human_name and key in _NAME_PARTS:
                    if isinstance(value, str):
                        slots.append((_Held(node, key, _NAME_PARTS[key], value), _NAME_PARTS[key], value))
                        continue
                    if isinstance(value, list):
                        stack.append((value, _NAME_PARTS[key]))
                        continue
                # an object's key (a list's are numbers); a word of letters alone, a field's name,
                # is none of the kinds and no rule's (a name needs a cue, a secret digits or more length)
                if (
                    isinstance(key, str)
                    and len(key) > 3
                    and not (len(key) <= 32 and key.isascii() and key.isalpha())
                ):
                    holder = [key]
                    slots.append((holder, 0, key))
                    keys.append((node, key, holder))
                if isinstance(value, str):
                    if len(value) <= 3 or (is_call and key in TEXT_FIELDS):
                        continue
                    parsed = _json_container(value)
                    if parsed is not None:
                        embedded.append((node, key, parsed, value))
                        stack.append((parsed, None))
                    elif said is not None:  # an item of `"phones": […]`
                        slots.append((_Held(node, key, said, value), said, value))
                    elif isinstance(key, str) and (under := self._key_of_items(key)) not in (None, key):
                        # one value under a plural key (`"phones": "…"`), read as its singular says
                        slots.append((_Held(node, key, under, value), under, value))
                    else:
                        slots.append((node, key, value))
                elif isinstance(value, dict):
                    stack.append((value, None))
                elif isinstance(value, list):
                    stack.append((value, self._key_of_items(key) if isinstance(key, str) else None))
                elif type(value) is int:  # `"phone": 14155550123`, `"phones": [14155550123]`
                    under = (
                        said
                        if said is not None
                        else self._key_of_items(key)
                        if isinstance(key, str)
                        else None
                    )
                    if under is not None:
                        held = _Held(node, key, under, value)
                        slots.append((held, under, held[under]))

    def finish(self) -> None:
        """After the redaction: the objects' keys it changed renamed (`_rename`), and each JSON text
        written back where a string in it changed, the innermost first (a JSON text in a JSON text)."""
        _rename(self.keys)
        for container, key, parsed, text in reversed(self.embedded):
            if parsed != json.loads(text):
                container[key] = json.dumps(parsed, ensure_ascii=False)


class _Held(dict):
    """A value held as text under the key that says what it is, written through to where it lives when
    the redaction changes it: a number under a cue's key (`"phone": 14155550123` is stored as its
    placeholder), an item of a list under a plural key (`"phones": ["4155550123"]`)."""

    def __init__(self, node: Any, at: Any, said: str, value: str | int) -> None:
        super().__init__({said: str(value)})
        self.node, self.at, self.value = node, at, value

    def __setitem__(self, key: str, text: str) -> None:
        super().__setitem__(key, text)
        if text != str(self.value):
            self.node[self.at] = text


#: a string of a trajectory that holds JSON: where it is (container, key), its parsed value, its text
_Embedded = tuple[Any, Any, Any, str]
#: an object's key: the object, the key, and a holder of one, where the key is redacted
_Key = tuple[dict[str, Any], str, list[str]]


def _rename(keys: list[_Key]) -> None:
    """Each object whose keys the redaction changed, in place and in its order. Two keys that became
    one (two secrets' `<REDACTED:…>`) stay two: the later is numbered (`… (2)`), as is a key that
    became one the object already had, so no value is lost."""
    changed: dict[int, dict[str, str]] = {}
    objects: dict[int, dict[str, Any]] = {}
    for node, key, (redacted,) in keys:
        if redacted != key:
            changed.setdefault(id(node), {})[key] = redacted
            objects[id(node)] = node
    for identity, names in changed.items():
        node = objects[identity]
        items = list(node.items())
        node.clear()
        for key, value in items:
            node[free_key(names.get(key, key), node)] = value


def free_key(name: str, taken: Mapping[str, Any]) -> str:
    """`name`, or where `taken` has it already, the first of `name (2)`, `name (3)`… it does not: two keys
    their redaction made one stay two."""
    if name not in taken:
        return name
    return next(f"{name} ({n})" for n in range(2, len(taken) + 3) if f"{name} ({n})" not in taken)


def _json_container(text: str) -> dict | list | None:
    """`text` parsed, when it is a JSON object or array (None otherwise: most strings, told by their
    first character without parsing)."""
    start = text.lstrip()[:1]
    if start not in ("{", "["):
        return None
    try:
        parsed = json.loads(text)
    except ValueError:
        return None
    return parsed if isinstance(parsed, dict | list) and parsed else None
