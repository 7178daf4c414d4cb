"""Routes to ASGI applications (Channels consumers, the notebook proxy, Django itself) for Channels' URLRouter.

URLRouter matches Django's own path() and re_path() patterns. Django's types say a pattern leads to a view, Channels'
want one that leads to an ASGI application: these build Django's pattern and type it as Channels' pattern."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

from django.urls import path, re_path

if TYPE_CHECKING:
    from channels.routing import _ExtendedURLPattern as AsgiRoute  # the stubs' name for a pattern to an ASGI app


def asgi_path(route: str, app: Any) -> AsgiRoute:
    return cast("AsgiRoute", path(route, app))


def asgi_re_path(route: str, app: Any) -> AsgiRoute:
    return cast("AsgiRoute", re_path(route, app))
