"""The OpenAPI schema documents every answer an endpoint can give, the refusals (4xx) included.

Each refusal carries a body a script can show as it is: {"detail": "…"} or, for invalid fields,
{"field": ["…"]}. Which codes an operation lists follows from the view: 401/403 where a login is needed,
404 where the path names an object, 400 everywhere (a path or a query can be malformed), 413 where a body is
read, 429 where a throttle is.
"""

from __future__ import annotations

from drf_spectacular import openapi
from rest_framework import permissions, serializers


class ErrorSerializer(serializers.Serializer):
    detail = serializers.CharField(help_text="What went wrong, written for the person who reads it.")


class ValidationErrorSerializer(serializers.Serializer):
    """Per invalid field, a list of messages (`params` holds one such object per parameter)."""

    detail = serializers.CharField(required=False, help_text="For a body that could not be read at all.")


MEANINGS = {
    "400": "The input is invalid; the body names each field and what to change.",
    "401": "No credentials, or a token that is not valid: send `Authorization: Token …`.",
    "403": "Signed in, but this action is not allowed (the message says why), or a missing CSRF token.",
    "404": "No such object, or one you may not see.",
    "413": "The request body is too large.",
    "429": "Too many requests, or too many failed sign-ins: the message says when to try again.",
}


class AutoSchema(openapi.AutoSchema):
    def _get_response_bodies(self, direction="response"):
        responses = super()._get_response_bodies(direction)
        for code, serializer in self._refusals():
            if code not in responses:
                responses[code] = self._get_response_for_code(serializer, code, direction=direction)
                responses[code]["description"] = MEANINGS[code]
        return responses

    def _refusals(self) -> list[tuple[str, type[serializers.Serializer]]]:
        codes: list[tuple[str, type[serializers.Serializer]]] = []
        reads_body = self.method in {"POST", "PUT", "PATCH"}
        codes.append(("400", ValidationErrorSerializer))  # every operation reads a path or a query
        if any(isinstance(p, permissions.IsAuthenticated) for p in self.view.get_permissions()):
            codes += [("401", ErrorSerializer), ("403", ErrorSerializer)]
        if "{" in self.path:
            codes.append(("404", ErrorSerializer))
        if reads_body:
            codes.append(("413", ErrorSerializer))
        if self.view.get_throttles():
            codes.append(("429", ErrorSerializer))
        return codes
