"""The API half of signing a command-line client in through the browser (signon/cli_login.py): start, then poll."""

from __future__ import annotations

import hashlib
import unicodedata

from django.core.cache import cache
from django.urls import reverse
from drf_spectacular.utils import OpenApiResponse, extend_schema, inline_serializer
from rest_framework import serializers, status
from rest_framework.permissions import AllowAny
from rest_framework.response import Response
from rest_framework.throttling import AnonRateThrottle
from rest_framework.views import APIView

from . import cli_login


class CliLoginThrottle(AnonRateThrottle):
    scope = "cli_login"  # starting sign-ins; a class behind one address may start sixty at once


class StartSerializer(serializers.Serializer):
    client = serializers.CharField(max_length=100, help_text='What the client is, shown to the user: "gpulab on pc-7".')

    def validate_client(self, value: str) -> str:
        # Shown on the confirmation page: no line breaks, control or invisible characters (bidirectional overrides)
        # that could make it read as something else.
        if any(unicodedata.category(ch) in ("Cc", "Cf") for ch in value):
            raise serializers.ValidationError("Use printable characters only.")
        return value


class PollSerializer(serializers.Serializer):
    device_code = serializers.CharField(max_length=100)


class CliLoginStart(APIView):
    """Start a browser-confirmed sign-in: the client shows `user_code` and `verification_url`, then polls
    `/api/v1/token/code/poll/` with `device_code` every `interval` seconds until the user has confirmed."""

    permission_classes = [AllowAny]
    authentication_classes: list = []
    throttle_classes = [CliLoginThrottle]

    @extend_schema(
        operation_id="token_code_start",
        request=StartSerializer,
        responses={
            201: inline_serializer(
                "CliLoginStarted",
                {
                    "device_code": serializers.CharField(),
                    "user_code": serializers.CharField(),
                    "verification_url": serializers.URLField(),
                    "expires_in": serializers.IntegerField(),
                    "interval": serializers.IntegerField(),
                },
            ),
            400: OpenApiResponse(description="No client description, or one too long."),
            429: OpenApiResponse(description="Too many sign-ins started from this address: wait a minute."),
        },
    )
    def post(self, request):
        data = StartSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        started = cli_login.start(data.validated_data["client"], request.META.get("REMOTE_ADDR"))
        return Response(
            {
                "device_code": started.device_code,
                "user_code": cli_login.shown(started.user_code),
                "verification_url": request.build_absolute_uri(reverse("cli_login")),
                "expires_in": started.expires_in,
                "interval": cli_login.POLL_SECONDS,
            },
            status=status.HTTP_201_CREATED,
        )


class CliLoginPoll(APIView):
    """Ask whether the user has confirmed: 200 with the token once (the code is then used up), 202 while waiting,
    410 when it was refused, expired or already used."""

    permission_classes = [AllowAny]
    authentication_classes: list = []

    @extend_schema(
        operation_id="token_code_poll",
        request=PollSerializer,
        responses={
            200: inline_serializer(
                "CliLoginToken", {"token": serializers.CharField(), "username": serializers.CharField()}
            ),
            202: OpenApiResponse(description="Not confirmed yet: ask again after `interval` seconds."),
            429: OpenApiResponse(description="Asked again sooner than `interval` seconds: slow down."),
            410: OpenApiResponse(description="Refused in the browser, expired or already used; `detail` says which."),
        },
    )
    def post(self, request):
        data = PollSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        # Per sign-in, not per address (a class behind one NAT polls at once): faster than asked is told to slow down.
        pace = "gpulab:cli-login:poll:" + hashlib.sha256(data.validated_data["device_code"].encode()).hexdigest()
        if not cache.add(pace, 1, cli_login.POLL_SECONDS - 0.5):
            return Response(
                {"detail": f"Too fast: ask every {cli_login.POLL_SECONDS} seconds."},
                status=status.HTTP_429_TOO_MANY_REQUESTS,
            )
        try:
            token, username = cli_login.collect(data.validated_data["device_code"])
        except cli_login.Pending:
            return Response({"detail": "Waiting for you to confirm in the browser."}, status=status.HTTP_202_ACCEPTED)
        except cli_login.Ended as exc:
            return Response({"detail": str(exc)}, status=status.HTTP_410_GONE)
        return Response({"token": token, "username": username})
