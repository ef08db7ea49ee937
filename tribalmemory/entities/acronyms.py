"""Acronyms: the words in capitals, which of them name one thing (``EKS``, ``AWS``) and which a
kind of thing or a part of code (``API``, ``PID-3``, ``an SAQ``), and a model number after one."""

from __future__ import annotations

import re

from tribalmemory.entities.stoplist import (
    CAPITALISED_WORDS,
    GENERIC_ACRONYMS,
    GENERIC_WITH_DIGITS,
    STOP,
)

ACRONYM = re.compile(r"[A-Z0-9&]*[A-Z][A-Z0-9&]*[A-Z][A-Z0-9&]*")
"""Two capitals or more and no small letter: ``PS5``, ``GPU``; such a word stands alone,
never ends a name (``Hollowmere PS5``, ``Linux VM``), and opens one only inside a sentence
(:func:`.names._opens_a_name`)."""
PLURAL_ACRONYM = re.compile(r"[A-Z0-9&]*[A-Z][A-Z0-9&]*[A-Z0-9][A-Z0-9&]*(?:e?s|'s|\u2019s)")
"""An acronym's plural (``APIs``, ``SKUs``, ``P1s``): a kind of thing, never one thing; it
stands alone as an acronym does."""


_ROMAN = re.compile(r"M{0,3}(?:C[MD]|D?C{0,3})(?:X[CL]|L?X{0,3})(?:I[XV]|V?I{0,3})")
"""A Roman numeral (``Type II``, ``Phase IV``): a number, no name."""


def generic_acronym(surface: str) -> bool:
    """Whether an acronym without a digit names a kind of thing, not one: on the list of
    generic acronyms (:data:`GENERIC_ACRONYMS`: ``API``, ``DNS``, ``KPI``), a Roman numeral,
    longer than six letters (``HTTPS`` is listed, a longer one is a word in capitals) or with an
    ``&`` (``R&D``, ``Q&A``)."""
    return (
        surface in GENERIC_ACRONYMS
        or "&" in surface
        or not 2 < len(surface) <= 6
        or bool(_ROMAN.fullmatch(surface))
    )


def generic_with_digits(surface: str) -> bool:
    """Whether an acronym with a digit names a kind of thing (``I2C``, ``UTF-16``:
    :data:`GENERIC_WITH_DIGITS`), as :func:`generic_acronym` tells of those without one."""
    return surface.replace("-", "").upper() in GENERIC_WITH_DIGITS


_CODE_BEFORE = re.compile(r"(?:[<|^~_=]|\w[-+])$")
_CODE_AFTER = re.compile(r"[>|^~_=]|-[\dA-Z*<]|\+\w")
"""What joins an acronym to a longer token written as code, before it and after it."""
_SYNTAX_BEFORE = re.compile(r"\b([A-Z]+)(?: \+)? $")
_SYNTAX_AFTER = re.compile(r"(?: \+)? ([A-Z]+)\b")
"""A word in capitals right before or after another (one space, or `` + ``)."""
_COUNTING_WORD = (
    r"(?i:an?|each|every|per|both|either|another|any|no|one|two|three|four|several|multiple)"
)
"""A word that counts the word after it (``an SAQ``, ``each NRF``, ``both ADAHRS``)."""
_COUNTED_BEFORE = re.compile(rf"(?:^|\s){_COUNTING_WORD}\s+$")
_NO_NOUN_AFTER = re.compile(r"\s*(?:[^\w\s]|$)|\s+([a-z]+)\b")
"""What follows a counted acronym when no noun follows it (``an SAQ.``, ``a TIA before``):
punctuation, the end, or a small word."""
LETTER_ACRONYM = r"[A-Z]{3,6}"
"""An acronym of three to six letters: one the statistic of kind words keeps (two letters and
longer words in capitals are generic already: :func:`generic_acronym`)."""


MODEL = re.compile(
    r" \d{3,}(?![\w.:/%-]|,\d| ?(?:[kKmM]?[bB]|h|hrs?|min|s|ms|x|k|m|d)\b)(?: [A-Z]{2,3}\b)?"
)
"""A model number after an acronym (``RTX 3070``, ``RX 5700 XT``): a whole number of three digits
or more, no release (``RDS 16.4``), measure nor time, with a short suffix in capitals; one digit
or two is a major release (``JUCE 8``, ``CCE 18``), a setting's value (``CRF 23``, ``DC 90 %``)
or a return code (``RC 4``), and the few names written so (``ROS 2``, ``SOC 2``) are listed
products (:data:`.products.PRODUCT_PHRASES`)."""


def counted(text: str, start: int, end: int) -> bool:
    """Whether an acronym is counted (an article, ``each``, ``both``, a number in words) and no
    noun follows it (``an SAQ``, ``a TIA before``, ``from each NRF.``; not ``a ZFS snapshot``):
    a common noun, one of a kind of thing."""
    return bool(_COUNTED_BEFORE.search(text, max(0, start - 12), start)) and _no_noun_after(
        text, end
    )


def _no_noun_after(text: str, end: int) -> bool:
    after = _NO_NOUN_AFTER.match(text, end)
    return after is not None and (after.group(1) is None or after.group(1) in STOP)


_LETTERS_PLURAL = re.compile(rf"\b({LETTER_ACRONYM})e?s\b")
"""An acronym of letters written as a plural (``NRFs``, ``SEPPs``)."""
_COUNTED_LETTERS = re.compile(rf"\b{_COUNTING_WORD}\s+({LETTER_ACRONYM})\b(?![-.]\w)")
"""An acronym of letters after a counting word (``each NRF``, ``both ADAHRS``)."""


def kind_words(text: str) -> set[str]:
    """The acronyms of letters a text uses as a kind of thing, not one thing: written as a
    plural (``two NRFs``) or counted with no noun after (``from each NRF``, ``both ADAHRS.``;
    not ``a ZFS snapshot``). A project that once writes an acronym so uses it as a common
    noun (the project-wide statistic of :class:`.known.Taught`): an unknown trade's
    acronyms (``OFP``, ``SEPP``) are told from its products (``EKS``) without a list."""
    words = {m.group(1) for m in _LETTERS_PLURAL.finditer(text)}
    words.update(
        m.group(1) for m in _COUNTED_LETTERS.finditer(text) if _no_noun_after(text, m.end())
    )
    return words


def named_acronym(word: str) -> bool:
    """Whether a word is an acronym of letters that names one thing (``AWS``, ``DMS``): not a
    generic one (:func:`generic_acronym`)."""
    return word.isalpha() and not generic_acronym(word)


def acronym_in_code(text: str, start: int, end: int) -> bool:
    """Whether an acronym is a part of a longer token written as code: a placeholder
    (``<CLIENT>``), a field of a message (``MRN^^^NRH``, ``ZPV|1``), a setting's value
    (``=ROW``), a key with a number or a code after its hyphen (``PID-3``, ``HF-RPM``,
    ``COMP-*``), or after a word and a hyphen (``pt-BR``); not an English compound after it
    (``AWS-managed``)."""
    if _CODE_BEFORE.search(text, max(0, start - 2), start) or _CODE_AFTER.match(text, end):
        return True
    return any(
        m is not None and (m.group(1) in CAPITALISED_WORDS or len(m.group(1)) > 6)
        for m in (
            _SYNTAX_BEFORE.search(text, max(0, start - 16), start),
            _SYNTAX_AFTER.match(text, end),
        )
    )
