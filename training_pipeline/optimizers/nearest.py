"""The demonstrations nearest to a question, picked from a pool of labelled examples.

In-context examples chosen per question by their similarity to it teach a model far more than a fixed
set does (Liu et al., "What Makes Good In-Context Examples for GPT-3?", 2021; DSPy's `KNNFewShot`): a
small model that cannot follow an instruction still copies what followed a question like the one it is
asked. The similarity is lexical (TF-IDF cosine, no embedding model to install or serve), and weighs a
line by how near the end of the input it is: a conversation's question and its last message are at
the end, the older lines are context, so line `i` from the end counts `RECENCY ** i`. The inverse
document frequency is the pool's, so the words every prompt shares ("Plan the next step") count for
nothing and the request's own words decide.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from functools import lru_cache

__all__ = [
    "RECENCY",
    "Demonstration",
    "NearestDemonstrations",
    "demonstrations_for",
    "nearest_demonstrations",
]

#: the weight of a line relative to the one after it
RECENCY = 0.5
_WORD = re.compile(r"[@\w]+")

Demonstration = tuple[str, str]  # (question, answer)


def _weighted_words(text: str) -> Counter[str]:
    lines = [line for line in text.splitlines() if line.strip()]
    counts: Counter[str] = Counter()
    for distance, line in enumerate(reversed(lines)):
        weight = RECENCY**distance
        for word in _WORD.findall(line.lower()):
            counts[word] += weight
    return counts


class NearestDemonstrations:
    """A pool indexed once; `nearest` ranks it against a question."""

    def __init__(self, pool: Sequence[Demonstration]) -> None:
        self.pool = list(pool)
        words = [_weighted_words(question) for question, _ in self.pool]
        documents = Counter(word for counts in words for word in counts)
        size = len(self.pool)
        self._idf = {word: math.log((size + 1) / (count + 1)) for word, count in documents.items()}
        self._unseen = math.log(size + 1)  # a word no pool question holds: as rare as can be
        self._vectors = [self._vector(counts) for counts in words]

    def _vector(self, counts: Counter[str]) -> dict[str, float]:
        weights = {word: count * self._idf.get(word, self._unseen) for word, count in counts.items()}
        norm = math.sqrt(sum(w * w for w in weights.values())) or 1.0
        return {word: w / norm for word, w in weights.items() if w}

    def nearest(self, question: str, k: int) -> list[Demonstration]:
        """The `k` pool entries most similar to `question`, the most similar last (nearest the question
        in the conversation); ties keep the pool's order."""
        if k <= 0 or not self.pool:
            return []
        query = self._vector(_weighted_words(question))
        similarity = [
            sum(weight * vector.get(word, 0.0) for word, weight in query.items()) for vector in self._vectors
        ]
        ranked = sorted(range(len(self.pool)), key=lambda index: -similarity[index])[:k]
        return [self.pool[index] for index in reversed(ranked)]


@lru_cache(maxsize=16)
def _index(pool: tuple[Demonstration, ...]) -> NearestDemonstrations:
    return NearestDemonstrations(pool)


def nearest_demonstrations(pool: Sequence[Demonstration], question: str, k: int) -> list[Demonstration]:
    """`NearestDemonstrations(pool).nearest(question, k)`, the index kept for the next question."""
    return _index(tuple((str(q), str(a)) for q, a in pool)).nearest(question, k)


def demonstrations_for(pool: Sequence[Demonstration], question: str, neighbours: int) -> list[Demonstration]:
    """What a question is shown: every demonstration (`neighbours` 0), or the `neighbours` of the
    pool nearest to it. The optimiser scores a candidate and a task's agent answers through this one
    rule, so a promoted candidate is deployed as it was scored."""
    if neighbours:
        return nearest_demonstrations(pool, question, neighbours)
    return [(str(q), str(a)) for q, a in pool]
