import pytest

from core.templating.params import SchemaError, parse_schema, requested_gpus, validate_values


def schema(*items):
    return parse_schema(list(items))


def test_int_bounds_and_types():
    (epochs,) = schema({"name": "epochs", "type": "int", "default": 1, "min": 1, "max": 20})
    assert epochs.clean("7") == 7
    for bad, message in [("0", "at least 1"), ("21", "at most 20"), ("1.5", "whole number"), ("x", "whole number")]:
        with pytest.raises(ValueError, match=message):
            epochs.clean(bad)
    with pytest.raises(ValueError):
        epochs.clean(True)


def test_float_rejects_nan_and_bounds():
    (lr,) = schema({"name": "lr", "type": "float", "default": 0.001, "min": 0, "max": 1})
    assert lr.clean("0.5") == 0.5
    for bad in ["nan", "inf", "2", "-1", "abc"]:
        with pytest.raises(ValueError):
            lr.clean(bad)


def test_choice_bool_string():
    precision, fp16, name = schema(
        {"name": "precision", "type": "choice", "default": "bf16", "choices": ["fp32", "bf16"]},
        {"name": "fp16", "type": "bool", "default": False},
        {"name": "run_name", "type": "string", "default": "run", "pattern": "[a-z0-9-]+", "max_length": 8},
    )
    assert precision.clean("fp32") == "fp32"
    with pytest.raises(ValueError, match="Choose one of: fp32, bf16"):
        precision.clean("fp64")
    assert fp16.clean("on") is True and fp16.clean("false") is False
    with pytest.raises(ValueError, match="not in the form this field asks for"):
        name.clean("Bad Name")
    with pytest.raises(ValueError, match="At most 8"):
        name.clean("a" * 9)


@pytest.mark.parametrize(
    ("item", "message"),
    [
        ({"name": "Bad", "type": "int", "default": 1}, "lower-case"),
        ({"name": "x", "type": "date", "default": 1}, "type must be"),
        ({"name": "x", "type": "int"}, "needs a default"),
        ({"name": "x", "type": "int", "default": 50, "max": 10}, "default 50 is invalid"),
        ({"name": "x", "type": "int", "default": 1, "min": 5, "max": 1}, "min is greater"),
        ({"name": "x", "type": "choice", "default": "a", "choices": []}, "at least one option"),
        ({"name": "x", "type": "string", "default": "a", "pattern": "("}, "not a valid regular"),
        ({"name": "x", "type": "string", "default": "a", "max_length": 9999}, "max_length"),
        ({"name": "nodes", "type": "string", "default": "1"}, "must have type int"),
        ({"name": "x", "type": "int", "default": 1, "colour": "red"}, "unknown keys"),
    ],
)
def test_malformed_schema_is_refused_with_a_message(item, message):
    with pytest.raises(SchemaError, match=message):
        parse_schema([item])


def test_duplicate_names_refused():
    with pytest.raises(SchemaError, match="twice"):
        schema({"name": "a", "type": "int", "default": 1}, {"name": "a", "type": "int", "default": 1})


def test_values_default_and_per_field_errors():
    params = schema(
        {"name": "epochs", "type": "int", "default": 1, "min": 1, "max": 3},
        {"name": "partition", "type": "choice", "default": "gpu"},
    )
    values, errors = validate_values(params, {"epochs": "9", "extra": 1}, cluster_choices={"partition": ("debug",)})
    assert errors == {"extra": "This template has no such parameter.", "epochs": "Must be at most 3."}
    values, errors = validate_values(params, {}, cluster_choices={"partition": ("debug",)})
    assert errors == {} and values == {"epochs": 1, "partition": "debug"}  # cluster lacks "gpu": its first


def test_requested_gpus():
    assert requested_gpus({"nodes": 2, "gpus_per_node": 4}) == 8
    assert requested_gpus({"gpus_per_node": 1}) == 1
    assert requested_gpus({}) == 0


@pytest.mark.parametrize("text", ["٢", "\uff12", " 2 ", "2 ", "1_0", "+ 2", "0x10", "\U0001d7da"])
def test_numbers_are_ascii_digits_without_spaces(text):
    count, rate = schema(
        {"name": "count", "type": "int", "default": 1}, {"name": "rate", "type": "float", "default": 0.5}
    )
    with pytest.raises(ValueError, match="digits 0-9"):
        count.clean(text)
    with pytest.raises(ValueError, match="digits 0-9"):
        rate.clean(text.replace("2", "2.5") if "2" in text else text)


def test_plain_numbers_still_pass():
    count, rate = schema(
        {"name": "count", "type": "int", "default": 1}, {"name": "rate", "type": "float", "default": 0.5}
    )
    assert [count.clean(t) for t in ["2", "-3", "+4", "007", 5, 6.0]] == [2, -3, 4, 7, 5, 6]
    assert [rate.clean(t) for t in ["0.5", "-1.25", ".5", "3.", "3e-4", "1E2", 2]] == [
        0.5,
        -1.25,
        0.5,
        3.0,
        3e-4,
        100.0,
        2.0,
    ]


@pytest.mark.parametrize(
    ("item", "said"),
    [
        ({"name": "gpus", "type": "int", "default": 1, "min": 1, "max": 4}, "(no spaces) from 1 to 4, e.g. 1."),
        ({"name": "steps", "type": "int", "default": 300, "min": 10}, "(no spaces) of at least 10, e.g. 300."),
        ({"name": "shift", "type": "int", "default": -2, "max": 8}, "(no spaces) of at most 8, e.g. -2."),
        ({"name": "seed", "type": "int", "default": 42}, "(no spaces), e.g. 42."),
        ({"name": "lr", "type": "float", "default": 0.001, "min": 0, "max": 1}, "(no spaces) from 0 to 1, e.g. 0.001."),
    ],
)
def test_a_number_typed_wrong_is_told_an_example_its_own_field_accepts(item, said):
    """Not "e.g. 2 or -3" for a field of 1 to 4 GPUs: the bounds, and an example inside them (its default)."""
    (param,) = schema(item)
    with pytest.raises(ValueError) as refused:
        param.clean("two")
    assert str(refused.value).endswith(said), str(refused.value)
    example = str(refused.value).rsplit("e.g. ", 1)[1].rstrip(".")
    assert param.clean(example) is not None


def test_sweep_true_offers_every_value_the_parameter_accepts():
    (lr,) = schema({"name": "lr", "type": "float", "default": 0.001, "min": 0, "max": 1, "sweep": True})
    assert lr.sweep and lr.sweep_values == ()
    assert lr.clean_sweep_value("0.5") == 0.5
    with pytest.raises(ValueError, match="at most 1"):
        lr.clean_sweep_value("2")
    assert lr.as_dict()["sweep"] is True


def test_sweep_list_narrows_the_values_and_each_is_checked():
    (batch,) = schema({"name": "batch", "type": "int", "default": 32, "min": 1, "max": 512, "sweep": [16, 32, "64"]})
    assert batch.sweep_values == (16, 32, 64)
    assert batch.clean_sweep_value("64") == 64
    with pytest.raises(ValueError, match="Sweep only over: 16, 32, 64"):
        batch.clean_sweep_value("128")
    assert batch.as_dict()["sweep"] == [16, 32, 64]


def test_unmarked_parameter_cannot_be_swept():
    (epochs,) = schema({"name": "epochs", "type": "int", "default": 1})
    assert not epochs.sweep
    with pytest.raises(ValueError, match="cannot be swept"):
        epochs.clean_sweep_value(2)
    assert "sweep" not in epochs.as_dict()


@pytest.mark.parametrize(
    "item, message",
    [
        ({"name": "tag", "type": "string", "default": "a", "sweep": True}, "string parameter cannot be swept"),
        ({"name": "n", "type": "int", "default": 1, "max": 4, "sweep": [1, 5]}, "sweep value 5 is invalid"),
        ({"name": "n", "type": "int", "default": 1, "sweep": [1, 1]}, "listed twice"),
        ({"name": "n", "type": "int", "default": 1, "sweep": [1]}, "list of 2 to 20 values"),
        ({"name": "n", "type": "int", "default": 1, "sweep": "yes"}, "sweep must be true, false or a list"),
        ({"name": "n", "type": "int", "default": 1, "sweep": [[1], [2]]}, "single value"),
        ({"name": "p", "type": "choice", "default": "a", "choices": ["a", "b"], "sweep": ["a", "c"]}, "Choose one of"),
    ],
)
def test_malformed_sweep_marker_is_refused_with_a_message(item, message):
    with pytest.raises(SchemaError, match=message) as caught:
        schema(item)
    assert caught.value.field == "sweep"
