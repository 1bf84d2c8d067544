"""How the loopback stand-ins' tuned models answer: from the training examples the service was given
(the one whose last user message ends in the most words in common with the question's), never from the
answers of the examples they are judged on; a base model says the same sentence to everything. So a
gain the gate finds is one the training data can give, as a real fine-tune's would be."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

#: every base model's answer
BASE_ANSWER = "I am not sure."


def _words(text: str) -> frozenset[str]:
    return frozenset(re.findall(r"[a-z@]+", text.lower()[-80:]))  # the last message, mostly


class NearestExample:
    """A tuned model: the answer of the training example whose question is most like the one asked."""

    def __init__(self, examples: Sequence[tuple[str, Any]]) -> None:
        self._examples = [(_words(question), answer) for question, answer in examples]

    def answer(self, question: str) -> Any:
        asked = _words(question)

        def likeness(item: tuple[frozenset[str], Any]) -> float:
            words, _ = item
            return len(asked & words) / (len(asked | words) or 1)

        return max(self._examples, key=likeness)[1]
