from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models

from . import crypto, kinds
from .choices import POSIX_NAME, STUDENT_USER_MODES, SYSTEM_ACCOUNTS, AuthMethod, IdentitySource, RunAs
from .limits import PartitionLimits


class Cluster(models.Model):
    name = models.SlugField(unique=True, help_text="Short name used in the API, e.g. campus-gpu.")
    title = models.CharField(max_length=200, blank=True, help_text="What students see, e.g. “Campus GPU cluster”.")
    kind = models.CharField(max_length=16, choices=kinds.choices, default=kinds.default)
    enabled = models.BooleanField(default=True, help_text="Disabled clusters take no new jobs.")
    emulated = models.BooleanField(
        default=False,
        help_text="A stand-in for a real cluster, such as the emulator make demo starts when it is given no "
        "kubeconfig: what students launch there runs as local processes on one machine, without GPUs. Every page "
        "that names the cluster says “emulated”.",
    )
    run_as = models.CharField(
        "jobs run as",
        max_length=16,
        choices=RunAs.choices,
        default="",
        blank=True,  # left empty: the kind's isolated mode (kinds.default_run_as), filled in by clean() and save()
        help_text="Whose identity students' jobs have on the cluster. Only a student's own cluster user keeps "
        "students apart; docs/cluster-identity.md gives the sudo rule and slurmrestd token each mode needs.",
    )
    shared_user = models.CharField(
        "shared cluster user",
        max_length=32,
        blank=True,
        default="",
        db_default="",  # rows the previous release inserts during an upgrade get it too
        help_text="Only where jobs run as one shared cluster user: the unprivileged user every student's jobs run as "
        "(e.g. labshared), reached through the service account as a student's own user is. Never the service account: "
        "no sudo rule, no SLURM operator level, not SLURM's SlurmUser.",
    )
    host = models.CharField("login host", max_length=255, blank=True, help_text="SLURM: the SSH login node.")
    port = models.PositiveIntegerField("SSH port", default=22)
    host_key = models.TextField(
        "pinned SSH host key",
        blank=True,
        help_text="Set by “Test connection” after an admin confirms the fingerprint. Connections that present "
        "any other key are refused.",
    )
    host_key_pinned_at = models.DateTimeField(null=True, blank=True, editable=False)
    partitions = models.JSONField(default=list, blank=True, help_text='Partitions students may use, e.g. ["gpu"].')
    gpu_types = models.JSONField(default=list, blank=True, help_text='GRES GPU types, e.g. ["a100", "h100"].')
    preamble = models.TextField(
        "setup preamble",
        blank=True,
        help_text="Shell lines every job runs first, e.g. “module load cuda” or “source ~/venv/bin/activate”.",
    )
    lab_dir = models.CharField(
        "lab directory",
        max_length=255,
        default="~/gpulab",
        help_text="Where the bundled workloads are staged and job directories are created (absolute or ~/…).",
    )
    lab_reservations = models.BooleanField(
        "lab sessions",
        default=False,
        help_text="Instructors may book GPUs for a lab session. What the cluster does to hold them is its kind's (the "
        "cluster's page says so once its kind is chosen).",
    )
    # {partition: PartitionLimits.as_dict()}: learnt at Test connection and every PARTITION_LIMITS_REFRESH_SECONDS.
    partition_limits = models.JSONField(
        "partition limits",
        default=dict,
        blank=True,
        editable=False,
        help_text="Nodes, GPUs per node and time limit of each partition, as the scheduler last reported them.",
    )
    partition_limits_at = models.DateTimeField("partition limits learnt at", null=True, blank=True, editable=False)
    # Kubernetes
    api_url = models.URLField(
        "API server URL",
        blank=True,
        help_text="Kubernetes: e.g. https://k8s.example.edu:6443. Leave empty when the account holds a kubeconfig. "
        "slurmrestd: its address, e.g. https://slurm.example.edu:6820.",
    )
    server_version = models.CharField(max_length=64, blank=True, help_text="Detected by “Test connection”.")
    # What the cluster's kind keeps of it (clusters/kind_settings.py: the kind declares, validates and reads them):
    # typed by an admin on the cluster's page or in its clusters.d file, or detected by Test connection.
    kind_settings = models.JSONField("kind's settings", default=dict, db_default={}, blank=True, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.display_name

    def save(self, *args, **kwargs):
        if not self.run_as:  # a row made without clean() (a script, a fixture) gets what clean() would give it
            self.run_as = kinds.default_run_as(self.kind)
        super().save(*args, **kwargs)

    @property
    def display_name(self) -> str:
        """Its name as pages show it; an emulated cluster's always says so."""
        name = self.title or self.name
        return f"{name} (emulated)" if self.emulated and "emulated" not in name.lower() else name

    @property
    def shares_gpus(self) -> bool:
        """Its GPUs are time-sliced shares of physical ones (the kind knows; a kind not registered here shares none)."""
        return self.kind in kinds.KINDS and kinds.kind_of(self.kind).shares_gpus(self)

    @property
    def gpu_share(self) -> int:
        """How many jobs share one of its physical GPUs (1: each GPU a job holds is its own)."""
        return kinds.kind_of(self.kind).gpu_share(self) if self.kind in kinds.KINDS else 1

    def limits_of(self, partition: str | None):
        """The learnt limits of `partition` (its default partition when None); None when not known."""
        entries = self.partition_limits or {}
        if partition is None:
            entry = next((e for e in entries.values() if e.get("default")), None)
        else:
            entry = entries.get(partition)
        return PartitionLimits.from_dict(entry) if entry else None

    def clean(self):
        self.run_as = self.run_as or kinds.default_run_as(self.kind)
        self.shared_user = (self.shared_user or "").strip()
        if self.shared_user:
            self._check_shared_user()
        elif self.uses_shared_user:
            raise ValidationError(
                {
                    "shared_user": "Jobs in the shared mode run as one unprivileged cluster user, never as the service "
                    "account (it holds the sudo rule, SLURM operator level or slurmrestd token): create one on the "
                    "cluster (e.g. labshared, see docs/cluster-identity.md) and name it here, or run jobs as each "
                    "student's own user."
                }
            )
        if self.kind in kinds.KINDS and self.run_as not in kinds.backend_class(self.kind).run_as_modes:
            offered = "; ".join(str(RunAs(m).label) for m in kinds.backend_class(self.kind).run_as_modes)
            raise ValidationError({"run_as": f"{self.get_kind_display()} clusters can run jobs as: {offered}."})
        if self.lab_reservations and self.kind in kinds.KINDS and not kinds.kind_of(self.kind).holds_lab_sessions:
            raise ValidationError({"lab_reservations": f"{self.get_kind_display()} clusters cannot hold lab sessions."})
        missing = kinds.kind_of(self.kind).missing_fields(self) if self.kind in kinds.KINDS else {}
        if missing:
            raise ValidationError(missing)

    def service_account(self) -> "ClusterAccount | None":
        return self.accounts.filter(user__isnull=True).first()

    def _check_shared_user(self) -> None:
        """The shared user is a POSIX name, not a system account, not this cluster's service account (which holds
        the portal's privileges) and not anyone's own cluster username."""
        name = self.shared_user
        if not POSIX_NAME.match(name):
            problem = (
                f"“{name[:40]}” is not a cluster user name: use 1 to 32 lower-case letters, digits, _ or -, starting "
                "with a letter or _ (e.g. labshared)."
            )
        elif name in SYSTEM_ACCOUNTS or name.startswith("systemd-"):
            problem = f"“{name}” is a system account on the cluster; students' jobs cannot run as it."
        elif self.pk and self.accounts.filter(user__isnull=True, username=name).exists():
            problem = (
                f"“{name}” is this cluster's service account, which holds the portal's privileges (the sudo rule, "
                "SLURM operator level, the slurmrestd token): students' jobs must run as a separate user without them."
            )
        elif ClusterIdentity.objects.filter(username=name).exists():
            problem = f"“{name}” is a portal user's own cluster username; name a user of its own."
        else:
            return
        raise ValidationError({"shared_user": problem})

    @property
    def runs_as_student_user(self) -> bool:
        """Jobs run as each student's cluster username, with the service account's credentials."""
        return self.run_as in STUDENT_USER_MODES

    @property
    def uses_shared_user(self) -> bool:
        """Jobs run as the cluster's one shared user (the shared mode of a kind that reaches it through the service
        account), never as the service account."""
        return self.run_as == RunAs.SERVICE and self.kind in kinds.KINDS and kinds.kind_of(self.kind).shared_user_mode


class ClusterAccount(models.Model):
    """A login on a cluster. user=None is the cluster's service account, used by everyone without their own."""

    cluster = models.ForeignKey(Cluster, on_delete=models.CASCADE, related_name="accounts")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="cluster_accounts",
        help_text="Empty for the cluster's service account.",
    )
    username = models.CharField("remote username", max_length=64)
    auth_method = models.CharField(max_length=16, choices=AuthMethod.choices, default=AuthMethod.KEY)
    # Fernet token (see clusters/crypto.py); never shown, never logged, never serialized.
    secret_encrypted = models.TextField(editable=False, default="")
    # The public half of a key the portal generated (clusters/keys.py); empty for a pasted key or a password.
    public_key = models.TextField("public key", blank=True, editable=False)
    # SLURM REST: the slurmrestd token (a JWT), encrypted like the secret; its `exp`, read when it is stored.
    api_token_encrypted = models.TextField(editable=False, default="")
    api_token_expires_at = models.DateTimeField("API token expires", null=True, blank=True, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["cluster", "username"]
        constraints = [
            # One registered account per user and cluster; identities through the service account are one per
            # cluster username, so a changed username leaves earlier jobs with the identity they ran as.
            models.UniqueConstraint(
                fields=["cluster", "user"],
                condition=~models.Q(auth_method="via-service"),
                name="clusteraccount_unique_user",
            ),
            models.UniqueConstraint(
                fields=["cluster", "user", "username"],
                condition=models.Q(auth_method="via-service"),
                name="clusteraccount_unique_identity",
            ),
            models.UniqueConstraint(
                fields=["cluster"], condition=models.Q(user__isnull=True), name="clusteraccount_one_service_account"
            ),
        ]

    def __str__(self) -> str:
        owner = self.user.username if self.user is not None else "service account"
        return f"{self.username}@{self.cluster.name} ({owner})"

    @property
    def has_secret(self) -> bool:
        return bool(self.secret_encrypted)

    def set_secret(self, plaintext: str) -> None:
        self.secret_encrypted = crypto.encrypt(plaintext)

    def secret(self) -> str:
        return crypto.decrypt(self.secret_encrypted) if self.secret_encrypted else ""

    @property
    def has_api_token(self) -> bool:
        return bool(self.api_token_encrypted)

    def set_api_token(self, token: str, expires_at) -> None:
        self.api_token_encrypted = crypto.encrypt(token)
        self.api_token_expires_at = expires_at

    def api_token(self) -> str:
        return crypto.decrypt(self.api_token_encrypted) if self.api_token_encrypted else ""


class ClusterIdentity(models.Model):
    """A user's username on the clusters (POSIX, unique among users), used where jobs run as each student's own
    cluster user. Set from LDAP, OIDC, a roster or by an admin through clusters.identity.set_cluster_username; students
    cannot set it."""

    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="cluster_identity")
    username = models.CharField("cluster username", max_length=32)
    source = models.CharField(max_length=16, choices=IdentitySource.choices, default=IdentitySource.ADMIN)
    set_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+", editable=False
    )
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["username"]
        verbose_name = "cluster username"
        constraints = [models.UniqueConstraint(fields=["username"], name="clusteridentity_unique_username")]

    def __str__(self) -> str:
        return f"{self.username} ({self.user.username})"


class CredentialEvent(models.Model):
    """Audit of credential changes. It names who and what, never the secret."""

    class Action(models.TextChoices):
        SET = "set", "Credential set"
        CHANGED = "changed", "Credential changed"
        REMOVED = "removed", "Account removed"
        ROTATED = "rotated", "Re-encrypted under a new key"
        HOST_KEY_PINNED = "host_key_pinned", "Host key pinned"

    cluster = models.ForeignKey(Cluster, on_delete=models.CASCADE, related_name="credential_events")
    account_username = models.CharField(max_length=64, blank=True)
    account_owner = models.CharField(max_length=150, blank=True)
    actor = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    action = models.CharField(max_length=32, choices=Action.choices)
    detail = models.CharField(max_length=255, blank=True)
    at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-at"]
        indexes = [models.Index(fields=["cluster", "-at"], name="credevent_cluster_at")]

    def __str__(self) -> str:
        return f"{self.get_action_display()} on {self.cluster.name} by {self.actor or 'system'}"
