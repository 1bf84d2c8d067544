"""An answer held to a form: free reasoning where the task's answers have it, then one of fixed choices.

A decision task's answers have a shape (should_respond's `<response><name>Eliza</name><reasoning>…
</reasoning><action>RESPOND</action></response>`, the planner's `<thought>…</thought><actions>REPLY
</actions>`): the decision itself comes from a small set, and the text before it is the model's own
reasoning. Holding the answer to that shape (reasoning first, then a choice) lets a small model decide
after it has written why, instead of committing to the first token of a bare word; without the
reasoning a small model's first-token bias decides for it.

Servers are told the form in the way they speak: a GBNF grammar (llama.cpp), or an OpenAI
`json_schema` response format whose `{"reasoning", "answer"}` the client writes back into the form, so a
scorer reads the same text either way.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class AnswerForm:
    choices: tuple[str, ...]
    opening: str = ""  # what the answer starts with, before the reasoning
    closing: str = ""  # between the reasoning and the choice
    after: str = ""  # after the choice
    #: longest reasoning, in characters (no `<`, no line break); 0: the answer is the choice alone
    reasoning: int = 0

    @classmethod
    def from_dict(cls, fields: dict[str, Any]) -> AnswerForm:
        return cls(**{**fields, "choices": tuple(fields["choices"])})

    def text(self, reasoning: str, choice: str) -> str:
        kept = " ".join(reasoning.replace("<", " ").split())[: self.reasoning] if self.reasoning else ""
        return f"{self.opening}{kept}{self.closing}{choice}{self.after}"

    def grammar(self) -> str:
        """GBNF (its string literals take JSON's escapes)."""

        def literal(text: str) -> str:
            return json.dumps(text, ensure_ascii=False)

        parts = [literal(self.opening)] if self.opening else []
        if self.reasoning:
            parts.append("reasoning")
        if self.closing:
            parts.append(literal(self.closing))
        parts.append("(" + " | ".join(literal(choice) for choice in self.choices) + ")")
        if self.after:
            parts.append(literal(self.after))
        rules = ["root ::= " + " ".join(parts)]
        if self.reasoning:
            rules.append(f"reasoning ::= [^<\\n]{{0,{self.reasoning}}}")
        return "\n".join(rules)

    def response_format(self) -> dict[str, Any]:
        """An OpenAI structured-output format: `{"reasoning": …, "answer": <a choice>}`, reasoning
        first so it is written before the decision."""
        properties: dict[str, Any] = {}
        if self.reasoning:
            properties["reasoning"] = {"type": "string"}
        properties["answer"] = {"type": "string", "enum": list(self.choices)}
        return {
            "type": "json_schema",
            "json_schema": {
                "name": "answer",
                "strict": True,
                "schema": {
                    "type": "object",
                    "properties": properties,
                    "required": list(properties),
                    "additionalProperties": False,
                },
            },
        }

    def from_json(self, content: str | None) -> str | None:
        """A `response_format` answer written in the form; any other content as it came (the scorer
        judges it)."""
        try:
            answer = json.loads(content or "")
        except ValueError:
            return content
        if not isinstance(answer, dict) or answer.get("answer") not in self.choices:
            return content
        return self.text(str(answer.get("reasoning") or ""), answer["answer"])
