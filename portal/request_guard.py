"""A NUL character in a URL's path or query is refused with a 400 before any view runs.

No id, slug or filter of the portal can hold one, and PostgreSQL refuses it in a query, so a view that passed
it on would answer 500 instead of "no such thing".
"""

from __future__ import annotations

from urllib.parse import unquote_plus

from django.http import HttpResponseBadRequest, JsonResponse

MESSAGE = "The address holds a NUL character (%00); remove it."


class RefuseNulMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if "\x00" in request.path or "\x00" in unquote_plus(request.META.get("QUERY_STRING", "")):
            if request.path.startswith("/api/"):
                return JsonResponse({"detail": MESSAGE}, status=400)
            return HttpResponseBadRequest(MESSAGE, content_type="text/plain")
        return self.get_response(request)
