"""The launch form's Sweep half: values for up to three sweepable parameters, the mode, and how many at once.

Values are typed as a comma-separated list ("16, 32, 64"); each is checked by the template's own rules in
sweeps/plan.py, which names the parameter and the value at fault."""

from __future__ import annotations

from django import forms

from .models import SweepMode
from .plan import MAX_RUNS, SweepInvalid

PREFIX = "sweep_"


def sweepable(template) -> list:
    """The parameters a sweep may vary: marked by the template's author (a resource such as GPUs too: such a sweep
    goes to the cluster run by run)."""
    return [p for p in template.schema() if p.sweep]


def _offered(param) -> str:
    if param.sweep_values:
        return "Pick from: " + ", ".join(str(v).lower() if isinstance(v, bool) else str(v) for v in param.sweep_values)
    if param.type == "choice":
        return "Pick from: " + ", ".join(param.choices)
    if param.type == "bool":
        return "true, false"
    bounds = [f"{label} {value:g}" for label, value in (("from", param.min), ("to", param.max)) if value is not None]
    return ("Numbers " + " ".join(bounds)).strip() if bounds else "Numbers"


class SweepForm(forms.Form):
    mode = forms.ChoiceField(choices=SweepMode.choices, initial=SweepMode.GRID, widget=forms.RadioSelect)
    max_concurrent = forms.IntegerField(
        label="At most this many at once",
        required=False,
        min_value=1,
        max_value=MAX_RUNS,
        help_text="Leave empty for as many as your limits allow.",
    )

    def __init__(self, *args, template, **kwargs):
        super().__init__(*args, **kwargs)
        self.params = sweepable(template)
        for param in self.params:
            self.fields[PREFIX + param.name] = forms.CharField(
                label=f"{param.label}: values",
                required=False,
                max_length=500,
                help_text=f"Comma-separated; empty: not swept. {_offered(param)}.",
            )

    def swept(self) -> dict[str, list[str]]:
        found = {}
        for param in self.params:
            text = self.cleaned_data.get(PREFIX + param.name) or ""
            values = [part.strip() for part in text.split(",") if part.strip()]
            if values:
                found[param.name] = values
        return found

    def add_sweep_errors(self, exc: SweepInvalid) -> None:
        for name, message in exc.errors.items():
            field = PREFIX + name if PREFIX + name in self.fields else ("mode" if name == "mode" else None)
            self.add_error(field, message)

    @staticmethod
    def initial_from(swept: dict) -> dict:
        def text(value) -> str:
            return str(value).lower() if isinstance(value, bool) else str(value)

        return {PREFIX + name: ", ".join(text(v) for v in values) for name, values in swept.items()}
