"""Vocabulary of the clusters app that backends also name: a leaf module (it imports nothing of the portal)."""

import re

from django.db import models

POSIX_NAME = re.compile(r"^[a-z_][a-z0-9_-]{0,31}$")
# A partition's or a GRES type's name, as the admin page and clusters.d files accept it.
SCHEDULER_NAME = re.compile(r"[\w.-]+", re.ASCII)
# Accounts every Linux login node has (Debian's base passwd, and what SLURM, munge and the usual daemons add). A job
# running as one of these would act for the system, not for a student.
SYSTEM_ACCOUNTS = frozenset(
    """root daemon bin sys sync games man lp mail news uucp proxy www-data backup list irc gnats nobody _apt messagebus
    sshd polkitd syslog uuidd tcpdump slurm munge postgres mysql redis nslcd sssd ldap openldap ntp chrony dnsmasq
    avahi colord rtkit pulse admin adm sudo wheel operator halt shutdown ftp""".split()  # noqa: SIM905
)


class RunAs(models.TextChoices):
    """Whose identity a cluster's jobs run under; each kind lists the ones it supports (ClusterBackend.run_as_modes)."""

    # Short labels: they are the options of a select on a phone. The cluster page explains each.
    # SERVICE: every student's jobs as the cluster's one shared user (Cluster.shared_user), reached through the service
    # account like a student's own user; never as the service account itself, which holds the portal's privileges.
    SERVICE = "service", "One shared cluster user (not isolated)"
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
