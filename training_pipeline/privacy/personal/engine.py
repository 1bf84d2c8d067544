"""Presidio's analyzer as the privacy filter uses it: which recognizers, which NLP engine.

Without a model (the default) the analyzer tokenises with a blank spaCy pipeline, whose lemmas are the
tokens' lower-case forms: enough for Presidio's context words ("card", "phone", "passport") to raise a
weak match, with nothing to download. Names then come from `NameCueRecognizer` and the entity directory.

With `TRAINING_PIPELINE_NER_MODEL` set (an installed spaCy pipeline's package name, or the folder of
one) the model also finds `PERSON` anywhere in a text. A model is never fetched at run time: one that is
not installed is an error saying so (Presidio itself would download it).
"""

from __future__ import annotations

import contextlib
import functools
import logging
import sys
import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import regex
import spacy
from spacy.language import Language


@contextlib.contextmanager
def _transformers_unimportable() -> Iterator[None]:
    """Presidio's package imports `transformers` wherever it is installed (its Hugging Face NLP engine
    and recognizers, each behind `except ImportError`), which costs seconds of CPU in every process that
    analyses text, a pool's workers among them. This filter uses none of it (a model is a spaCy
    pipeline), so while Presidio is imported `transformers` reads as not installed; a process that
    imported it already keeps it, and one that imports it later gets it as usual."""
    if "transformers" in sys.modules:
        yield
        return
    sys.modules["transformers"] = None  # type: ignore[assignment]
    try:
        yield
    finally:
        if sys.modules.get("transformers", 0) is None:
            del sys.modules["transformers"]


with _transformers_unimportable():
    from presidio_analyzer import AnalyzerEngine, EntityRecognizer, PatternRecognizer, RecognizerRegistry
    from presidio_analyzer import predefined_recognizers as presidio
    from presidio_analyzer.context_aware_enhancers import LemmaContextAwareEnhancer
    from presidio_analyzer.nlp_engine import SpacyNlpEngine

from training_pipeline.privacy.personal.recognizers import own_recognizers  # noqa: E402

__all__ = [
    "LANGUAGE",
    "SCORE_THRESHOLD",
    "ContextNeed",
    "analysing",
    "analyzer",
    "context_needs",
    "ner_analyzer",
]

#: the language every text is analysed as: recognizers of other countries are registered for it too,
#: each with its own context words (a German text is analysed for German ids all the same)
LANGUAGE = "en"
#: the least score a finding needs: Presidio's weak patterns (a bare nine-digit number as a passport,
#: 0.05) need a context word, validated ones (a card by Luhn, an IBAN by checksum) pass alone
SCORE_THRESHOLD = 0.4
#: the regions phone numbers are read for (as written in those countries, or with a + prefix anywhere)
PHONE_REGIONS = (
    "US",
    "GB",
    "DE",
    "FR",
    "ES",
    "IT",
    "NL",
    "PL",
    "SE",
    "PT",
    "BR",
    "IN",
    "AU",
    "CA",
    "MX",
    "JP",
)

#: Presidio's recognizers of people's data the filter uses (business, vehicle and postal codes, URLs,
#: dates and UUIDs are not a person's and are left out: `kinds.NATIONAL_IDS`)
_PRESIDIO = (
    "CreditCardRecognizer",
    "CryptoRecognizer",
    "IbanRecognizer",
    "UsBankRecognizer",
    "UsSsnRecognizer",
    "UsItinRecognizer",
    "UsPassportRecognizer",
    "UsLicenseRecognizer",
    "NhsRecognizer",
    "UkNinoRecognizer",
    "UkPassportRecognizer",
    "EsNifRecognizer",
    "EsNieRecognizer",
    "EsPassportRecognizer",
    "ItFiscalCodeRecognizer",
    "ItIdentityCardRecognizer",
    "ItPassportRecognizer",
    "PlPeselRecognizer",
    "FiPersonalIdentityCodeRecognizer",
    "SePersonnummerRecognizer",
    "DeTaxIdRecognizer",
    "DeIdCardRecognizer",
    "DePassportRecognizer",
    "InAadhaarRecognizer",
    "InPanRecognizer",
    "InPassportRecognizer",
    "InVoterRecognizer",
    "SgFinRecognizer",
    "AuTfnRecognizer",
    "AuMedicareRecognizer",
    "CaSinRecognizer",
    "KrRrnRecognizer",
    "KrPassportRecognizer",
    "ThTninRecognizer",
    "TrNationalIdRecognizer",
    "NgNinRecognizer",
    "ZaIdNumberRecognizer",
    "ZaPassportRecognizer",
    "PhUmidRecognizer",
    "PhPassportRecognizer",
)

# Presidio logs every recognizer it registers and every language it skips, at INFO and WARNING
logging.getLogger("presidio-analyzer").setLevel(logging.ERROR)


@Language.component("training_pipeline_lower_lemma")
def _lower_lemma(doc):  # type: ignore[no-untyped-def]
    """A blank pipeline has no lemmatiser: the lower-case form stands in, so context words match."""
    for token in doc:
        token.lemma_ = token.lower_
    return doc


class BlankSpacyNlpEngine(SpacyNlpEngine):
    """Presidio's spaCy engine over a blank pipeline: tokens and lower-case lemmas, no model, no NER."""

    def load(self) -> None:
        nlp = spacy.blank(LANGUAGE)
        nlp.add_pipe("training_pipeline_lower_lemma")
        self.nlp = {LANGUAGE: nlp}


def _presidio_recognizers(kinds: Iterable[str]) -> list[EntityRecognizer]:
    wanted = set(kinds)
    made: list[EntityRecognizer] = []
    for name in _PRESIDIO:
        recognizer = _tolerant(getattr(presidio, name))(supported_language=LANGUAGE)
        if wanted & set(recognizer.supported_entities):
            made.append(recognizer)
    return made


@functools.cache
def _tolerant(cls: type[EntityRecognizer]) -> type[EntityRecognizer]:
    """`cls`, with its own checks of a match answering "not valid" where they raise. Presidio's
    checksums look each character up in a table of capitals and digits, and the patterns they follow
    match case-insensitively: the Kelvin sign (`\u212a`) or a long s folds to a letter of the pattern
    and is no key of the table, and an Italian fiscal code's `KeyError` quarantined the trajectory
    whose text held one. A recognizer without checks of its own is `cls` itself."""
    checks: dict[str, object] = {}
    if issubclass(cls, PatternRecognizer):
        if cls.validate_result is not PatternRecognizer.validate_result:
            checks["validate_result"] = _answering(cls.validate_result, False)
        if cls.invalidate_result is not PatternRecognizer.invalidate_result:
            checks["invalidate_result"] = _answering(cls.invalidate_result, True)
    return type(cls.__name__, (cls,), checks) if checks else cls


def _answering(
    check: Callable[[Any, str], bool | None], otherwise: bool
) -> Callable[[Any, str], bool | None]:
    """`check`, answering `otherwise` where it raises (a value it cannot read is not one of its ids)."""

    def answer(self: Any, pattern_text: str) -> bool | None:
        try:
            return check(self, pattern_text)
        except (KeyError, ValueError, IndexError, TypeError):
            return otherwise

    return answer


@functools.cache
def analyzer(kinds: frozenset[str]) -> AnalyzerEngine:
    """An analyzer for `kinds` without a model: Presidio's recognizers and ours (one per process and
    kinds: a worker forked from a process that built it uses that one)."""
    engine = BlankSpacyNlpEngine(models=[{"lang_code": LANGUAGE, "model_name": "blank"}])
    engine.load()
    registry = RecognizerRegistry(supported_languages=[LANGUAGE])
    for recognizer in [*_presidio_recognizers(kinds), *own_recognizers(PHONE_REGIONS)]:
        if kinds & set(recognizer.supported_entities):
            registry.add_recognizer(recognizer)
    return AnalyzerEngine(
        nlp_engine=engine,
        registry=registry,
        supported_languages=[LANGUAGE],
        default_score_threshold=SCORE_THRESHOLD,
    )


@functools.cache
def ner_analyzer(model: str) -> AnalyzerEngine:
    """An analyzer of `PERSON` by the spaCy pipeline `model` (installed package or folder), which must be
    on this machine: it is never downloaded."""
    if not (spacy.util.is_package(model) or Path(model).is_dir()):
        raise ValueError(
            f"TRAINING_PIPELINE_NER_MODEL={model!r} is neither an installed spaCy pipeline nor a folder "
            "holding one; install it (pip install …) or unset the variable (names are then found by cue)"
        )
    engine = SpacyNlpEngine(models=[{"lang_code": LANGUAGE, "model_name": model}])
    engine.load()
    registry = RecognizerRegistry(supported_languages=[LANGUAGE])
    registry.add_recognizer(
        presidio.SpacyRecognizer(supported_language=LANGUAGE, supported_entities=["PERSON"])
    )
    return AnalyzerEngine(
        nlp_engine=engine,
        registry=registry,
        supported_languages=[LANGUAGE],
        default_score_threshold=SCORE_THRESHOLD,
    )


_ANALYSING = threading.RLock()
_depth = 0  # how many `analysing` blocks the thread holding the lock is in


@contextlib.contextmanager
def analysing(*engines: AnalyzerEngine) -> Iterator[None]:
    """A block of analyses by `engines` that leaves nothing in their spaCy vocabularies: each token a
    text brings that a vocabulary has not seen (a log's every id) would stay in it for the process's
    life, and a worker's memory grow with every id it ever read (spaCy's memory zones). One block at a
    time in a process, as a zone frees whatever was added while it was open, by any thread; a block
    opened inside another is part of it (zones do not nest)."""
    global _depth
    with _ANALYSING:
        if _depth:
            yield
            return
        _depth += 1
        try:
            with contextlib.ExitStack() as zones:
                for engine in engines:
                    zones.enter_context(engine.nlp_engine.nlp[LANGUAGE].memory_zone())
                yield
        finally:
            _depth -= 1


@dataclass(frozen=True)
class ContextNeed:
    """What a window must hold for a recognizer's findings there to reach the threshold: one of its
    context words (lower-case, `ς` read as `σ`), or a match of one of its patterns that score enough
    alone (`strong`)."""

    words: tuple[str, ...]
    strong: tuple[regex.Pattern[str], ...]

    def met_in(self, window: str, lowered: str) -> bool:
        """`lowered`: the window lower-case, `ς` read as `σ`."""
        return any(word in lowered for word in self.words) or any(
            pattern.search(window) is not None for pattern in self.strong
        )


def context_needs(engine: AnalyzerEngine) -> dict[str, tuple[ContextNeed, ...]]:
    """The entities whose every recognizer in `engine` finds them at the threshold only with a context
    word beside them, or where one of its strong patterns matches (`ContextNeed`): the finder leaves
    such an entity out of a window that meets none of its needs, where its findings would all be
    thrown away after costing the most (a log's every ten-digit id is a bank account, a driving
    licence and an Indian PAN to Presidio's weak patterns, each finding deep-copied and looked for
    among the window's tokens).

    Such a recognizer is one of Presidio's pattern recognizers as they come: no `analyze`,
    `validate_result` or context enhancement of its own, any of which could raise a score. A context
    word raises a finding only where a token's lemma holds it (substring matching); this engine's
    lemmas are the tokens' lower-case forms (`_lower_lemma`), each inside the window's (`ς` and `σ`
    aside, the one letter lowered by its neighbours), so a window whose lower-case form holds none of
    the words holds no such lemma. Any other enhancer or NLP engine, or a recognizer enhancing with
    others' findings, and nothing is left out."""
    enhancer = engine.context_aware_enhancer
    if (
        type(enhancer) is not LemmaContextAwareEnhancer
        or enhancer.context_matching_mode != "substring"
        or not isinstance(engine.nlp_engine, BlankSpacyNlpEngine)
    ):
        return {}
    recognizers = engine.registry.recognizers
    if any(type(r).enhance_using_context is not EntityRecognizer.enhance_using_context for r in recognizers):
        return {}
    needs: dict[str, tuple[ContextNeed, ...]] = {}
    found_without: set[str] = set()  # entities a recognizer may find with no context word
    for recognizer in recognizers:
        need = _context_need(recognizer, engine.default_score_threshold)
        if need is None:
            found_without.update(recognizer.supported_entities)
        else:
            entity = recognizer.supported_entities[0]
            needs[entity] = (*needs.get(entity, ()), need)
    return {entity: need for entity, need in needs.items() if entity not in found_without}


def _context_need(recognizer: EntityRecognizer, default_threshold: float) -> ContextNeed | None:
    cls = type(recognizer)
    if not (
        isinstance(recognizer, PatternRecognizer)
        and cls.analyze is PatternRecognizer.analyze
        and cls.validate_result is PatternRecognizer.validate_result
        and recognizer.patterns
        and recognizer.context
        and len(recognizer.supported_entities) == 1
    ):
        return None
    threshold = min((default_threshold, *recognizer.score_thresholds.values()))
    # as Presidio compiles them (a deny list is one more pattern, scoring 1.0)
    strong = tuple(
        regex.compile(pattern.regex, flags=recognizer.global_regex_flags)
        for pattern in recognizer.patterns
        if pattern.score >= threshold
    )
    words = tuple(word.lower().replace("ς", "σ") for word in recognizer.context)
    return ContextNeed(words, strong)
