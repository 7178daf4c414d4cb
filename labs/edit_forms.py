"""The lab editor's forms. A step's form turns typed fields into the same data a lab file holds and checks it with
the lab file's own spec (labs/lab_files.py, labs/specs.py), so the editor can save nothing a file could not say."""

from __future__ import annotations

from typing import Any, cast

from django import forms

from core.choices import JobState
from core.templating.params import Param, SchemaError
from jobs.models import JobTemplate

from .lab_files import MAX_FILE_BYTES, MAX_TEXT, StepFileSerializer, describe
from .loading import RESERVED_SLUGS
from .models import Lab, Section
from .specs import PATTERN_MAX, Bound, CheckKind, Figure, QuickFixSerializer, template_problems

MARKDOWN_HELP = "Markdown: headings, lists, links, `code` and ``` code blocks ```. HTML and pictures are not shown."
NO_CHECK = "None: a step to read (with a template, a completed run of it marks the step done)"


def _lines(text: str) -> str:
    return text.replace("\r\n", "\n")  # a textarea's CR LF: the text is kept as a lab file writes it


class LabForm(forms.ModelForm):
    class Meta:
        model = Lab
        fields = ["title", "slug", "summary", "stuck_after_minutes"]
        widgets = {"summary": forms.Textarea(attrs={"rows": 5})}
        help_texts = {"summary": "What the lab is about. " + MARKDOWN_HELP}

    def __init__(self, *args, course, **kwargs):
        super().__init__(*args, **kwargs)
        self.course = course
        if self.instance.pk:
            del self.fields["slug"]  # the lab's address: students' links and bookmarks keep working
        else:
            self.fields["slug"].required = False
            self.fields["slug"].help_text = "Its address: /courses/…/labs/this-name/. Empty: made from the title."
        self.fields["summary"].max_length = MAX_TEXT  # type: ignore[attr-defined]

    def clean_summary(self):
        return _lines(self.cleaned_data["summary"])

    def clean_slug(self):
        slug = self.cleaned_data.get("slug", "")
        if slug in RESERVED_SLUGS:
            raise forms.ValidationError(f"“{slug}” names a page of the course's labs: choose another.")
        if slug and Lab.objects.filter(course=self.course, slug=slug).exists():
            raise forms.ValidationError("Another lab of the course has this address: choose another.")
        return slug


class SectionForm(forms.ModelForm):
    planned_minutes = forms.IntegerField(
        min_value=0, max_value=24 * 60, label="Planned minutes", widget=forms.NumberInput(attrs={"class": "minutes"})
    )

    class Meta:
        model = Section
        fields = ["title", "planned_minutes"]


class ImportForm(forms.Form):
    file = forms.FileField(required=False, label="Lab file (.yaml)", help_text="As Export writes it.")
    text = forms.CharField(
        required=False,
        strip=False,
        label="Or paste it",
        widget=forms.Textarea(attrs={"rows": 6, "class": "mono", "spellcheck": "false"}),
    )

    def clean(self):
        data = super().clean() or {}
        upload = data.get("file")
        if upload is not None and upload.size > MAX_FILE_BYTES:  # said before reading it: lab_files.parse's words
            raise forms.ValidationError(
                f"The file is {upload.size // 1024} kB; a lab file is at most {MAX_FILE_BYTES // 1024} kB."
            )
        data["content"] = upload.read() if upload is not None else data.get("text", "")
        if not data["content"]:
            raise forms.ValidationError("Choose a lab file or paste one.")
        return data


class QuickFixForm(forms.Form):
    states = forms.MultipleChoiceField(
        choices=JobState.choices,
        required=False,
        widget=forms.CheckboxSelectMultiple,
        label="When the run is",
    )
    reason = forms.CharField(
        required=False, strip=False, max_length=PATTERN_MAX, label="and the scheduler's reason holds"
    )
    log = forms.CharField(required=False, strip=False, max_length=PATTERN_MAX, label="and its log holds")
    text = forms.CharField(
        required=False, max_length=1000, label="Tell the student", widget=forms.Textarea(attrs={"rows": 2})
    )

    def clean(self):
        data = super().clean() or {}
        given = {name: data[name] for name in ("states", "reason", "log", "text") if data.get(name)}
        if not given or data.get("DELETE"):
            data["fix"] = None
            return data
        checked = QuickFixSerializer(data=given)
        if not checked.is_valid():
            for name, errors in checked.errors.items():
                for error in errors:
                    self.add_error(name if name in self.fields else None, str(error))
            return data
        data["fix"] = dict(checked.validated_data)
        return data


QuickFixFormSet = forms.formset_factory(QuickFixForm, extra=1, can_delete=True, max_num=20, validate_max=True)


def quick_fix_rows(fixes: list[dict]) -> list[dict]:
    return [{"states": fix.get("states", []), "reason": fix.get("reason", ""), "log": fix.get("log", ""),
             "text": fix.get("text", "")} for fix in fixes]  # fmt: skip


class TemplateChoiceField(forms.ModelChoiceField):
    def label_from_instance(self, obj) -> str:
        if obj.status == JobTemplate.Status.PUBLISHED:
            return obj.name
        return f"{obj.name} ({obj.get_status_display().lower()}: students cannot launch it)"


def _value_field(param: Param) -> forms.Field:
    """A typed field for a preset value; empty means the student starts from the template's default."""
    help_text = f"Default: {param.default}." + (f" {param.help}" if param.help else "")
    label = param.label
    if param.type == "bool":
        return forms.ChoiceField(
            choices=[("", "—"), ("true", "true"), ("false", "false")], required=False, label=label, help_text=help_text
        )
    if param.type == "choice" and param.choices:
        options = [("", "—"), *((c, c) for c in param.choices)]
        return forms.ChoiceField(choices=options, required=False, label=label, help_text=help_text)
    widget = forms.TextInput(attrs={"inputmode": "decimal"} if param.type in ("int", "float") else {})
    return forms.CharField(required=False, strip=True, label=label, help_text=help_text, widget=widget)


class StepForm(forms.Form):
    """A step: its text, its launch (template, preset values, which are fixed), its check by kind, its quick fixes
    (a formset beside it, `fixes`)."""

    title = forms.CharField(max_length=200)
    section = forms.ModelChoiceField(queryset=Section.objects.none(), empty_label=None, required=False, label="Section")
    instructions = forms.CharField(
        required=False,
        max_length=MAX_TEXT,
        strip=False,
        widget=forms.Textarea(attrs={"rows": 12, "class": "mono", "spellcheck": "true"}),
        help_text=MARKDOWN_HELP,
    )
    template = TemplateChoiceField(
        queryset=JobTemplate.objects.none(),
        required=False,
        to_field_name="slug",
        empty_label="None: the step launches nothing",
        help_text="The launch button opens this template's form with the values below.",
    )
    check_kind = forms.ChoiceField(choices=[("", NO_CHECK), *CheckKind.choices], required=False, label="Done when")
    pattern = forms.CharField(
        required=False,
        strip=False,
        max_length=PATTERN_MAX,
        label="Text the log holds",
        help_text="Found as written (not a regular expression), e.g. tok/s=",
    )
    figure = forms.ChoiceField(choices=[("", "—"), *Figure.choices], required=False)
    bound = forms.ChoiceField(choices=Bound.choices, required=False, label="is")
    value = forms.FloatField(required=False, label="Threshold")
    parameter = forms.ChoiceField(choices=(), required=False, label="Parameter the runs differ in")
    choices = forms.CharField(
        required=False,
        label="Choices",
        widget=forms.Textarea(attrs={"rows": 3}),
        help_text="One a line, checked at once. Empty: the student writes text that you mark on the class grid.",
    )
    correct = forms.CharField(required=False, max_length=200, label="Correct choice", help_text="As written above.")

    def __init__(self, data=None, *, lab: Lab, templates, cluster_choices, initial=None, **kwargs):
        super().__init__(data, initial=initial, **kwargs)
        self.cluster_choices = cluster_choices
        cast(forms.ModelChoiceField, self.fields["section"]).queryset = lab.sections.all()
        cast(forms.ModelChoiceField, self.fields["template"]).queryset = templates
        self.chosen = self._chosen_template(templates)
        self.schema, self.schema_error = self._schema()
        cast(forms.ChoiceField, self.fields["parameter"]).choices = [("", "—")] + [
            (p.name, p.label) for p in self.schema
        ]
        preset = (initial or {}).get("preset", {})
        fixed = set((initial or {}).get("fixed", []))
        for param in self.schema:
            self.fields[f"p_{param.name}"] = _value_field(param)
            self.fields[f"fix_{param.name}"] = forms.BooleanField(required=False, label="fixed")
            if param.name in preset:
                value = preset[param.name]
                self.initial[f"p_{param.name}"] = str(value).lower() if isinstance(value, bool) else value
            self.initial[f"fix_{param.name}"] = param.name in fixed

    def _chosen_template(self, templates) -> JobTemplate | None:
        if self.is_bound:
            slug = self.data.get("template") or ""
            return templates.filter(slug=slug).first() if slug else None
        return self.initial.get("template")

    def _schema(self) -> tuple[list[Param], str]:
        if self.chosen is None:
            return [], ""
        try:
            return self.chosen.schema(), ""
        except SchemaError as exc:
            return [], f"The template's parameters do not parse ({exc}): fix the template first."

    def parameter_rows(self):
        """(parameter, its value field, its fixed box), for the page."""
        return [(p, self[f"p_{p.name}"], self[f"fix_{p.name}"]) for p in self.schema]

    def _check(self, data: dict) -> dict:
        kind = data.get("check_kind") or ""
        if not kind:
            return {}
        check: dict[str, Any] = {"kind": kind}
        if kind == CheckKind.LOG:
            check["pattern"] = data.get("pattern") or ""
        elif kind == CheckKind.FIGURE:
            check.update({name: data.get(name) for name in ("figure", "bound", "value") if data.get(name) is not None})
            check = {k: v for k, v in check.items() if v != ""}
        elif kind == CheckKind.DIFFERS and data.get("parameter"):
            check["parameter"] = data["parameter"]
        elif kind == CheckKind.ANSWER:
            options = [line.strip() for line in (data.get("choices") or "").splitlines() if line.strip()]
            if options:
                check.update(choices=options, correct=(data.get("correct") or "").strip())
        return check

    def clean(self):
        data = super().clean() or {}
        if self.schema_error:
            self.add_error("template", self.schema_error)
        preset = {p.name: data[f"p_{p.name}"] for p in self.schema if data.get(f"p_{p.name}") not in (None, "")}
        fixed = [p.name for p in self.schema if data.get(f"fix_{p.name}")]
        check = self._check(data)
        step = {
            "title": data.get("title") or "",
            "instructions": _lines(data.get("instructions") or ""),
            "preset": preset,
            "fixed": fixed,
        }
        if self.chosen is not None:
            step["template"] = self.chosen.slug
        if check:
            step["check"] = check
        spec = StepFileSerializer(data=step)
        if not spec.is_valid():
            self._spec_errors(spec.errors, step)
            return data
        valid = spec.validated_data
        typed, problems = template_problems(self.schema, preset, fixed, valid.get("check", {}), self.cluster_choices)
        for where, message in problems.items():
            field = {"fixed": None, "check.parameter": "parameter"}.get(where, f"p_{where.removeprefix('preset.')}")
            self.add_error(field if field in self.fields or field is None else None, message)
        data["step"] = {
            "title": valid["title"],
            "instructions": valid["instructions"],
            "template": self.chosen,
            "preset": typed,
            "fixed": list(valid["fixed"]),
            "check_spec": dict(valid.get("check") or {}),
        }
        return data

    CHECK_FIELDS = {"pattern", "figure", "bound", "value", "parameter", "choices", "correct"}

    def _spec_errors(self, errors: dict, step: dict) -> None:
        """Each of the spec's errors on the field it is about; the check's own ones on "Done when"."""
        for key, inner in errors.items():
            if key == "check" and isinstance(inner, dict):
                for name, messages in inner.items():
                    field = name if name in self.CHECK_FIELDS else "check_kind"
                    for message in describe(messages, step):
                        self.add_error(field, message)
                continue
            field = key if key in self.fields else None
            for message in describe(inner, step):
                self.add_error(field, message)
