"""The committed *_pb2 modules match the .proto files (regenerate: python hopsim/schemas/generate.py)."""

from hopsim.schemas.generate import stale_modules


def test_generated_modules_are_not_stale():
    assert stale_modules() == []
