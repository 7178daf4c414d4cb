"""A person's notification pages: choosing per event and channel, the one-click unsubscribe of a mail's link, and
the small feed the open portal page reads to show browser notifications."""

from __future__ import annotations

from datetime import timedelta

from django.contrib import messages
from django.contrib.auth import get_user_model
from django.contrib.auth.decorators import login_required
from django.core import signing
from django.http import Http404, JsonResponse
from django.shortcuts import redirect, render
from django.utils import timezone
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST

from . import preferences
from .events import Channel, Event
from .models import Notification
from .unsubscribe import read

FEED_SIZE = 10
FEED_HOURS = 24  # older browser messages are not shown when someone opens a page days later


@login_required
def preferences_page(request):
    if request.method == "POST":
        preferences.save(request.user, set(request.POST))
        messages.success(request, "Saved. The portal tells you about these events as you chose.")
        return redirect("notifications:preferences")
    rows = [
        (event, [(channel, preferences.field_name(event, channel), on) for channel, on in cells])
        for event, cells in preferences.matrix(request.user)
    ]
    context = {"rows": rows, "channels": [Channel.EMAIL, Channel.BROWSER], "has_email": bool(request.user.email)}
    return render(request, "notifications/preferences.html", context)


@csrf_exempt  # the signed token is the credential; mail clients POST here for one-click unsubscribe (RFC 8058)
def unsubscribe(request, token: str):
    try:
        user_id, event = read(token)
        user = get_user_model().objects.get(pk=user_id, is_active=True)
        event = Event(event)
    except (signing.BadSignature, ValueError, get_user_model().DoesNotExist):
        raise Http404("This unsubscribe link is damaged or no longer valid.") from None
    done = request.method == "POST"
    if done:
        preferences.unsubscribe(user, event)
    return render(request, "notifications/unsubscribe.html", {"event": event, "done": done, "who": user})


@require_POST
def browser_feed(request):
    """The signed-in person's browser messages not yet shown, oldest first; each is shown once."""
    if not request.user.is_authenticated:
        return JsonResponse({"detail": "Sign in to receive notifications."}, status=403)
    since = timezone.now() - timedelta(hours=FEED_HOURS)
    waiting = Notification.objects.filter(
        user=request.user, channel=Channel.BROWSER, status=Notification.Status.QUEUED, created_at__gte=since
    ).order_by("created_at")[:FEED_SIZE]
    items = [{"id": n.pk, "title": n.subject, "body": n.text[:300], "url": n.url} for n in waiting]
    Notification.objects.filter(pk__in=[i["id"] for i in items], status=Notification.Status.QUEUED).update(
        status=Notification.Status.SENT, sent_at=timezone.now()
    )
    return JsonResponse({"notifications": items})
