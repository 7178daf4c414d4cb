"""Vocabulary of the clusters app that backends also name: a leaf module (it imports nothing of the portal)."""

from django.db import models


class RunAs(models.TextChoices):
    """Whose identity a cluster's jobs run under; each kind lists the ones it supports (ClusterBackend.run_as_modes)."""

    # Short labels: they are the options of a select on a phone. The cluster page explains each.
    SERVICE = "service", "Shared service account (not isolated)"
    REST_USER = "rest-user", "Student's user, via slurmrestd"
    SUDO = "sudo", "Student's user, via sudo"
    OWN_ACCOUNT = "own-account", "Student's registered account"


# The modes where the portal names the student's cluster username itself (ClusterIdentity) with the service
# account's credentials; students cannot choose it.
STUDENT_USER_MODES = frozenset({RunAs.REST_USER, RunAs.SUDO})


class IdentitySource(models.TextChoices):
    """Where a user's cluster username came from."""

    LDAP = "ldap", "LDAP uid"
    OIDC = "oidc", "OIDC claim"
    ROSTER = "roster", "Roster column"
    ADMIN = "admin", "Set by an admin"


class AuthMethod(models.TextChoices):
    KEY = "key", "SSH private key"
    PASSWORD = "password", "Password"
    TOKEN = "token", "Bearer token (Kubernetes)"
    KUBECONFIG = "kubeconfig", "kubeconfig (Kubernetes)"
    # The student's cluster user, reached with the service account's credentials (sudo or slurmrestd). No secret.
    VIA_SERVICE = "via-service", "Through the service account"
