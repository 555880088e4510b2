"""The TypedDicts of lendex_client.models against the service's document:
the same fields, the same required ones."""

import json
import pathlib

import pytest

from lendex_client import models

DOCUMENT = json.loads((pathlib.Path(__file__).parents[2] / "openapi.json").read_text())
SCHEMAS = DOCUMENT["components"]["schemas"]
MODELS = [
    m for m in vars(models).values()
    if isinstance(m, type) and hasattr(m, "__total__") and not m.__name__.startswith("_")
]


def test_every_model_is_checked():
    assert len(MODELS) >= 15


@pytest.mark.parametrize("model", [m for m in MODELS if m.__name__ != "Candidate"], ids=lambda m: m.__name__)
def test_a_model_has_the_documents_fields(model):
    schema = SCHEMAS[model.__name__]
    assert set(model.__annotations__) == set(schema.get("properties", {}))
    if model.__total__:
        assert set(schema.get("required", [])) >= set(schema.get("properties", {}))
    if model.__required_keys__:
        # A model with optional fields on a required base: exactly the document's.
        assert set(model.__required_keys__) == set(schema.get("required", []))
