"""The editor's parameters are rows of fields, one per parameter: checked per field with the parameter grammar,
added, moved and removed by posting the form back (no JavaScript), saved as the JSON list the API still serves."""

import pytest
from django.urls import reverse

from jobs.models import JobTemplate
from jobs.parameter_forms import PREFIX
from tests.template_forms import editor_data

pytestmark = pytest.mark.django_db

EPOCHS = {"name": "epochs", "type": "int", "label": "Epochs", "default": 1, "min": 1, "max": 5, "help": "Passes."}
LR = {"name": "lr", "type": "float", "label": "Learning rate", "default": 0.0003, "min": 0, "max": 1}
PRECISION = {
    "name": "precision",
    "type": "choice",
    "label": "Precision",
    "default": "bf16",
    "choices": ["fp32", "bf16"],
}
FP16 = {"name": "fp16", "type": "bool", "label": "Half precision", "default": True}
TAG = {"name": "tag", "type": "string", "label": "Tag", "default": "run", "max_length": 20, "pattern": "[a-z]+"}
ALL = [EPOCHS, LR, PRECISION, FP16, TAG]
BODY = (
    "python3 train.py --epochs {{ epochs }} --lr {{ lr }} --precision {{ precision }} {{ fp16|flag:--fp16 }} {{ tag }}"
)


def _new(course):
    return reverse("jobs:template_new", args=[course.slug])


def _edit(course, slug="my-train"):
    return reverse("jobs:template_edit", args=[course.slug, slug])


def _row(data, index, **values):
    data.update({f"{PREFIX}-{index}-{key}": value for key, value in values.items()})
    return data


def test_the_editor_shows_one_row_of_fields_per_parameter_and_no_json(login, instructor, course, sleep_template):
    page = login(instructor).get(_edit(course, sleep_template.slug)).content.decode()
    assert 'name="parameters"' not in page and '"type": "int"' not in page
    assert f'name="{PREFIX}-3-name" value="seconds"' in page and f'name="{PREFIX}-3-max" value="600"' in page
    assert f'name="{PREFIX}-TOTAL_FORMS" value="7"' in page  # six parameters and the blank row that adds one
    assert 'id="add-parameter"' in page and "Move up" in page and "Remove" in page


def test_rows_are_saved_as_the_typed_schema(login, instructor, course):
    response = login(instructor).post(_new(course), editor_data(course, params=ALL, body=BODY))
    assert response.status_code == 302, response.content.decode()[-3000:]
    saved = JobTemplate.objects.get(slug="my-train").parameters
    assert saved == [
        EPOCHS,
        {**LR, "min": 0, "max": 1},
        PRECISION,
        FP16,
        TAG,
    ]
    assert isinstance(saved[0]["default"], int) and isinstance(saved[1]["default"], float)


def test_a_blank_row_adds_a_parameter_and_positions_order_them(login, instructor, course):
    data = editor_data(course, params=[EPOCHS], body="echo {{ epochs }} {{ steps }}")
    _row(data, 1, name="steps", type="int", default="10", min="0", ORDER="0")  # the blank row, placed first
    assert login(instructor).post(_new(course), data).status_code == 302
    saved = JobTemplate.objects.get(slug="my-train").parameters
    assert [p["name"] for p in saved] == ["steps", "epochs"] and saved[0] == {
        "name": "steps",
        "type": "int",
        "default": 10,
        "min": 0,
    }


def test_remove_drops_the_row_and_fields_of_another_type_are_ignored(login, instructor, course):
    data = editor_data(course, params=[EPOCHS, TAG], body="echo {{ tag }}")
    _row(data, 0, DELETE="on")
    _row(data, 1, min="3", choices="a\nb")  # a string has no minimum and no choices: ignored, as the page hides them
    assert login(instructor).post(_new(course), data).status_code == 302
    assert JobTemplate.objects.get(slug="my-train").parameters == [TAG]


@pytest.mark.parametrize(
    ("row", "field", "message"),
    [
        ({"default": "99"}, "default", "The default 99 is invalid: Must be at most 5."),
        ({"default": "two"}, "default", "Enter a number"),
        ({"default": ""}, "default", "needs a default"),
        ({"min": "9"}, "min", "Min is greater than max."),
        ({"max": "lots"}, "max", "Enter a number"),
        ({"name": "Epochs"}, "name", "lower-case letters"),
        ({"name": "job_id"}, "name", "reserved name"),
        ({"type": "text"}, "type", "Select a valid choice"),
        ({"name": "time_minutes", "type": "string", "default": "5"}, "type", "must have type int"),
    ],
)
def test_a_wrong_value_is_an_error_on_its_own_field_and_nothing_is_saved(
    login, instructor, course, row, field, message
):
    data = _row(editor_data(course, params=[EPOCHS], body="echo hi"), 0, **row)
    response = login(instructor).post(_new(course), data)
    assert response.status_code == 400
    rows = response.context["parameters"]
    assert message in " ".join(rows.forms[0].errors[field])
    page = response.content.decode()
    assert 'id="param-row-0"' in page and message.split(":")[0] in page
    assert "Not saved: fix what is marked below" in page and f'href="#id_{PREFIX}-0-{field}"' in page
    assert not JobTemplate.objects.exists()


def test_row_errors_of_other_types(login, instructor, course):
    data = editor_data(course, params=[PRECISION, FP16, TAG, {**EPOCHS, "name": "precision"}], body="echo hi")
    _row(data, 0, choices="fp32\nbf16", default="int8")
    _row(data, 1, default="maybe")
    _row(data, 2, pattern="[a-z")
    forms = login(instructor).post(_new(course), data).context["parameters"].forms
    assert "Choose one of: fp32, bf16" in forms[0].errors["default"][0]
    assert forms[1].errors["default"] == ["Enter true or false."]
    assert "not a valid regular expression" in forms[2].errors["pattern"][0]
    data = editor_data(course, params=[EPOCHS, {**LR, "name": "epochs"}], body="echo hi")
    forms = login(instructor).post(_new(course), data).context["parameters"].forms
    assert forms[1].errors["name"] == ["Another parameter is already named epochs."]


def test_add_a_parameter_shows_the_form_again_as_typed_and_saves_nothing(login, instructor, course, sleep_template):
    client = login(instructor)
    data = editor_data(course, params=[EPOCHS], body="echo typed {{ epochs }}", slug=sleep_template.slug)
    data["action"] = "add"
    response = client.post(_edit(course, sleep_template.slug), data)
    page = response.content.decode()
    assert response.status_code == 200 and "echo typed {{ epochs }}" in page
    assert f'name="{PREFIX}-TOTAL_FORMS" value="3"' in page  # epochs, the blank row, the added one
    assert 'class="errorlist"' not in page
    sleep_template.refresh_from_db()
    assert "echo typed" not in sleep_template.body and len(sleep_template.parameters) == 6


def test_move_up_swaps_two_rows_and_saves_nothing(login, instructor, course):
    data = editor_data(course, params=[EPOCHS, LR, TAG], body="echo hi", action="up-2")
    page = login(instructor).post(_new(course), data).content.decode()
    assert page.index('value="tag"') < page.index('value="lr"') and page.index('value="epochs"') < page.index(
        'value="tag"'
    )
    assert not JobTemplate.objects.exists()


def test_the_api_still_serves_the_schema_as_json(login, api_for, instructor, alice, course, cluster):
    data = editor_data(course, params=[EPOCHS, TAG], body="echo {{ epochs }} {{ tag }}", action="publish")
    assert login(instructor).post(_new(course), data).status_code == 302
    [template] = api_for(alice).get("/api/v1/templates/").json()["results"]
    assert template["parameters"] == [EPOCHS, TAG]


def test_preview_names_the_row_and_field_of_a_wrong_parameter(login, instructor, course):
    data = _row(editor_data(course, params=[EPOCHS], body="echo {{ epochs }}"), 0, default="9")
    page = login(instructor).post(reverse("jobs:template_preview", args=[course.slug]), data).content.decode()
    assert "Parameter epochs default: The default 9 is invalid: Must be at most 5." in page.replace("&quot;", '"')


def test_a_file_parameter_keeps_in_files_through_the_rows(login, instructor, course):
    data_param = {"name": "data", "type": "string", "label": "Training text", "default": "", "in_files": True}
    client = login(instructor)
    assert client.post(_new(course), editor_data(course, params=[data_param], body="cat {{ data }}")).status_code == 302
    assert JobTemplate.objects.get(slug="my-train").parameters == [data_param]
    page = client.get(_edit(course)).content.decode()
    assert f'id="id_{PREFIX}-0-in_files" checked' in page
