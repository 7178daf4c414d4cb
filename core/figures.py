"""How the portal writes its figures for people. One formatter per unit, so a budget reads the same on every page,
in every notice and in every e-mail."""

from __future__ import annotations

import math
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation

SIGNIFICANT = 2  # a small budget (0.05 h) keeps two significant digits: 0.05, 0.031, never "0.1" or "0.03"
MOST_DECIMALS = 4  # 0.0001 h is a third of a second: finer is noise


def gpu_hours(value) -> str:
    """GPU-hours as "12.5", "0.05" or "0.031": two decimals from 1 h up, two significant digits below, no
    trailing zeros (so a limit of 0.050 reads "0.05", and 20.00 reads "20")."""
    try:
        number = Decimal(str(value))
    except (InvalidOperation, ValueError, TypeError):
        return ""
    if not number.is_finite():
        return ""
    size = abs(number)
    if size >= 1 or size == 0:
        places = 2
    else:
        first = -size.adjusted()  # 0.05 → 2, 0.0031 → 3: the place of the first digit that is not zero
        places = min(MOST_DECIMALS, first + SIGNIFICANT - 1)
    text = f"{number.quantize(Decimal(1).scaleb(-places), rounding=ROUND_HALF_UP):f}"
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text


def percent_under(value: float) -> str:
    """A percentage that stayed under a rule's whole percent, rounded down to a tenth ("9.9", "0.2", "7"): rounded
    to the nearest, 9.7 would read "10" beside "below 10 %", the sentence it is in."""
    return f"{math.floor(value * 10) / 10:g}"
