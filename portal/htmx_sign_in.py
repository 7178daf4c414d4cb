"""A panel's background request (htmx) whose session has ended gets no sign-in page: htmx would swap that page into
the panel, and signing in there would land on the panel's fragment address. It gets an empty answer that takes the
whole page to sign-in and back to the page it was on (htmx's HX-Redirect, from its HX-Current-URL). Drawing no
sign-in form for it also sets no CSRF cookie, which would void the form of a sign-in page open in the same browser.
"""

from __future__ import annotations

from urllib.parse import urlencode, urlsplit

from django.conf import settings
from django.http import HttpResponse
from django.shortcuts import resolve_url


def page_of(current_url: str) -> str:
    """The path and query of the page htmx says it was on; "/" for anything that is not a plain local path."""
    page = urlsplit(current_url)
    if not page.path.startswith("/") or page.path.startswith("//") or "\\" in page.path:
        return "/"
    return page.path + (f"?{page.query}" if page.query else "")


class HtmxSignInMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        if request.headers.get("HX-Request") != "true" or response.status_code != 302:
            return response
        sign_in = resolve_url(settings.LOGIN_URL)
        if urlsplit(response["Location"]).path != sign_in:
            return response
        back_to = page_of(request.headers.get("HX-Current-URL", ""))
        whole_page = HttpResponse(status=204)
        whole_page["HX-Redirect"] = f"{sign_in}?{urlencode({'next': back_to})}"
        return whole_page
