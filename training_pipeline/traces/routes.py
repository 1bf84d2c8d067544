"""Which dataset a trace's LLM call feeds (docs/traces.md): routes by the call's agent or by any span
attribute, and the default. Importable on its own: the settings check a deployment's routes when they
load, before anything of the traces is needed."""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass
from typing import Any

__all__ = ["DEFAULT_DATASETS", "TraceRouting", "dataset_name_ok"]

#: where a call goes when no route names it: `tool_use` when tools were offered or called, else `chat`
DEFAULT_DATASETS = ("chat", "tool_use")


@dataclass(frozen=True)
class TraceRouting:
    """Which dataset a trace's LLM call feeds: the first rule that matches, else the default
    (`DEFAULT_DATASETS`). A rule is `PATTERN=DATASET`, matched (a shell glob, case as written) against
    the call's agent (`gen_ai.agent.name`, else the resource's `service.name`), or
    `ATTRIBUTE:PATTERN=DATASET`, against the value of the call's span attribute (or resource attribute)
    `ATTRIBUTE`: `app.workflow:refund-*=refunds`. Such an attribute is read for routing only; like every
    attribute outside the conventions', it is never stored."""

    #: (attribute, or None for the agent; pattern; dataset)
    rules: tuple[tuple[str | None, str, str], ...] = ()

    @classmethod
    def parse(cls, text: str | None) -> TraceRouting:
        """`support-*=support,app.workflow:refund-*=refunds` (a comma-separated list of rules)."""
        rules = []
        for item in (text or "").split(","):
            if not item.strip():
                continue
            matched, equals, dataset = item.partition("=")
            dataset = dataset.strip()
            attribute, colon, pattern = matched.strip().rpartition(":")
            if (
                not equals
                or not pattern.strip()
                or (colon and not attribute.strip())
                or not dataset_name_ok(dataset)
            ):
                raise ValueError(
                    f"trace route {item.strip()!r}: write [ATTRIBUTE:]PATTERN=DATASET, the dataset a name "
                    "of lower-case letters, digits, '_' or '-', not quarantine or …_trajectories (the "
                    "build's own files)"
                )
            rules.append((attribute.strip() or None, pattern.strip(), dataset))
        return cls(tuple(rules))

    @property
    def datasets(self) -> tuple[str, ...]:
        """Every dataset a call can feed: the default two, then the rules' in the order written."""
        return tuple(dict.fromkeys((*DEFAULT_DATASETS, *(dataset for _, _, dataset in self.rules))))

    @property
    def attributes(self) -> tuple[str, ...]:
        """The span attributes the rules read."""
        return tuple(sorted({attribute for attribute, _, _ in self.rules if attribute is not None}))

    def dataset(self, agent: str | None, call: dict[str, Any], values: dict[str, Any] | None = None) -> str:
        """The dataset of an LLM call's record (`messages`, `output`, `tools`), with the values of the
        rules' attributes on its span (`values`)."""
        for attribute, pattern, dataset in self.rules:
            value = agent if attribute is None else (values or {}).get(attribute)
            if value is not None and fnmatch.fnmatchcase(str(value), pattern):
                return dataset
        chat, tool_use = DEFAULT_DATASETS
        called = any(m.get("tool_calls") for m in (*call["messages"], *call["output"]))
        return tool_use if call.get("tools") or called else chat


def dataset_name_ok(name: str) -> bool:
    """A name a dataset file can carry beside elizaOS's: lower-case letters, digits, `_` and `-`, and
    none of the build's own files (`quarantine`, `<task>_trajectories`)."""
    if not name or not name.isascii() or not all(c.islower() or c.isdigit() or c in "_-" for c in name):
        return False
    return name != "quarantine" and not name.endswith("_trajectories")
