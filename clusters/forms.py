from django import forms

from .models import AuthMethod, ClusterAccount


class SecretField(forms.CharField):
    """Write-only: never rendered back, empty on edit means "keep the stored one"."""

    widget = forms.PasswordInput(render_value=False, attrs={"autocomplete": "new-password"})

    def __init__(self, **kwargs):
        kwargs.setdefault("required", False)
        kwargs.setdefault("strip", False)
        kwargs.setdefault(
            "help_text",
            "Paste an OpenSSH private key (no passphrase) or the password. It is stored encrypted and never shown "
            "again; leave empty to keep the current one.",
        )
        super().__init__(**kwargs)


class SecretTextarea(forms.Textarea):
    """A textarea that never puts the stored value into the page."""

    def format_value(self, value):
        return ""


class ClusterAccountForm(forms.ModelForm):
    secret = SecretField(label="Private key or password", widget=SecretTextarea(attrs={"rows": 5, "class": "mono"}))

    class Meta:
        model = ClusterAccount
        fields = ["cluster", "username", "auth_method"]

    def __init__(self, *args, clusters=None, **kwargs):
        super().__init__(*args, **kwargs)
        if clusters is not None:
            self.fields["cluster"].queryset = clusters

    def clean(self):
        data = super().clean()
        secret = data.get("secret")
        if not self.instance.pk and not secret:
            self.add_error("secret", "A new account needs its private key or password.")
        if secret and data.get("auth_method") == AuthMethod.KEY:
            from .backends.base import BackendError
            from .backends.ssh import load_private_key

            try:
                load_private_key(secret)
            except BackendError as exc:
                self.add_error("secret", str(exc))
        return data
