"""Reading course groups from the campus directory outside any sign-in (the sync_course_groups command).

With the service DN: the members of a named group (groupOfNames `member` DNs, read back to usernames, or posixGroup
`memberUid`), and each member's current entry through django-auth-ldap, so the same attribute and group rules apply
as at sign-in. The group name goes into the filter escaped.
"""

from __future__ import annotations

import ldap
from django.conf import settings
from ldap.filter import escape_filter_chars

from .ldap import CampusLDAPBackend


def connect():
    connection = ldap.initialize(settings.AUTH_LDAP_SERVER_URI)
    for option, value in settings.AUTH_LDAP_CONNECTION_OPTIONS.items():
        connection.set_option(option, value)
    if settings.AUTH_LDAP_START_TLS:
        connection.start_tls_s()
    connection.simple_bind_s(settings.AUTH_LDAP_BIND_DN, settings.AUTH_LDAP_BIND_PASSWORD)
    return connection


def _decode(values) -> list[str]:
    return [value.decode() if isinstance(value, bytes) else value for value in values]


def group_members(connection, group: str) -> set[str]:
    """Usernames in the group named `group` (its cn) under LDAP_GROUP_SEARCH_BASE."""
    base = settings.AUTH_LDAP_GROUP_SEARCH.base_dn
    query = f"(&(|(objectClass=groupOfNames)(objectClass=posixGroup))(cn={escape_filter_chars(group)}))"
    username_attr = settings.SIGNON_LDAP_USERNAME_ATTR
    members: set[str] = set()
    for _dn, attrs in connection.search_s(base, ldap.SCOPE_SUBTREE, query, ["member", "memberUid"]):
        if not isinstance(attrs, dict):
            continue  # a referral
        members.update(_decode(attrs.get("memberUid", [])))
        for member_dn in _decode(attrs.get("member", [])):
            try:
                found = connection.search_s(member_dn, ldap.SCOPE_BASE, "(objectClass=*)", [username_attr])
            except ldap.NO_SUCH_OBJECT:
                continue
            for _entry_dn, entry in found:
                members.update(_decode(entry.get(username_attr, [])))
    return members


def refresh_user(username: str):
    """The portal user as the directory has them now (attributes, staff, course groups applied); None if gone."""
    return CampusLDAPBackend().populate_user(username)
