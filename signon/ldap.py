"""Sign-in against the campus directory (django-auth-ldap): search the person with the service DN, bind as them.

Every sign-in, on the login page and at POST /api/v1/token/, is one bind with the password given; nothing of
it is stored. The username enters the search filter escaped (django-auth-ldap applies RFC 4515 escaping), so
`*` or `)(uid=*` match no one, and an empty password is refused before any bind (an empty simple bind is an
anonymous one, which the server accepts). At each sign-in the person's name, mail, staff flag (LDAP_STAFF_GROUP),
course memberships (groups named by courses) and cluster username (LDAP_CLUSTER_USERNAME_ATTR) follow the directory.
"""

from __future__ import annotations

import ldap
from django.conf import settings
from django.dispatch import receiver
from django_auth_ldap.backend import LDAPBackend, ldap_error, populate_user

from clusters.choices import IdentitySource

from . import identity
from .models import CourseGroup, Source
from .sync import sync_memberships


class CampusLDAPBackend(LDAPBackend):
    def authenticate(self, request, username=None, password=None, **kwargs):
        if not username or not password:
            return None
        return super().authenticate(request, username=username, password=password, **kwargs)

    def authenticate_ldap_user(self, ldap_user, password):
        user = super().authenticate_ldap_user(ldap_user, password)
        if user is not None:
            sync_after_save(user)
        return user

    def populate_user(self, username):
        """The user as the directory has them now, without a password (sync_course_groups); None if gone."""
        user = super().populate_user(username)
        if user is not None:
            sync_after_save(user)
        return user


@receiver(ldap_error, sender=CampusLDAPBackend)
def directory_trouble(sender, context, user, request=None, exception=None, **kwargs):
    """A directory that cannot be reached is said so on the login page and at /api/v1/token/, not a wrong password."""
    if request is not None and isinstance(exception, ldap.SERVER_DOWN | ldap.TIMEOUT | ldap.TIMELIMIT_EXCEEDED):
        request.campus_directory_down = True


@receiver(populate_user, sender=CampusLDAPBackend)
def follow_directory(sender, user, ldap_user, **kwargs):
    """After the attributes are copied, the groups; applied once the user row is saved (a new one has no key yet)."""
    if CourseGroup.objects.filter(source=Source.LDAP).exists():
        groups = set(ldap_user.group_names) if getattr(settings, "AUTH_LDAP_GROUP_SEARCH", None) else set()
        user._campus_groups = groups


def sync_after_save(user) -> None:
    attr = getattr(settings, "SIGNON_LDAP_CLUSTER_USERNAME_ATTR", "")
    if attr and hasattr(user, "ldap_user"):
        identity.record_cluster_username(user, user.ldap_user.attrs.get(attr.lower()), IdentitySource.LDAP)
    groups = getattr(user, "_campus_groups", None)
    if groups is not None:
        user._sync_changes = sync_memberships(user, Source.LDAP, groups)
        del user._campus_groups
