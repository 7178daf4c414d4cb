import re
from datetime import UTC, datetime, timedelta
from typing import cast

from django import forms
from django.utils.text import capfirst

from . import kinds as cluster_kinds
from .choices import SCHEDULER_NAME
from .models import AuthMethod, ClusterAccount


class SecretField(forms.CharField):
    """Write-only: never rendered back, empty on edit means "keep the stored one"."""

    widget = forms.PasswordInput(render_value=False, attrs={"autocomplete": "new-password"})

    def __init__(self, **kwargs):
        kwargs.setdefault("required", False)
        kwargs.setdefault("strip", False)
        kwargs.setdefault(
            "help_text",
            "Paste an OpenSSH private key (no passphrase), the password, the Kubernetes bearer token or the whole "
            "kubeconfig. It is stored encrypted and never shown again; leave empty to keep the current one.",
        )
        super().__init__(**kwargs)


class NameListField(forms.CharField):
    """Scheduler names typed as "debug, gpu" (commas or spaces between them), kept as a JSON list in the row."""

    def __init__(self, **kwargs):
        kwargs.setdefault("required", False)
        super().__init__(**kwargs)

    def prepare_value(self, value):
        return ", ".join(str(name) for name in value) if isinstance(value, list | tuple) else value

    def to_python(self, value):
        names = [name for name in re.split(r"[,\s]+", super().to_python(value) or "") if name]
        wrong = [name for name in names if not SCHEDULER_NAME.fullmatch(name)]
        if wrong:
            quoted = ", ".join(f"“{name}”" for name in wrong)
            raise forms.ValidationError(
                f"Not a name SLURM could have: {quoted}. Names are ASCII letters, digits, _ . and -, separated by "
                "commas, e.g. “debug, gpu”."
            )
        return list(dict.fromkeys(names))  # each once, in the order typed


# A stored slurmrestd token is flagged this long before its `exp`.
TOKEN_WARNING = timedelta(days=7)


class ApiTokenField(SecretField):
    """A slurmrestd token (JWT): write-only like every credential; its expiry is read from it and kept."""

    def __init__(self, **kwargs):
        kwargs.setdefault("label", "slurmrestd token")
        kwargs.setdefault(
            "help_text",
            "SLURM REST clusters: a JWT, e.g. from “scontrol token username=slurm lifespan=2592000”. A token of the "
            "SlurmUser lets jobs run as each student's own cluster user. Stored encrypted, never shown again; leave "
            "empty to keep the current one.",
        )
        super().__init__(**kwargs)

    def clean(self, value):
        value = super().clean(value).strip()
        if not value:
            return value
        from .backends import tokens

        try:
            lapses = tokens.expires_at(value)
        except tokens.NotAToken as exc:
            raise forms.ValidationError(str(exc)) from None
        if lapses is not None and lapses <= datetime.now(UTC):
            raise forms.ValidationError(f"This token expired on {lapses:%Y-%m-%d %H:%M} UTC; make a new one.")
        return value


def token_expiry_text(account) -> str:
    """How the admin reads a stored token's lifetime, with the warning while it lapses within TOKEN_WARNING."""
    if not account.has_api_token:
        return "—"
    lapses = account.api_token_expires_at
    if lapses is None:
        return "stored; never expires"
    left = lapses - datetime.now(UTC)
    when = f"{lapses:%Y-%m-%d %H:%M} UTC"
    if left <= timedelta(0):
        return f"EXPIRED on {when}: jobs on this cluster cannot be submitted or followed until a new one is stored."
    if left <= TOKEN_WARNING:
        return f"expires {when} (in {_duration(left)}): store a new one before then."
    return f"stored; valid until {when}"


def _duration(left: timedelta) -> str:
    hours = int(left.total_seconds() // 3600)
    return f"{hours // 24} days" if hours >= 48 else f"{max(hours, 1)} hours"


class SecretTextarea(forms.Textarea):
    """A textarea that never puts the stored value into the page."""

    def format_value(self, value):
        return ""


class ClusterAccountForm(forms.ModelForm):
    secret = SecretField(label="Credential", widget=SecretTextarea(attrs={"rows": 5, "class": "mono"}))

    class Meta:
        model = ClusterAccount
        fields = ["cluster", "username", "auth_method"]

    def __init__(self, *args, clusters=None, **kwargs):
        super().__init__(*args, **kwargs)
        if clusters is not None:
            cast(forms.ModelChoiceField, self.fields["cluster"]).queryset = clusters

    def clean(self):
        super().clean()
        data = self.cleaned_data
        secret = data.get("secret")
        if not self.instance.pk and not secret and not data.get("api_token"):
            self.add_error("secret", "A new account needs its private key or password.")
        from .backends.base import BackendError

        method, cluster = data.get("auth_method"), data.get("cluster")
        if method == AuthMethod.VIA_SERVICE and (not self.instance.pk or self.instance.auth_method != method):
            self.add_error(
                "auth_method",
                "The portal makes these itself from cluster usernames (Cluster usernames in the admin); set the "
                "user's cluster username there instead.",
            )
        if cluster is not None and not data.get("user") and cluster.shared_user == data.get("username"):
            self.add_error(
                "username",
                f"{cluster.shared_user} is the user students' jobs run as on {cluster.display_name}; the service "
                "account, which holds the portal's privileges, must be another user.",
            )
        if cluster is not None and method:
            wanted = cluster_kinds.kind_of(cluster.kind).auth_methods
            if method not in wanted:
                kinds = ", ".join(sorted(str(AuthMethod(m).label) for m in wanted))
                self.add_error("auth_method", f"{cluster.display_name} takes: {kinds}.")
        try:
            if secret and method == AuthMethod.KEY:
                from .backends.ssh import load_private_key

                load_private_key(secret)
            elif secret and method and cluster is not None and cluster.kind in cluster_kinds.KINDS:
                problem = cluster_kinds.kind_of(cluster.kind).credential_problem(cluster, method, secret)
                if problem:  # a kubeconfig that cannot be read, or without the cluster's context
                    self.add_error("secret", capfirst(problem))
        except BackendError as exc:
            self.add_error("secret", str(exc))
        return data


class OwnAccountForm(forms.Form):
    """A student registers their own cluster login: the portal makes its SSH key (nobody pastes a private key), or,
    where the cluster takes passwords, the student gives theirs (stored encrypted, write-only)."""

    GENERATED_KEY = "key"
    CHOICES = [(GENERATED_KEY, "A key the portal makes (best)"), ("password", "My password there")]

    cluster: forms.ModelChoiceField = forms.ModelChoiceField(queryset=None, empty_label=None)
    username = forms.CharField(label="Your username on the cluster", max_length=32)
    auth_method = forms.ChoiceField(label="Log in with", choices=CHOICES, initial=GENERATED_KEY)
    secret = SecretField(
        label="Password",
        widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "new-password"}),
        help_text="Only with “My password there”. Stored encrypted and never shown again.",
    )

    def __init__(self, *args, clusters, user, **kwargs):
        super().__init__(*args, **kwargs)
        cast(forms.ModelChoiceField, self.fields["cluster"]).queryset = clusters
        self.user = user

    def clean_username(self):
        from .identity import validate_cluster_username

        return validate_cluster_username(self.cleaned_data["username"].strip(), self.user)

    def clean(self):
        super().clean()
        data = self.cleaned_data
        if data.get("auth_method") == "password" and not data.get("secret"):
            self.add_error("secret", "Give your password on the cluster, or let the portal make a key.")
        if data.get("auth_method") == self.GENERATED_KEY:
            data["secret"] = ""  # a key is made, never pasted
        return data
