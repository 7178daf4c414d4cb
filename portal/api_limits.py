"""Bounds on what one API request may ask for: page sizes, body sizes and JSON nesting.

Every answer to an oversized or overdeep request is a 4xx with a message, never a 500: a limit past what the
database can hold is capped, a body past DATA_UPLOAD_MAX_MEMORY_SIZE is refused before it is read whole, and
JSON nested deeper than MAX_JSON_DEPTH is refused before the parser (whose recursion it would exhaust) sees it.
"""

from __future__ import annotations

import codecs
import re

from django.conf import settings
from django.http import QueryDict
from rest_framework import status
from rest_framework.exceptions import APIException, ParseError, ValidationError
from rest_framework.pagination import LimitOffsetPagination
from rest_framework.parsers import FormParser, JSONParser
from rest_framework.utils import json

MAX_PAGE_SIZE = 500
MAX_JSON_DEPTH = 32  # a job's params are flat; templates' schemas nest three levels

_STRINGS = re.compile(rb'"(?:[^"\\]|\\.)*"', re.DOTALL)
_BRACKETS = re.compile(rb"[\[\]{}]")
_DIGITS = re.compile(r"[0-9]{1,100}")


class Pagination(LimitOffsetPagination):
    """?limit=N&offset=M in the digits 0-9; a limit above MAX_PAGE_SIZE (however large) gives a page of that size,
    an offset past the end an empty page. Anything else is a 400 that says so, not a silent default."""

    max_limit = MAX_PAGE_SIZE

    def get_limit(self, request):
        text = request.query_params.get(self.limit_query_param)
        if text is None:
            return self.default_limit
        return min(_whole_number(self.limit_query_param, text, minimum=1), self.max_limit)

    def get_offset(self, request):
        text = request.query_params.get(self.offset_query_param)
        return 0 if text is None else _whole_number(self.offset_query_param, text, minimum=0)

    def get_schema_operation_parameters(self, view):
        parameters = super().get_schema_operation_parameters(view)
        for parameter in parameters:
            parameter["schema"]["minimum"] = 1 if parameter["name"] == self.limit_query_param else 0
        return parameters


def _whole_number(name: str, text: str, *, minimum: int) -> int:
    if not _DIGITS.fullmatch(text) or int(text) < minimum:
        raise ValidationError({name: [f"A whole number, {minimum} or more, written with the digits 0-9."]})
    return int(text)


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


def read_bounded(stream) -> bytes:
    """The whole body, or BodyTooLarge once it passes DATA_UPLOAD_MAX_MEMORY_SIZE (the rest is never read)."""
    limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
    raw = stream.read(limit + 1) if stream is not None else b""
    if len(raw) > limit:
        raise BodyTooLarge(f"The request body is larger than {limit // 1024} KiB; send less.")
    return raw


class BoundedFormParser(FormParser):
    """FormParser (the token endpoint's `-d username=…`) that reads at most DATA_UPLOAD_MAX_MEMORY_SIZE bytes."""

    def parse(self, stream, media_type=None, parser_context=None):
        encoding = (parser_context or {}).get("encoding", settings.DEFAULT_CHARSET)
        return QueryDict(read_bounded(stream), encoding=encoding)


class BoundedJSONParser(JSONParser):
    """JSONParser that reads at most DATA_UPLOAD_MAX_MEMORY_SIZE bytes and MAX_JSON_DEPTH levels."""

    def parse(self, stream, media_type=None, parser_context=None):
        raw = read_bounded(stream)
        if json_depth(raw) > MAX_JSON_DEPTH:
            raise ParseError(f"JSON nested deeper than {MAX_JSON_DEPTH} levels is refused; send a flatter body.")
        encoding = (parser_context or {}).get("encoding", settings.DEFAULT_CHARSET)
        try:
            text = codecs.decode(raw, encoding)
            return json.loads(text, parse_constant=json.strict_constant if self.strict else None)
        except (ValueError, RecursionError) as exc:  # RecursionError: only if MAX_JSON_DEPTH were set too high
            raise ParseError(f"The body is not valid JSON: {exc}") from None
