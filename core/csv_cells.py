"""CSV the portal writes, with every text cell a spreadsheet shows as text (OWASP "CSV injection").

A cell that starts with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return is read by Excel, LibreOffice and
Google Sheets as a formula: a student named ``=HYPERLINK(...)`` or a template titled ``@SUM(...)`` would run in the
instructor's spreadsheet. Such text gets a leading single quote. Numbers stay numbers (``-1.5`` written from a
float is a number, not a formula); only strings are escaped. Every CSV writer in the portal goes through
``writer()`` (tests/test_csv_cells.py checks that no other module calls ``csv.writer``).
"""

from __future__ import annotations

import csv
from collections.abc import Iterable
from typing import Any

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def cell(value: Any) -> Any:
    """The value as written to a CSV cell: text that a spreadsheet would read as a formula gets a leading quote."""
    if isinstance(value, str) and value.startswith(FORMULA_STARTS):
        return "'" + value
    return value


class SafeWriter:
    """``csv.writer`` whose rows pass through ``cell()``."""

    def __init__(self, file, **options) -> None:
        self._writer = csv.writer(file, **options)

    def writerow(self, row: Iterable[Any]):
        return self._writer.writerow([cell(value) for value in row])

    def writerows(self, rows: Iterable[Iterable[Any]]) -> None:
        for row in rows:
            self.writerow(row)


def writer(file, **options) -> SafeWriter:
    """The portal's CSV writer: ``csv.writer(file, **options)`` with formula-looking text escaped."""
    return SafeWriter(file, **options)
