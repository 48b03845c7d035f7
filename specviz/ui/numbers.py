"""A number typed into the page, checked exactly: an int or a float in a range, or `InputError` with a sentence
that names the field and gives the range (the field checks of `ui.inputs` and the classroom's boxes)."""
from __future__ import annotations

import math
from decimal import Decimal, InvalidOperation

from ..strings import DEFAULT_LANG, t


class InputError(ValueError):
    """Bad input from the page; the message is shown as is."""


def exact(value) -> Decimal | None:
    """`value` as an exact decimal (an int, a float or a text such as "2.5"); None when it is no finite number.

    Exact, so a whole number of any size keeps every digit (a float would round 2**63 + 1), and NaN, infinity and
    anything unreadable are refused rather than replaced."""
    if isinstance(value, bool) or value is None:
        return None
    try:
        d = Decimal(value) if isinstance(value, (int, float)) else Decimal(str(value).strip())
    except (InvalidOperation, ValueError, TypeError):
        return None
    return d if d.is_finite() else None


def shown(bound):
    """A range end for a message: 2 rather than 2.0."""
    return int(bound) if float(bound).is_integer() else bound


def whole_number(value, field_key: str, lo: int, hi: int, lang: str = DEFAULT_LANG) -> int:
    """`value` as an exact int in [lo, hi]; `field_key` names the field in messages (a strings key)."""
    name = t(field_key, lang)
    d = exact(value)
    if d is None:
        raise InputError(t("input.not_a_number", lang, name=name, lo=shown(lo), hi=shown(hi)))
    if d != d.to_integral_value() or not lo <= d <= hi:
        raise InputError(t("input.not_whole", lang, name=name, lo=shown(lo), hi=shown(hi)))
    return int(d)


def finite_number(value, field_key: str, lo: float, hi: float, lang: str = DEFAULT_LANG) -> float:
    """`value` as a finite float, or InputError naming the field (the range is checked by the caller)."""
    d = exact(value)
    if d is None or not math.isfinite(float(d)):
        raise InputError(t("input.not_a_number", lang, name=t(field_key, lang), lo=shown(lo), hi=shown(hi)))
    return float(d)


def number_between(value, field_key: str, lo: float, hi: float, lang: str = DEFAULT_LANG) -> float:
    """`value` as a float in [lo, hi]; anything else is refused with the same message, which gives the range."""
    f = finite_number(value, field_key, lo, hi, lang)
    if not lo <= f <= hi:
        raise InputError(t("input.not_a_number", lang, name=t(field_key, lang), lo=shown(lo), hi=shown(hi)))
    return f
