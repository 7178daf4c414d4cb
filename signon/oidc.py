"""Sign-in through the campus OpenID provider (mozilla-django-oidc: authorization code, PKCE S256, state, nonce).

On top of the library this checks what it leaves out: the ID token's audience (our client id; `azp` when there are
several), issuer, expiry and issue time, with a small clock leeway. A person is found by, in order: the provider's
subject they signed in with before; the configured username claim (a roster account named so is joined); an email
address the provider says is VERIFIED. An unverified address never joins an existing account, and is not stored.
Staff and superuser accounts are never joined by a claim: whoever controls a name or address at the provider must
not inherit the portal's admin rights (admins get staff through the staff group claim instead).
Any failure is a message on the login page, never a 500.
"""

from __future__ import annotations

import logging
from urllib.parse import urlencode

import jwt
import requests
from django.conf import settings
from django.contrib import messages
from django.contrib.auth import get_user_model
from django.contrib.auth.validators import UnicodeUsernameValidator
from django.core.exceptions import SuspiciousOperation, ValidationError
from django.db import IntegrityError, transaction
from django.http import Http404
from django.shortcuts import resolve_url
from django.urls import reverse
from mozilla_django_oidc.auth import OIDCAuthenticationBackend
from mozilla_django_oidc.views import OIDCAuthenticationCallbackView, OIDCAuthenticationRequestView, OIDCLogoutView

from clusters.choices import IdentitySource

from . import identity
from .models import CampusIdentity, Source
from .sync import sync_memberships

log = logging.getLogger(__name__)

FAILED = "Signing in through the campus did not work ({reason}). Try again; if it keeps failing, ask the course staff."


STALE = "the sign-in was not started in this browser, was already used, or took too long"


class SignInRefused(Exception):
    """The provider answered, but what it said does not let this person in; the message says why."""


class CampusOIDCBackend(OIDCAuthenticationBackend):
    def authenticate(self, request, **kwargs):
        # Only the callback view passes a nonce; a password form with ?code=…&state=… in its URL is not for us.
        if request is None or "nonce" not in kwargs:
            return None
        try:
            return super().authenticate(request, **kwargs)
        except (SuspiciousOperation, SignInRefused, requests.RequestException, jwt.InvalidTokenError) as exc:
            log.warning("OIDC sign-in refused: %s", exc)
            request.signon_failure = _reason(exc)
            return None

    # -- the ID token -----------------------------------------------------------------------------------------
    def _verify_jws(self, payload, key):
        header = jwt.get_unverified_header(payload)
        if header.get("alg") != self.OIDC_RP_SIGN_ALGO:
            raise SuspiciousOperation(f"token signed with {header.get('alg')!r}, not {self.OIDC_RP_SIGN_ALGO}")
        claims = jwt.decode(
            payload,
            key,
            algorithms=[self.OIDC_RP_SIGN_ALGO],
            audience=self.OIDC_RP_CLIENT_ID,
            issuer=settings.OIDC_OP_ISSUER,
            leeway=settings.OIDC_CLOCK_LEEWAY_SECONDS,
            options={"require": ["exp", "iat", "aud", "iss", "sub"]},
        )
        audiences = claims["aud"] if isinstance(claims["aud"], list) else [claims["aud"]]
        if len(audiences) > 1 and claims.get("azp") != self.OIDC_RP_CLIENT_ID:
            raise SuspiciousOperation("token issued to several audiences without us as its authorized party")
        return claims

    def verify_token(self, token, **kwargs):
        claims = super().verify_token(token, **kwargs)
        self.id_claims = claims  # the subject is taken from the signed token, not from userinfo
        return claims

    # -- who it is --------------------------------------------------------------------------------------------
    def get_or_create_user(self, access_token, id_token, payload):
        try:
            user = super().get_or_create_user(access_token, id_token, payload)
        except SuspiciousOperation as exc:  # several accounts match the claims
            raise SignInRefused("more than one portal account matches you; ask an admin to merge them") from exc
        if user is None:  # OIDC_CREATE_USERS=0 and nobody matched
            raise SignInRefused("the portal has no account for you yet; ask your instructor to add you to the roster")
        return user

    def verify_claims(self, claims) -> bool:
        if claims.get("sub") != self.id_claims.get("sub"):
            raise SignInRefused("the provider's user information is about someone else")
        return True

    def filter_users_by_claims(self, claims):
        User = get_user_model()
        known = CampusIdentity.objects.filter(issuer=settings.OIDC_OP_ISSUER, subject=claims["sub"])
        if known.exists():
            return User.objects.filter(pk__in=known.values("user"))
        # An account already tied to another subject of this provider is someone else's, whatever its name; an admin
        # account is joined by nobody's claim.
        unclaimed = User.objects.exclude(campus_identities__issuer=settings.OIDC_OP_ISSUER).filter(
            is_staff=False, is_superuser=False
        )
        by_name = unclaimed.filter(username__iexact=self.get_username(claims))
        if by_name.exists():
            return by_name
        email = verified_email(claims)
        if email:
            return unclaimed.filter(email__iexact=email)
        return User.objects.none()

    def get_username(self, claims) -> str:
        claim = settings.SIGNON_OIDC_USERNAME_CLAIM
        username = str(claims.get(claim) or "")
        try:
            UnicodeUsernameValidator()(username)
        except ValidationError:
            username = ""
        if not username or len(username) > 150:
            raise SignInRefused(f"the provider sent no usable {claim}")
        return username

    def create_user(self, claims):
        try:
            with transaction.atomic():
                user = get_user_model().objects.create_user(self.get_username(claims), email=verified_email(claims))
        except IntegrityError:
            raise SignInRefused("that username is already taken by another person") from None
        return self.update_user(user, claims)

    def update_user(self, user, claims):
        CampusIdentity.objects.get_or_create(
            issuer=settings.OIDC_OP_ISSUER, subject=claims["sub"], defaults={"user": user}
        )
        fields = {"first_name": claims.get("given_name"), "last_name": claims.get("family_name")}
        fields["email"] = verified_email(claims)
        groups = self.groups(claims)
        if settings.SIGNON_OIDC_STAFF_GROUPS:
            fields["is_staff"] = bool(groups & set(settings.SIGNON_OIDC_STAFF_GROUPS))
        changed = [name for name, value in fields.items() if value not in (None, "") and getattr(user, name) != value]
        if "is_staff" in fields and user.is_staff != fields["is_staff"]:
            changed.append("is_staff")
        for name in set(changed):
            setattr(user, name, fields[name])
        if changed:
            user.save(update_fields=sorted(set(changed)))
        if settings.SIGNON_OIDC_GROUPS_CLAIM:
            sync_memberships(user, Source.OIDC, groups)
        if settings.SIGNON_OIDC_CLUSTER_USERNAME_CLAIM:
            identity.record_cluster_username(
                user, claims.get(settings.SIGNON_OIDC_CLUSTER_USERNAME_CLAIM), IdentitySource.OIDC
            )
        return user

    @staticmethod
    def groups(claims) -> set[str]:
        value = claims.get(settings.SIGNON_OIDC_GROUPS_CLAIM) if settings.SIGNON_OIDC_GROUPS_CLAIM else None
        if isinstance(value, str):
            return {value}
        return {str(item) for item in value} if isinstance(value, list) else set()


def verified_email(claims) -> str:
    """The email address, only when the provider vouches for it (email_verified is true)."""
    email = claims.get("email")
    return str(email) if email and claims.get("email_verified") is True else ""


def _reason(exc: Exception) -> str:
    if isinstance(exc, SignInRefused):
        return str(exc)
    if isinstance(exc, requests.HTTPError):
        return "the provider refused the sign-in code; it may have been used already"
    if isinstance(exc, requests.RequestException):
        return "the campus provider did not answer"
    if isinstance(exc, jwt.ExpiredSignatureError):
        return "the provider's token has expired; check this server's clock"
    return "the provider's answer could not be verified"


class LoginView(OIDCAuthenticationRequestView):
    """GET /oidc/login/: off (404) unless OIDC is configured."""

    def __init__(self, *args, **kwargs):
        if not settings.SIGNON_OIDC:
            raise Http404("Campus sign-in is not configured.")
        super().__init__(*args, **kwargs)


class CallbackView(OIDCAuthenticationCallbackView):
    """GET /oidc/callback/: a refused or broken answer goes back to the login page with the reason."""

    def get(self, request):
        if not settings.SIGNON_OIDC:
            raise Http404("Campus sign-in is not configured.")
        try:
            return super().get(request)
        except SuspiciousOperation as exc:  # an unknown or reused state
            log.warning("OIDC callback refused: %s", exc)
            request.signon_failure = STALE
            return self.login_failure()

    def login_failure(self):
        reason = getattr(self.request, "signon_failure", None)
        if self.request.GET.get("error"):
            reason = "the provider said: " + self.request.GET.get("error_description", self.request.GET["error"])[:200]
        messages.error(self.request, FAILED.format(reason=reason or STALE))
        return super().login_failure()

    @property
    def failure_url(self) -> str:
        return resolve_url(settings.LOGIN_REDIRECT_URL_FAILURE)


def provider_logout_url(request) -> str:
    """Where logging out sends the browser: the provider's end_session (it ends the campus session too), then back."""
    endpoint = settings.OIDC_OP_END_SESSION_ENDPOINT
    back = request.build_absolute_uri(reverse(settings.LOGOUT_REDIRECT_URL))
    id_token = request.session.get("oidc_id_token")
    if not endpoint or not id_token:
        return back
    query = {"id_token_hint": id_token, "post_logout_redirect_uri": back, "client_id": settings.OIDC_RP_CLIENT_ID}
    return f"{endpoint}?{urlencode(query)}"


class LogoutView(OIDCLogoutView):
    """POST /logout/: ends the portal session and, after an OIDC sign-in, the campus one (end_session)."""
