"""Sign-in settings from the environment: local passwords, campus OIDC, campus LDAP, in any combination.

`sign_on_settings()` returns the Django settings for what the environment enables (portal/settings.py adds them
to its own; tests call it again after changing the environment). Every variable is listed in docs/operations.md,
"Single sign-on". At least one way in must be on, and an enabled method must be complete, or the portal refuses
to start with a message naming the missing variable.
"""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ImproperlyConfigured

from .env import env_bool, env_float, env_list, env_str

AXES_BACKEND = "axes.backends.AxesStandaloneBackend"  # first: a locked-out name or address gets no further
LOCAL_BACKEND = "django.contrib.auth.backends.ModelBackend"
LDAP_BACKEND = "signon.ldap.CampusLDAPBackend"
OIDC_BACKEND = "signon.oidc.CampusOIDCBackend"

OIDC_REQUIRED = [
    "OIDC_ISSUER",
    "OIDC_AUTHORIZATION_ENDPOINT",
    "OIDC_TOKEN_ENDPOINT",
    "OIDC_USERINFO_ENDPOINT",
    "OIDC_JWKS_ENDPOINT",
    "OIDC_CLIENT_ID",
    "OIDC_CLIENT_SECRET",
]


def _require(names: list[str], what: str) -> None:
    missing = [name for name in names if not env_str(name)]
    if missing:
        raise ImproperlyConfigured(f"{what} is on but {', '.join(missing)} is not set (see docs/operations.md).")


def oidc_settings() -> dict[str, Any]:
    """mozilla-django-oidc's settings: authorization code with PKCE (S256), state and nonce, ID token verified."""
    _require(OIDC_REQUIRED, "OIDC sign-in (OIDC_ISSUER)")
    return {
        "OIDC_OP_ISSUER": env_str("OIDC_ISSUER"),
        "OIDC_OP_AUTHORIZATION_ENDPOINT": env_str("OIDC_AUTHORIZATION_ENDPOINT"),
        "OIDC_OP_TOKEN_ENDPOINT": env_str("OIDC_TOKEN_ENDPOINT"),
        "OIDC_OP_USER_ENDPOINT": env_str("OIDC_USERINFO_ENDPOINT"),
        "OIDC_OP_JWKS_ENDPOINT": env_str("OIDC_JWKS_ENDPOINT"),
        "OIDC_OP_END_SESSION_ENDPOINT": env_str("OIDC_END_SESSION_ENDPOINT"),
        "OIDC_RP_CLIENT_ID": env_str("OIDC_CLIENT_ID"),
        "OIDC_RP_CLIENT_SECRET": env_str("OIDC_CLIENT_SECRET"),
        "OIDC_RP_SIGN_ALGO": env_str("OIDC_SIGN_ALGO", "RS256"),
        "OIDC_RP_SCOPES": env_str("OIDC_SCOPES", "openid email profile"),
        "OIDC_USE_PKCE": True,
        "OIDC_PKCE_CODE_CHALLENGE_METHOD": "S256",
        "OIDC_USE_NONCE": True,
        "OIDC_STORE_ID_TOKEN": True,  # the id_token_hint of the provider's logout
        "OIDC_TIMEOUT": env_float("OIDC_TIMEOUT_SECONDS", 10.0),
        "OIDC_VERIFY_SSL": env_bool("OIDC_VERIFY_TLS", True),
        "OIDC_CREATE_USER": env_bool("OIDC_CREATE_USERS", True),
        "OIDC_CLOCK_LEEWAY_SECONDS": env_float("OIDC_CLOCK_LEEWAY_SECONDS", 30.0),
        "OIDC_AUTHENTICATION_CALLBACK_URL": "signon:oidc_callback",
        "OIDC_OP_LOGOUT_URL_METHOD": "signon.oidc.provider_logout_url",
        "LOGIN_REDIRECT_URL_FAILURE": "login",
        "SIGNON_OIDC_USERNAME_CLAIM": env_str("OIDC_USERNAME_CLAIM", "preferred_username"),
        "SIGNON_OIDC_GROUPS_CLAIM": env_str("OIDC_GROUPS_CLAIM", ""),
        "SIGNON_OIDC_STAFF_GROUPS": env_list("OIDC_STAFF_GROUPS"),
        "SIGNON_OIDC_CLUSTER_USERNAME_CLAIM": env_str("OIDC_CLUSTER_USERNAME_CLAIM", ""),
        "SIGNON_OIDC_BUTTON": env_str("OIDC_BUTTON_LABEL", "Sign in with your campus account"),
    }


def ldap_settings() -> dict[str, Any]:
    """django-auth-ldap's settings: search the user (with the service DN), bind as them, map names, mail, staff."""
    import ldap
    from django_auth_ldap.config import GroupOfNamesType, LDAPSearch, PosixGroupType

    _require(["LDAP_USER_SEARCH_BASE"], "LDAP sign-in (LDAP_SERVER_URI)")
    group_types = {"groupOfNames": GroupOfNamesType, "posixGroup": PosixGroupType}
    group_type = env_str("LDAP_GROUP_TYPE", "groupOfNames")
    if group_type not in group_types:
        raise ImproperlyConfigured(f"LDAP_GROUP_TYPE={group_type!r}: use groupOfNames or posixGroup.")
    settings: dict[str, Any] = {
        "AUTH_LDAP_SERVER_URI": env_str("LDAP_SERVER_URI"),
        "AUTH_LDAP_START_TLS": env_bool("LDAP_START_TLS", False),
        "AUTH_LDAP_BIND_DN": env_str("LDAP_BIND_DN"),
        "AUTH_LDAP_BIND_PASSWORD": env_str("LDAP_BIND_PASSWORD"),
        # The username goes into the filter escaped by django-auth-ldap (RFC 4515): `*` and `)(` match nothing.
        "AUTH_LDAP_USER_SEARCH": LDAPSearch(
            env_str("LDAP_USER_SEARCH_BASE"), ldap.SCOPE_SUBTREE, env_str("LDAP_USER_FILTER", "(uid=%(user)s)")
        ),
        "AUTH_LDAP_USER_ATTR_MAP": {
            "first_name": env_str("LDAP_FIRST_NAME_ATTR", "givenName"),
            "last_name": env_str("LDAP_LAST_NAME_ATTR", "sn"),
            "email": env_str("LDAP_EMAIL_ATTR", "mail"),
        },
        "AUTH_LDAP_PERMIT_EMPTY_PASSWORD": False,  # an empty password is an anonymous bind, which always "succeeds"
        "AUTH_LDAP_ALWAYS_UPDATE_USER": True,
        "AUTH_LDAP_CONNECTION_OPTIONS": {
            ldap.OPT_NETWORK_TIMEOUT: env_float("LDAP_TIMEOUT_SECONDS", 10.0),
            ldap.OPT_TIMEOUT: env_float("LDAP_TIMEOUT_SECONDS", 10.0),
            ldap.OPT_REFERRALS: 0,
        },
        "SIGNON_LDAP_CLUSTER_USERNAME_ATTR": env_str("LDAP_CLUSTER_USERNAME_ATTR", "uid"),
        "SIGNON_LDAP_USERNAME_ATTR": env_str("LDAP_USERNAME_ATTR", "uid"),  # what sync_course_groups reads back
    }
    if env_str("LDAP_GROUP_SEARCH_BASE"):
        settings["AUTH_LDAP_GROUP_SEARCH"] = LDAPSearch(
            env_str("LDAP_GROUP_SEARCH_BASE"), ldap.SCOPE_SUBTREE, f"(objectClass={group_type})"
        )
        settings["AUTH_LDAP_GROUP_TYPE"] = group_types[group_type]()
        if env_str("LDAP_STAFF_GROUP"):
            settings["AUTH_LDAP_USER_FLAGS_BY_GROUP"] = {"is_staff": env_str("LDAP_STAFF_GROUP")}
    elif env_str("LDAP_STAFF_GROUP"):
        raise ImproperlyConfigured("LDAP_STAFF_GROUP needs LDAP_GROUP_SEARCH_BASE (where the groups are).")
    return settings


def sign_on_settings() -> dict[str, Any]:
    local = env_bool("LOCAL_PASSWORDS", True)
    oidc = bool(env_str("OIDC_ISSUER"))
    ldap = bool(env_str("LDAP_SERVER_URI"))
    if not (local or oidc or ldap):
        raise ImproperlyConfigured(
            "LOCAL_PASSWORDS=0 with neither OIDC_ISSUER nor LDAP_SERVER_URI set: nobody could sign in."
        )
    backends = [AXES_BACKEND]
    settings: dict[str, Any] = {"SIGNON_LOCAL_PASSWORDS": local, "SIGNON_OIDC": oidc, "SIGNON_LDAP": ldap}
    if ldap:
        backends.append(LDAP_BACKEND)
        settings.update(ldap_settings())
    if local:
        backends.append(LOCAL_BACKEND)
    if oidc:
        backends.append(OIDC_BACKEND)
        settings.update(oidc_settings())
    settings["AUTHENTICATION_BACKENDS"] = backends
    return settings
