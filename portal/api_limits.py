"""Bounds on what one API request may ask for: page sizes, body sizes and JSON nesting.

Every answer to an oversized or overdeep request is a 4xx with a message, never a 500: a limit past what the
database can hold is capped, a body past DATA_UPLOAD_MAX_MEMORY_SIZE is refused before it is read whole, and
JSON nested deeper than MAX_JSON_DEPTH is refused before the parser (whose recursion it would exhaust) sees it.
"""

from __future__ import annotations

import codecs
import re

from django.conf import settings
from rest_framework import status
from rest_framework.exceptions import APIException, ParseError
from rest_framework.pagination import LimitOffsetPagination
from rest_framework.parsers import JSONParser
from rest_framework.utils import json

MAX_PAGE_SIZE = 500
MAX_JSON_DEPTH = 32  # a job's params are flat; templates' schemas nest three levels

_STRINGS = re.compile(rb'"(?:[^"\\]|\\.)*"', re.DOTALL)
_BRACKETS = re.compile(rb"[\[\]{}]")


class Pagination(LimitOffsetPagination):
    """?limit=N&offset=M; any limit above MAX_PAGE_SIZE (however large) gives a page of MAX_PAGE_SIZE."""

    max_limit = MAX_PAGE_SIZE


class BodyTooLarge(APIException):
    status_code = status.HTTP_413_REQUEST_ENTITY_TOO_LARGE
    default_code = "body_too_large"


def json_depth(raw: bytes) -> int:
    """How deeply arrays and objects nest in `raw` (brackets inside strings do not count)."""
    depth = deepest = 0
    for match in _BRACKETS.finditer(_STRINGS.sub(b'""', raw)):
        depth += 1 if match.group() in (b"[", b"{") else -1
        deepest = max(deepest, depth)
    return deepest


class BoundedJSONParser(JSONParser):
    """JSONParser that reads at most DATA_UPLOAD_MAX_MEMORY_SIZE bytes and MAX_JSON_DEPTH levels."""

    def parse(self, stream, media_type=None, parser_context=None):
        limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        raw = stream.read(limit + 1) if stream is not None else b""
        if len(raw) > limit:
            raise BodyTooLarge(f"The request body is larger than {limit // 1024} KiB; send less.")
        if json_depth(raw) > MAX_JSON_DEPTH:
            raise ParseError(f"JSON nested deeper than {MAX_JSON_DEPTH} levels is refused; send a flatter body.")
        encoding = (parser_context or {}).get("encoding", settings.DEFAULT_CHARSET)
        try:
            text = codecs.decode(raw, encoding)
            return json.loads(text, parse_constant=json.strict_constant if self.strict else None)
        except (ValueError, RecursionError) as exc:  # RecursionError: only if MAX_JSON_DEPTH were set too high
            raise ParseError(f"The body is not valid JSON: {exc}") from None
