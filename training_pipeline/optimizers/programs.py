"""The native optimisers as Stage-DSL programs, so every run leaves a records tree.

The protocol (what makes a reported gain believable):

- examples are split by trajectory into train, validation and test (`examples.split_by_trajectory`);
- candidates are *proposed* from the training split (demonstrations, the failing examples a reflective
  proposer is shown, the minibatches that filter rewrites) and *chosen* on the validation split;
- the test split is read once, for the baseline and the chosen candidate, on the same examples: that is
  what the promotion gate judges, so a candidate that won on validation by luck does not carry its luck
  into the figure;
- every random choice comes from one seeded RNG and sampled LLM calls carry a seed, so a run can be
  repeated (and replayed from the response cache after a crash); the native backend runs several seeds.

A decision task's answers are held to their form (`Problem.form`: reasoning, then one of the decisions,
sent as a grammar or a JSON schema by the client), so a small model is scored on its decisions, not on
its formatting.
"""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from statistics import fmean
from typing import Any, Literal

from training_pipeline.atomic import atomic_write_text
from training_pipeline.llm.answer_form import AnswerForm
from training_pipeline.optimizers.examples import Example, Split
from training_pipeline.optimizers.nearest import demonstrations_for
from training_pipeline.optimizers.scoring import LLMJudge, Scorer, best_constant
from training_pipeline.stages.scope import StageScope

Optimizer = Literal["instruction-search", "prompt-evolution", "bootstrap-fewshot", "nearest-fewshot"]
OPTIMIZERS: tuple[str, ...] = (
    "instruction-search",
    "prompt-evolution",
    "bootstrap-fewshot",
    "nearest-fewshot",
)
DemoStyle = Literal["turns", "system"]

REWRITE = (
    "Rewrite the system prompt the user sends so that a model following it answers its task better. "
    "Keep what the task takes in and gives back, keep every {{placeholder}} exactly, add no new fields. "
    "Make the wording precise and add guidance for the mistakes a model is likely to make. "
    "Reply with the new system prompt only."
)
REFLECT = (
    "You improve a system prompt. The user sends the current prompt and examples a model following it "
    "got wrong, each with the input, the model's answer, the expected answer and the metric's score. "
    "Work out what rule would have given the expected answers, then write the improved system prompt: "
    "keep its task and answer format, keep every {{placeholder}} exactly, and state that rule plainly. "
    "Reply with the new system prompt only."
)
#: how much of a failing example's input the reflective proposer is shown (its end: where the question is)
_SHOWN_INPUT = 1200
#: answer length when the answer has a form (its reasoning, tags and the longest choice fit)
_FORM_TOKENS = 128
#: characters per token, counted low so an estimate errs long: most tokenizers give 3.5 to 4.5 on
#: English, fewer on code and names
CHARS_PER_TOKEN = 3


@dataclass(frozen=True)
class OptimiserConfig:
    optimizer: Optimizer = "bootstrap-fewshot"
    seed: int = 0
    validation_fraction: float = 0.35
    test_fraction: float = 0.35
    #: every candidate costs a call per validation example; the test split is paid twice
    max_validation: int = 150
    max_test: int = 300
    train_batch: int = 8  # training examples a proposal is screened on before validation
    max_tokens: int = 512
    temperature: float = 0.7  # for rewrites and reflections; answers are scored at temperature 0
    rounds: int = 3
    variants: int = 4
    population: int = 4  # prompt-evolution: candidates kept between generations
    generations: int = 3
    k: int = 5  # demonstrations per set (bootstrap-fewshot)
    demo_sets: int = 4  # demonstration sets sampled and scored on validation (bootstrap-fewshot)
    #: demonstrations picked per question from the training split, the nearest last (nearest-fewshot)
    neighbours: int = 3
    #: demonstrations as chat turns before the question, or pasted into the system prompt (fixed
    #: demonstrations only: nearest-fewshot's change with the question, so they are always turns)
    demo_style: DemoStyle = "turns"
    #: the model's context window in tokens (None: not known): an example whose own prompt and answer
    #: take more than half of it is left out, counted (`native.fitting`), so the other half holds the
    #: demonstrations and the answer
    context_tokens: int | None = None


@dataclass(frozen=True)
class Candidate:
    """What is being tested: a system prompt and, optionally, demonstrations given as chat turns:
    the same ones before every question, or (`neighbours` > 0) that many of `demos` picked per question,
    the nearest to it (`nearest.nearest_demonstrations`)."""

    system: str
    demos: tuple[tuple[str, str], ...] = ()  # (user, answer)
    neighbours: int = 0

    def messages(self, user: str) -> list[dict[str, str]]:
        messages = [{"role": "system", "content": self.system}]
        for question, answer in demonstrations_for(self.demos, user, self.neighbours):
            messages += [{"role": "user", "content": question}, {"role": "assistant", "content": answer}]
        return [*messages, {"role": "user", "content": user}]

    @property
    def id(self) -> str:
        """The prompt's id (as the lineage names rewrites), with the demonstrations when there are some."""
        if not self.demos:
            return prompt_id(self.system)
        shown: list[Any] = [self.system, self.demos]
        return prompt_id(
            json.dumps([*shown, self.neighbours] if self.neighbours else shown, ensure_ascii=False)
        )


@dataclass(frozen=True)
class Problem:
    """One optimisation: the agent's prompt, the split, how answers are scored and constrained."""

    baseline: str
    split: Split
    scorer: Scorer
    #: the form of a decision task's answers (`scoring.answer_form`); None: free text
    form: AnswerForm | None = None
    max_tokens: int = 512

    @property
    def answer_tokens(self) -> int:
        return min(self.max_tokens, _FORM_TOKENS) if self.form else self.max_tokens

    def decision(self, answer: str) -> str:
        """The decision an expected answer holds (its choice in the form), else the answer itself:
        what a demonstration set should cover."""
        if self.form is not None:
            end = self.form.after[: self.form.after.find(">") + 1]
            for choice in self.form.choices:
                if f"{self.form.closing}{choice}{end}" in answer:
                    return choice
        return answer


@dataclass
class OptimisationResult:
    optimizer: str
    baseline_prompt: str
    prompt: str
    baseline_score: float  # on the test split
    score: float  # on the test split, same examples
    few_shot_examples: list[dict[str, str]] = field(default_factory=list)
    #: how the demonstrations are given: chat turns before the question, or in the system prompt
    demo_style: str = "turns"
    #: 0: every demonstration before every question; n: `few_shot_examples` is a pool, and the n
    #: nearest to each question are given (as chat turns)
    neighbours: int = 0
    lineage: list[dict[str, Any]] = field(default_factory=list)
    seed: int = 0
    train_size: int = 0
    validation_size: int = 0
    test_size: int = 0
    #: the candidate's and the baseline's mean on the validation split, where the choice was made
    validation_baseline_score: float = 0.0
    validation_score: float = 0.0
    #: the test examples and each one's score for the baseline and the candidate, in the same order:
    #: what the promotion gate pairs
    test_ids: list[str] = field(default_factory=list)
    baseline_scores: list[float] = field(default_factory=list)
    scores: list[float] = field(default_factory=list)
    #: which scorer produced every score above, and the decisions decoding was held to (if any)
    scorer: str = ""
    choices: list[str] | None = None
    #: the whole form (`AnswerForm`'s fields), so whoever deploys the candidate decodes as it was scored
    answer_form: dict[str, Any] | None = None
    #: the best constant answer on the test examples (`scoring.best_constant`) and its score on each,
    #: in the same order: what the gate also requires the candidate to beat (empty: none, as for an
    #: LLM judge)
    reference_answer: str = ""
    reference_scores: list[float] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def prompt_id(prompt: str) -> str:
    return hashlib.sha256(prompt.encode()).hexdigest()[:12]


def answer_each(
    scope: StageScope, name: str, candidate: Candidate, examples: list[Example], problem: Problem
) -> list[tuple[float, str | None]]:
    """Each of `examples` answered under `candidate` at temperature 0 (held to `problem.form`)
    and scored: (score, answer); a failed call scores 0 with no answer. An LLM judge grades in a
    prompt execution of its own."""
    form = {"answer_form": problem.form} if problem.form else {}

    def one(stage: StageScope, example: Example) -> tuple[float, str | None]:
        answer = stage.execute_prompt(
            candidate.messages(example.user),
            name="answer",
            temperature=0.0,
            max_tokens=problem.answer_tokens,
            **form,
        )
        text = (answer.value.content or "") if answer.ok else None
        if text is None:
            score = 0.0
        elif isinstance(problem.scorer, LLMJudge):
            grade = stage.execute_prompt(
                problem.scorer.messages(text, example.expected),
                name="judge",
                temperature=0.0,
                max_tokens=problem.scorer.max_tokens,
            )
            score = problem.scorer.parse(grade.value.content) if grade.ok else 0.0
        else:
            score = problem.scorer(text, example.expected)
        stage.record_custom_metric("score", score)
        return score, text

    scored = scope.map_iterable_stage(name, examples, one, item_name=lambda e: e.id).get_or_raise()
    scope.record.substages[-1].additional_data = {
        "prompt_id": candidate.id,
        "score": fmean(s for s, _ in scored) if scored else 0.0,
    }
    return scored


def evaluate_each(
    scope: StageScope, name: str, candidate: Candidate, examples: list[Example], problem: Problem
) -> list[float]:
    """The score of `candidate` on each of `examples`, in their order (`answer_each`)."""
    return [score for score, _ in answer_each(scope, name, candidate, examples, problem)]


def evaluate(
    scope: StageScope, name: str, candidate: Candidate, examples: list[Example], problem: Problem
) -> float:
    """Mean score of `candidate` over `examples` (`evaluate_each`)."""
    scores = evaluate_each(scope, name, candidate, examples, problem)
    return fmean(scores) if scores else 0.0


def _sample(
    scope: StageScope, instructions: str, text: str, cfg: OptimiserConfig, seed: int, name: str
) -> str:
    messages = [{"role": "system", "content": instructions}, {"role": "user", "content": text}]
    answer = scope.execute_prompt(
        messages, name=name, temperature=cfg.temperature, max_tokens=cfg.max_tokens * 2, seed=seed
    )
    return (answer.value.content or "").strip() if answer.ok else ""


def with_demonstrations(prompt: str, demos: list[Example]) -> str:
    """`demos` pasted into the system prompt (the `system` demo style)."""
    if not demos:
        return prompt
    parts = [prompt.rstrip(), "", "Examples of good answers:"]
    for number, demo in enumerate(demos, start=1):
        parts += ["", f"Example {number}", f"Input:\n{demo.user}", f"Answer:\n{demo.expected}"]
    return "\n".join(parts) + "\n"


def demonstrated(prompt: str, demos: list[Example], style: DemoStyle) -> Candidate:
    if style == "system":
        return Candidate(with_demonstrations(prompt, demos))
    return Candidate(prompt, tuple((demo.user, demo.expected) for demo in demos))


class Selection:
    """Candidates scored on the validation split, each once; the best so far, ties to the earlier
    (so the baseline wins a tie: a candidate must do better to be chosen)."""

    def __init__(self, root: StageScope, problem: Problem, lineage: list[dict[str, Any]]) -> None:
        self.root, self.problem, self.lineage = root, problem, lineage
        self.scores: dict[str, float] = {}
        self.best: Candidate | None = None

    def score(
        self, candidate: Candidate, name: str, notes: str = "", scope: StageScope | None = None
    ) -> float:
        if candidate.id not in self.scores:
            value = evaluate(
                scope or self.root,
                f"validation: {name}",
                candidate,
                self.problem.split.validation,
                self.problem,
            )
            self.scores[candidate.id] = value
            self.lineage.append(
                {
                    "round": name,
                    "split": "validation",
                    "score": value,
                    "notes": notes,
                    "prompt_id": candidate.id,
                }
            )
            if self.best is None or value > self.scores[self.best.id]:
                self.best = candidate
        return self.scores[candidate.id]


def bootstrap_fewshot(
    root: StageScope, problem: Problem, cfg: OptimiserConfig, rng: random.Random, **_: Any
) -> OptimisationResult:
    """A demonstration search: `demo_sets` sets of `k` training examples (each set covering as many
    different expected answers as it can, so a set is not all one class), each scored on validation
    beside the bare baseline; the best set is the candidate."""
    lineage: list[dict[str, Any]] = []
    selection = Selection(root, problem, lineage)
    baseline = Candidate(problem.baseline)
    selection.score(baseline, "baseline", "the agent's prompt")
    for number in range(1, cfg.demo_sets + 1):
        demos = _covering_sample(problem.split.train, cfg.k, rng, problem.decision)
        selection.score(
            demonstrated(problem.baseline, demos, cfg.demo_style),
            f"demo set {number}",
            f"{len(demos)} demonstrations",
        )
    assert selection.best is not None
    return _final(root, "bootstrap-fewshot", problem, selection, lineage, cfg)


def nearest_fewshot(
    root: StageScope, problem: Problem, cfg: OptimiserConfig, rng: random.Random, **_: Any
) -> OptimisationResult:
    """Demonstrations chosen per question (DSPy's `KNNFewShot`): the training split is the pool, and
    each question is shown the `neighbours` pool entries most like it (`nearest`), as chat turns. The
    candidate is scored on validation beside the bare baseline and kept only if it does better there.
    With a known context window, a pool entry longer than its share of half of it is left out, so the
    demonstrations and the question fit."""
    lineage: list[dict[str, Any]] = []
    selection = Selection(root, problem, lineage)
    selection.score(Candidate(problem.baseline), "baseline", "the agent's prompt")
    share = (cfg.context_tokens or 0) // 2 // max(cfg.neighbours, 1) * CHARS_PER_TOKEN
    pool = [e for e in problem.split.train if not share or len(e.user) + len(e.expected) <= share]
    selection.score(
        Candidate(problem.baseline, tuple((e.user, e.expected) for e in pool), cfg.neighbours),
        f"{cfg.neighbours} nearest",
        f"the {cfg.neighbours} nearest of {len(pool)} training examples per question",
    )
    return _final(root, "nearest-fewshot", problem, selection, lineage, cfg)


def _covering_sample(
    train: list[Example], k: int, rng: random.Random, decision: Callable[[str], str]
) -> list[Example]:
    """`k` examples sampled so that different decisions come first, in a shuffled order."""
    by_answer: dict[str, list[Example]] = {}
    for example in rng.sample(train, len(train)):
        by_answer.setdefault(decision(example.expected), []).append(example)
    # one of each answer before a second of any (the answers' order itself is random)
    pools = list(by_answer.values())
    rng.shuffle(pools)
    chosen: list[Example] = []
    while len(chosen) < min(k, len(train)):
        for pool in pools:
            if pool and len(chosen) < k:
                chosen.append(pool.pop())
    rng.shuffle(chosen)
    return chosen


class Checkpoint:
    """The state after each finished round, so a restarted run picks up where it stopped."""

    def __init__(self, path: Path | None, key: str) -> None:
        self.path, self.key = path, key

    def load(self) -> dict[str, Any] | None:
        if self.path is None or not self.path.is_file():
            return None
        state = json.loads(self.path.read_text(encoding="utf-8"))
        return state if state.get("key") == self.key else None

    def save(self, state: dict[str, Any]) -> None:
        if self.path is not None:
            atomic_write_text(self.path, json.dumps({"key": self.key, **state}, ensure_ascii=False))


def instruction_search(
    root: StageScope,
    problem: Problem,
    cfg: OptimiserConfig,
    rng: random.Random,
    checkpoint: Checkpoint | None = None,
    **_: Any,
) -> OptimisationResult:
    """MIPRO-style: each round asks for `variants` rewrites of the current best, screens them on a
    training minibatch, and scores the round's best on validation; the best on validation wins."""
    state = (checkpoint.load() if checkpoint else None) or {
        "round": 0,
        "current": problem.baseline,
        "lineage": [],
        "validation": {},
        "best": problem.baseline,
        "rng": None,
    }
    if state["rng"] is not None:
        rng.setstate(_rng_state(state["rng"]))
    lineage: list[dict[str, Any]] = state["lineage"]
    selection = Selection(root, problem, lineage)
    selection.scores.update(state["validation"])
    if state["best"] != problem.baseline:  # resumed: the best of the finished rounds
        selection.best = Candidate(state["best"])
    baseline = Candidate(problem.baseline)
    selection.score(baseline, "baseline", "the agent's prompt")
    for round_number in range(state["round"] + 1, cfg.rounds + 1):
        batch = rng.sample(problem.split.train, min(cfg.train_batch, len(problem.split.train)))

        def run_round(scope: StageScope, number: int = round_number, batch: list[Example] = batch) -> None:
            current = state["current"]
            best, best_score = current, evaluate(scope, "current", Candidate(current), batch, problem)
            for variant in range(1, cfg.variants + 1):
                seed = cfg.seed * 1_000_003 + number * 1000 + variant
                rewrite = _sample(scope, REWRITE, current, cfg, seed, f"rewrite {variant}")
                if not rewrite:
                    lineage.append(
                        {
                            "round": number,
                            "variant": variant,
                            "split": "train",
                            "score": 0.0,
                            "notes": "empty rewrite, skipped",
                        }
                    )
                    continue
                score = evaluate(scope, f"variant {variant}", Candidate(rewrite), batch, problem)
                lineage.append(
                    {
                        "round": number,
                        "variant": variant,
                        "split": "train",
                        "score": score,
                        "prompt_id": prompt_id(rewrite),
                    }
                )
                if score > best_score:
                    best, best_score = rewrite, score
            selection.score(Candidate(best), f"round {number}", "the round's best on its minibatch", scope)
            state.update(current=best, round=number)

        root.run_stage_or_raise(f"round {round_number}", run_round, substages_total=cfg.variants * 2 + 2)
        state["rng"], state["validation"] = _rng_json(rng.getstate()), dict(selection.scores)
        state["best"] = selection.best.system if selection.best else problem.baseline
        if checkpoint:
            checkpoint.save(state)
    return _final(root, "instruction-search", problem, selection, lineage, cfg)


def prompt_evolution(
    root: StageScope, problem: Problem, cfg: OptimiserConfig, rng: random.Random, **_: Any
) -> OptimisationResult:
    """GEPA-style reflective evolution: each generation, every prompt of the population is run on a
    training minibatch and the proposer is shown its failures (input, answer, expected answer, score)
    to write an improved prompt; a child that does at least as well on the minibatch is scored on
    validation, and the `population` best on validation breed the next generation."""
    lineage: list[dict[str, Any]] = []
    selection = Selection(root, problem, lineage)
    population = [problem.baseline]
    selection.score(Candidate(problem.baseline), "baseline", "the agent's prompt")
    for generation in range(1, cfg.generations + 1):

        def breed(scope: StageScope, number: int = generation, parents: list[str] = population) -> list[str]:
            children = []
            for index, parent in enumerate(parents):
                batch = rng.sample(problem.split.train, min(cfg.train_batch, len(problem.split.train)))
                scored = answer_each(scope, f"parent {index}", Candidate(parent), batch, problem)
                failures = [(e, a, s) for e, (s, a) in zip(batch, scored, strict=True) if s < 1.0]
                if not failures:
                    lineage.append(
                        {
                            "round": number,
                            "variant": index,
                            "split": "train",
                            "score": 1.0,
                            "notes": "no failure to reflect on",
                        }
                    )
                    continue
                seed = cfg.seed * 1_000_003 + number * 1000 + index
                child = _sample(scope, REFLECT, _reflection(parent, failures), cfg, seed, f"reflect {index}")
                if not child:
                    continue
                parent_score = fmean(s for s, _ in scored)
                child_score = evaluate(scope, f"child {index}", Candidate(child), batch, problem)
                lineage.append(
                    {
                        "round": number,
                        "variant": index,
                        "split": "train",
                        "score": child_score,
                        "notes": f"reflected on {len(failures)} failures (parent {parent_score:.3f})",
                        "prompt_id": prompt_id(child),
                    }
                )
                if child_score >= parent_score:
                    selection.score(
                        Candidate(child), f"generation {number} child {index}", "reflective mutation", scope
                    )
                    children.append(child)
            return children

        children = root.run_stage_or_raise(f"generation {generation}", breed)
        pool = dict.fromkeys([*population, *children])
        population = sorted(pool, key=lambda p: -selection.scores[Candidate(p).id])[: cfg.population]
    return _final(root, "prompt-evolution", problem, selection, lineage, cfg)


def _reflection(prompt: str, failures: list[tuple[Example, str | None, float]]) -> str:
    parts = [f"Current system prompt:\n{prompt}", "", "Examples it got wrong:"]
    for number, (example, answer, score) in enumerate(failures, start=1):
        shown = example.user if len(example.user) <= _SHOWN_INPUT else "…" + example.user[-_SHOWN_INPUT:]
        parts += [
            "",
            f"Example {number}",
            f"Input:\n{shown}",
            f"Model's answer: {answer if answer is not None else '(no answer: the call failed)'}",
            f"Expected answer: {example.expected}",
            f"Score: {score:.2f} of 1",
        ]
    return "\n".join(parts)


def _final(
    root: StageScope,
    optimizer: str,
    problem: Problem,
    selection: Selection,
    lineage: list[dict[str, Any]],
    cfg: OptimiserConfig,
) -> OptimisationResult:
    """The baseline and the candidate chosen on validation, scored once on the same test examples."""
    baseline, best = Candidate(problem.baseline), selection.best or Candidate(problem.baseline)
    test = problem.split.test
    base_scores = evaluate_each(root, "test: baseline", baseline, test, problem)
    scores = base_scores if best == baseline else evaluate_each(root, "test: candidate", best, test, problem)
    base_score, score = (fmean(base_scores) if base_scores else 0.0), (fmean(scores) if scores else 0.0)
    lineage = [
        *lineage,
        {
            "round": "final",
            "variant": 0,
            "split": "test",
            "score": base_score,
            "notes": "baseline",
            "prompt_id": baseline.id,
        },
        {
            "round": "final",
            "variant": 1,
            "split": "test",
            "score": score,
            "notes": "chosen on validation",
            "prompt_id": best.id,
        },
    ]
    reference = best_constant([e.expected for e in test], problem.scorer)
    return OptimisationResult(
        optimizer,
        problem.baseline,
        best.system,
        base_score,
        score,
        [{"user": user, "expected": answer} for user, answer in best.demos],
        "turns" if best.neighbours else cfg.demo_style,
        best.neighbours,
        lineage,
        seed=cfg.seed,
        train_size=len(problem.split.train),
        validation_size=len(problem.split.validation),
        test_size=len(test),
        validation_baseline_score=selection.scores.get(baseline.id, 0.0),
        validation_score=selection.scores.get(best.id, 0.0),
        test_ids=[e.id for e in test],
        baseline_scores=base_scores,
        scores=scores,
        choices=list(problem.form.choices) if problem.form else None,
        answer_form=asdict(problem.form) if problem.form else None,
        reference_answer=reference.answer if reference else "",
        reference_scores=reference.scores if reference else [],
    )


def _rng_json(state: tuple) -> list:
    version, internal, gauss = state
    return [version, list(internal), gauss]


def _rng_state(saved: list) -> tuple:
    return (saved[0], tuple(saved[1]), saved[2])


PROGRAMS: dict[str, Callable[..., OptimisationResult]] = {
    "instruction-search": instruction_search,
    "prompt-evolution": prompt_evolution,
    "bootstrap-fewshot": bootstrap_fewshot,
    "nearest-fewshot": nearest_fewshot,
}
